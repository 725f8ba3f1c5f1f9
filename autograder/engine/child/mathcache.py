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

    if getattr(MathTextParser._parse_cached, "_shared", False):
        return
    parse = MathTextParser._parse_cached.__wrapped__  # matplotlib's own, uncached
    keys = tuple(sorted(k for k in mpl.rcParams if k.startswith(_PREFIXES)))
    parsers = {"vector": MathTextParser("path"), "raster": MathTextParser("agg")}

    @functools.lru_cache(maxsize=1024)
    def shared(output: str, s: str, dpi: float, prop: Any, antialiased: bool, flags: Any,
               rc: tuple) -> Any:
        return parse(parsers[output], s, dpi, prop, antialiased, flags)

    def cached(self: Any, s: str, dpi: float, prop: Any, antialiased: bool, flags: Any) -> Any:
        try:
            rc = _rc_key(mpl.rcParams, keys)
            hash(rc)
        except (KeyError, TypeError):  # a setting made unhashable: matplotlib's own way
            return parse(self, s, dpi, prop, antialiased, flags)
        return shared(self._output_type, s, dpi, prop, antialiased, flags, rc)

    cached._shared = True  # type: ignore[attr-defined]
    MathTextParser._parse_cached = cached


def warm_log_ticks(fig: Any, ax: Any) -> None:
    """Parse the tick labels of log axes (10^-12 … 10^12) with ``ax``'s tick font at
    ``fig``'s dpi, as a child's log axes ask for them."""
    from matplotlib.mathtext import MathTextParser

    prop = ax.yaxis.get_major_ticks()[0].label1.get_fontproperties()
    parser = MathTextParser("agg")
    for k in range(-12, 13):
        parser.parse(r"$\mathdefault{10^{" + str(k) + "}}$", dpi=fig.dpi, prop=prop)
