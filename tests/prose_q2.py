"""Numbers that q2_dk_growth's prose prints, and how each is computed.

``GIVEN``: numbers the prose uses as they are (inputs, seeds, thresholds, section
numbers). ``FIGURES``: each computed number exactly as the prose prints it -> a
function computing that text from the notebook's own solution (the same code the
student's notebook runs, with the notebook's seeds).
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Callable
from functools import cache

import numpy as np

GIVEN: set[str] = {
    "0.9",     # cos θ of reading B in the experiments and the plot
    "400",     # trials per d_k for the plot
    "2024",    # the plot's seed
    "0.01",    # "almost no gradient" threshold in the caption
    "20",      # the caption's "largest 20 % of the trials"
    "0.5",     # an example of a float in the SymPy instructions
    "8.1", "8.2", "8.3", "8.4", "10.1", "10.2",  # section numbers
}


@cache
def _ns():
    from helpers import solution_namespace

    with contextlib.redirect_stdout(io.StringIO()):
        return solution_namespace("q2_dk_growth")


def _aligned_demo_weight(dim: int) -> float:
    """Softmax weight of the Key that points the same way as q (section 1's demo)."""
    ns = _ns()
    q, k1, k2 = np.ones(dim), np.ones(dim), np.tile([1.0, -1.0], dim // 2)
    return float(ns.softmax(np.array([q @ k1, q @ k2]) / np.sqrt(dim))[0])


def _table(flag: bool, key: str, dim: int) -> float:
    ns = _ns()
    index = list(ns.plot_dims).index(dim)
    return float(ns.chain_table[flag][key][index])


def _flat_pct() -> float:
    """With scaling: the largest max/min − 1 over d_k of the three averages, in per cent."""
    table = _ns().chain_table[True]
    return max(100 * (max(table[key]) / min(table[key]) - 1) for key in ("max_weight", "entropy", "grad_norm"))


def _f2(x: float) -> str:
    return f"{x:.2f}"


def _g2(x: float) -> str:
    return f"{x:.2g}"


FIGURES: dict[str, Callable[[], str]] = {
    # section 1: the aligned demo's weight on k1 after dividing by sqrt(d_k)
    "0.804": lambda: f"{_aligned_demo_weight(2):.3f}",
    "0.9999993": lambda: f"{_aligned_demo_weight(200):.7f}",
    # growth factors from d_k = 2 to 200 (the solution's functions)
    "100": lambda: f"{_ns().aligned_growth_factor(2, 200):.0f}",
    # section 9's caption and the model answers (plot data, seed 2024, 400 trials)
    "14.1": lambda: f"{math.sqrt(200):.1f}",
    "0.35": lambda: _f2(_table(False, "max_weight", 2)),
    "0.91": lambda: _f2(_table(False, "max_weight", 200)),
    "1.80": lambda: _f2(_table(False, "entropy", 2)),
    "0.21": lambda: _f2(_table(False, "entropy", 200)),
    "2.30": lambda: _f2(math.log(10)),
    "0.32": lambda: _f2(_table(False, "grad_norm", 2)),
    "0.09": lambda: _f2(_table(False, "grad_norm", 200)),
    "0.28": lambda: _f2(_table(False, "grad_norm", 200) / _table(False, "grad_norm", 2)),
    "0.30": lambda: _f2(_table(False, "grad_median", 2)),
    "0.004": lambda: _g2(_table(False, "grad_median", 200)),
    "0.014": lambda: _g2(_table(False, "grad_median", 200) / _table(False, "grad_median", 2)),
    "56": lambda: f"{100 * _table(False, 'grad_tiny', 200):.0f}",
    "85": lambda: f"{100 * _table(False, 'grad_top20', 200):.0f}",
    "14": lambda: f"{_flat_pct():.0f}",
}
