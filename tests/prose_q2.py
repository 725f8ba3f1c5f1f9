"""Numbers that q2_dk_growth's prose prints, and how each is computed.

``GIVEN``: numbers the prose uses as they are (inputs, seeds, thresholds, section
numbers). ``FIGURES``: each computed number exactly as the prose prints it -> a
function computing that text from the notebook's own solution (the same code the
student's notebook runs, with the notebook's seeds) or from its cell metadata.
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Callable
from functools import cache

import numpy as np

GIVEN: set[str] = {
    "0.9",     # cos θ of reading B in the experiments and the plots
    "0.1",     # §5: ten equal weights are 1/10 each
    "400",     # trials per d_k in §5 and in the plots
    "2024",    # the plots' seed
    "0.01",    # "almost no gradient" threshold in 拓展 C's model answer
    "20",      # the model answer's "largest 20 % of the trials"
    "0.5",     # an example of a float in the SymPy instructions; the retrieval task's noise
    "16", "64", "256", "80", "0.3", "30", "0.05",  # 拓展 D: d_model, d_k, steps, learning rates, level
    "1.1", "1.2", "2.1", "2.2", "4.1", "4.2",  # section numbers
}


@cache
def _ns():
    from helpers import solution_namespace

    with contextlib.redirect_stdout(io.StringIO()):
        return solution_namespace("q2_dk_growth")


@cache
def _parts() -> dict[str, dict]:
    """Part id -> the autograder metadata of its first cell (core: the intro cell)."""
    import nbformat
    from lecture import ROOT

    nb = nbformat.read(ROOT / "source" / "q2_dk_growth" / "q2_dk_growth.ipynb", as_version=4)
    parts: dict[str, dict] = {}
    for cell in nb.cells:
        meta = cell.metadata.get("autograder", {})
        if "part" in meta:
            parts.setdefault(meta["part"], meta)
    return parts


def _table(flag: bool, key: str, dim: int) -> float:
    ns = _ns()
    index = list(ns.plot_dims).index(dim)
    return float(ns.chain_table[flag][key][index])


def _flat_pct() -> float:
    """With scaling: the largest max/min − 1 over d_k of the three averages, in per cent."""
    table = _ns().chain_table[True]
    return max(100 * (max(table[key]) / min(table[key]) - 1) for key in ("max_weight", "entropy", "grad_norm"))


def _sharp(dim: int, scaled: bool, which: int) -> float:
    """§5: (reading A's mean largest weight, reading B's mean weight on the aligned key)."""
    return _ns().sharpness[dim, scaled][which]


def _init(d_k: int, scaled: bool) -> np.ndarray:
    """拓展 D: the per-example ‖∂L/∂q‖ before training."""
    return _ns().init_grad[d_k, scaled]


def _best_steps(d_k: int, scaled: bool) -> int:
    """拓展 D: the fewest steps to a loss below 0.05 over the learning rates."""
    ns = _ns()
    steps = [ns.steps_to(ns.curves[d_k, scaled, lr]) for lr in ns.TRAIN_LRS]
    return min(s for s in steps if s is not None)


def _steps(d_k: int, scaled: bool, lr: float) -> str:
    """拓展 D: steps to a loss below 0.05 at one learning rate (the model answer compares
    scaled and unscaled at equal learning rates)."""
    ns = _ns()
    return str(ns.steps_to(ns.curves[d_k, scaled, lr]))


#: 拓展 D's runs whose steps the model answer quotes, or claims never reach 0.05 (None):
#: tests/test_prose.py checks each is unchanged when the data move by 1e-14, i.e. the
#: figure does not depend on the machine's rounding (the unscaled runs are chaotic).
QUOTED_RUNS = {(64, False, 0.3): 42, (256, False, 0.3): 51, (64, True, 0.3): None, (256, True, 0.3): 78,
               (64, False, 1.0): 22, (256, False, 1.0): 25, (64, True, 1.0): 30, (256, True, 1.0): 27,
               (64, False, 10.0): None, (256, False, 10.0): None, (64, False, 30.0): None,
               (256, False, 30.0): None, (64, True, 10.0): 7, (256, True, 10.0): 7,
               (64, True, 30.0): 7, (256, True, 30.0): 6}


def quoted_runs_perturbed(scale: float = 1e-14) -> dict[tuple[int, bool, float], int | None]:
    """The quoted runs' steps again, on the same data multiplied by 1 + scale·N(0, 1)."""
    ns = _ns()
    rng = np.random.default_rng(9)
    batches = [(X * (1 + scale * rng.standard_normal(X.shape)), x_q, t) for X, x_q, t in ns.batches]
    return {run: ns.steps_to(ns.train(*run, batches)) for run in QUOTED_RUNS}


def _f2(x: float) -> str:
    return f"{x:.2f}"


def _f3(x: float) -> str:
    return f"{x:.3f}"


def _g2(x: float) -> str:
    return f"{x:.2g}"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}"


FIGURES: dict[str, Callable[[], str]] = {
    # the time the core and 拓展 C state, from the cells' metadata
    "36": lambda: f"{_parts()['core']['minutes']}",
    "60": lambda: f"{_parts()['ext-chain']['minutes']}",
    # the core's model answer: growth factor of reading B, and §5's softmax table
    "100": lambda: f"{_ns().aligned_growth_factor(2, 200):.0f}",
    "0.353": lambda: _f3(_sharp(2, False, 0)),
    "0.929": lambda: _f3(_sharp(200, False, 0)),
    "0.279": lambda: _f3(_sharp(2, True, 0)),
    "0.320": lambda: _f3(_sharp(200, True, 0)),
    "0.232": lambda: _f3(_sharp(2, True, 1)),
    "0.9999": lambda: f"{_sharp(200, True, 1):.4f}",
    # 拓展 C's model answer (plot data, seed 2024, 400 trials)
    "14.1": lambda: f"{math.sqrt(200):.1f}",
    "0.36": lambda: _f2(_table(False, "max_weight", 2)),
    "0.93": lambda: _f2(_table(False, "max_weight", 200)),
    "1.78": lambda: _f2(_table(False, "entropy", 2)),
    "0.19": lambda: _f2(_table(False, "entropy", 200)),
    "2.30": lambda: _f2(math.log(10)),
    "0.31": lambda: _f2(_table(False, "grad_norm", 2)),
    "0.08": lambda: _f2(_table(False, "grad_norm", 200)),
    "0.25": lambda: _f2(_table(False, "grad_norm", 200) / _table(False, "grad_norm", 2)),
    "0.29": lambda: _f2(_table(False, "grad_median", 2)),
    "0.0033": lambda: _g2(_table(False, "grad_median", 200)),
    "0.012": lambda: _g2(_table(False, "grad_median", 200) / _table(False, "grad_median", 2)),
    "57": lambda: _pct(_table(False, "grad_tiny", 200)),
    "85": lambda: _pct(_table(False, "grad_top20", 200)),
    "12": lambda: f"{_flat_pct():.0f}",
    # 拓展 D's model answer: gradients before training, then training
    "0.537": lambda: _f3(_init(64, False).mean()),
    "0.185": lambda: _f3(_init(64, True).mean()),
    "0.550": lambda: _f3(_init(256, False).mean()),
    "0.191": lambda: _f3(_init(256, True).mean()),
    "0.0041": lambda: f"{np.median(_init(256, False)):.4f}",
    "0.165": lambda: _f3(np.median(_init(256, True))),
    "47": lambda: _pct(_ns().top_share(_init(64, False))),
    "68": lambda: _pct(_ns().top_share(_init(256, False))),
    "23": lambda: "/".join(sorted({_pct(_ns().top_share(_init(d, True))) for d in (64, 256)})),
    "22": lambda: f"{_best_steps(64, False)}",
    "25": lambda: f"{_best_steps(256, False)}",
    "7": lambda: f"{_best_steps(64, True)}",
    "6": lambda: f"{_best_steps(256, True)}",
    "42": lambda: _steps(64, False, 0.3),
    "51": lambda: _steps(256, False, 0.3),
    "78": lambda: _steps(256, True, 0.3),
    "27": lambda: _steps(256, True, 1.0),
}
