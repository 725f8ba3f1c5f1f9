"""matplotlib's parsed mathtext shared by every figure of a process
(:mod:`autograder.engine.child.mathcache`): each math string is parsed once, a change of
the mathtext settings parses afresh, and the pixels are matplotlib's own."""

from __future__ import annotations

import io

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import _mathtext  # noqa: E402
from matplotlib.mathtext import MathTextParser  # noqa: E402

from autograder.engine.child import mathcache  # noqa: E402

LABEL = r"$\sqrt{d_k}\,\mathrm{std}(q\cdot k)$"


def _png() -> bytes:
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.semilogy([1, 2, 3], [1, 10, 100])
    ax.set_title(LABEL)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


@pytest.fixture
def parses(monkeypatch):
    """Counts matplotlib's real parses; the class's own cache is restored afterwards."""
    monkeypatch.setattr(MathTextParser, "_parse_cached", MathTextParser._parse_cached)
    count = [0]
    real = _mathtext.Parser.parse

    def counting(self, *args, **kwargs):
        count[0] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(_mathtext.Parser, "parse", counting)
    return count


def test_each_math_string_is_parsed_once_across_figures(parses) -> None:
    stock = [_png(), _png()]
    stock_parses = parses[0]
    mathcache.install()
    mathcache.install()  # a second install changes nothing
    parses[0] = 0
    shared = [_png(), _png()]
    assert shared == stock  # the same pixels, byte for byte
    assert stock_parses > 0 and parses[0] <= stock_parses // 2


def test_changed_mathtext_settings_parse_afresh(parses) -> None:
    mathcache.install()
    first = _png()
    parses[0] = 0
    with matplotlib.rc_context({"mathtext.fontset": "stix"}):
        stix = _png()
        assert parses[0] > 0  # not the DejaVu glyphs parsed for the first figure
    assert stix != first


def test_the_zygote_s_log_ticks_are_found_parsed(parses) -> None:
    mathcache.install()
    fig, ax = plt.subplots()
    ax.set_yscale("log")
    mathcache.warm_log_ticks(fig, ax)
    plt.close(fig)
    parses[0] = 0
    fig, ax = plt.subplots()
    ax.loglog([1e-3, 1e4], [1e-2, 1e5])
    fig.savefig(io.BytesIO(), format="png")
    plt.close(fig)
    assert parses[0] == 0
