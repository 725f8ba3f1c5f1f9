"""matplotlib's parsed mathtext, shared by every figure a process draws.

matplotlib caches a parsed math string (a log axis's ``$\\mathdefault{10^{2}}$``, a
label's ``$\\sqrt{d_k}$``) per renderer, and every figure gets a renderer of its own: a
child parses each math string afresh in every figure, and nothing the zygote parsed
reaches it. Parsing is about 4 ms a string, 0.08 s of q2's figures.

Here the cache is one per process, keyed as matplotlib keys it (the string, dpi, font,
antialiasing, hinting) plus the output type and the rcParams that parsing reads, so a
student who changes ``mathtext.*`` or ``font.*`` settings gets a fresh parse. The zygote
parses the powers of ten that log axes label their ticks with, which every child then
finds parsed. Nothing of the course is in it.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["install", "warm_log_ticks"]

_PREFIXES = ("mathtext.", "font.", "text.hinting")


def _rc_key(rc: Any, keys: tuple[str, ...]) -> tuple:
    values = (dict.__getitem__(rc, k) for k in keys)
    return tuple(tuple(v) if isinstance(v, list) else v for v in values)


def install() -> None:
    """Make ``MathTextParser``'s cache one per process (idempotent)."""
    import matplotlib as mpl
    from matplotlib.mathtext import MathTextParser

    current = MathTextParser._parse_cached
    parse = getattr(current, "__wrapped__", None)  # matplotlib's own, uncached
    if getattr(current, "_shared", False) or parse is None:
        return
    keys = tuple(sorted(k for k in mpl.rcParams if k.startswith(_PREFIXES)))
    parsers = {"vector": MathTextParser("path"), "raster": MathTextParser("agg")}

    # the arguments after ``prop`` vary with matplotlib's version (3.6: none; 3.7:
    # antialiased; 3.10: and the glyph flags): they are passed and keyed as they come
    @functools.lru_cache(maxsize=1024)
    def shared(output: str, s: str, dpi: float, prop: Any, rest: tuple, rc: tuple) -> Any:
        return parse(parsers[output], s, dpi, prop, *rest)

    def cached(self: Any, s: str, dpi: float, prop: Any, *rest: Any) -> Any:
        try:
            rc = _rc_key(mpl.rcParams, keys)
            hash((rc, rest))
        except (KeyError, TypeError):  # a setting made unhashable: matplotlib's own way
            return parse(self, s, dpi, prop, *rest)
        return shared(self._output_type, s, dpi, prop, rest, rc)

    cached._shared = True  # type: ignore[attr-defined]
    MathTextParser._parse_cached = cached


def warm_log_ticks(fig: Any, ax: Any) -> None:
    """Parse the tick labels of log axes (10^-8 … 10^8) with ``ax``'s tick font at
    ``fig``'s dpi, as a child's figures ask for them: for measuring and for drawing
    (matplotlib asks its "path" and its "agg" parser)."""
    from matplotlib.mathtext import MathTextParser

    prop = ax.yaxis.get_major_ticks()[0].label1.get_fontproperties()
    for parser in (MathTextParser("path"), MathTextParser("agg")):
        for k in range(-8, 9):
            parser.parse(r"$\mathdefault{10^{" + str(k) + "}}$", dpi=fig.dpi, prop=prop)
