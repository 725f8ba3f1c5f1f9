"""The class report's charts: histograms drawn by matplotlib (Agg, no pyplot and no global
backend), returned as PNG bytes for the page to embed. Axis text is ASCII, so no font
with Chinese glyphs is needed; the page's headings say the rest in Chinese."""

from __future__ import annotations

import io

__all__ = ["histogram_png", "BAR"]

#: The bars' colour (the browser test looks for it in a screenshot).
BAR = "#3b6fd4"
#: Integer-wide bins up to this many points, else :data:`BINS` equal bins.
INTEGER_BINS, BINS = 40, 20


def _edges(top: float):
    import numpy as np

    if top <= INTEGER_BINS:
        return np.arange(0.0, np.ceil(top) + 2.0) - 0.5  # one bar per whole point
    return np.linspace(0.0, top, BINS + 1)


def histogram_png(values: list[float], maximum: float, *, xlabel: str) -> bytes:
    """A histogram of ``values`` (clipped to ``[0, maximum]``) as PNG bytes."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    top = max(float(maximum), 1.0)
    counts, edges = np.histogram(np.clip(np.asarray(values, dtype=float), 0.0, top),
                                 bins=_edges(top))
    fig = Figure(figsize=(6.4, 2.6), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.bar(edges[:-1], counts, width=np.diff(edges), align="edge", color=BAR,
           edgecolor="white", linewidth=0.8)
    ax.set_xlim(edges[0], edges[-1])
    ax.set_xlabel(xlabel)
    ax.set_ylabel("students")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=12))
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()
