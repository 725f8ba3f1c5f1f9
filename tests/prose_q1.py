"""Numbers in q1_value_scaling's prose: given as they are, or computed from the solution."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from helpers import solution_namespace

A = "q1_value_scaling"


def _solution():
    if not hasattr(_solution, "ns"):
        _solution.ns = solution_namespace(A)
    return _solution.ns


def _r3(value: float) -> str:
    return f"{value:.3f}"


#: Inputs and indices the prose states: the hidden c of the value-scaling check is drawn
#: from [0.5, 4] (autograder/bank/q1.py, value_scaling); 11 is the index of $w_{11}$.
GIVEN: set[str] = {"0.5", "11"}

FIGURES: dict[str, Callable[[], str]] = {
    # output_3I / output_2I
    "1.5": lambda: f"{_solution().output_scale_factor:g}",
    # position 1's output with W_v = 3I, from the exact weights
    "2.009": lambda: _r3(_solution().output_3I[0, 0]),
    "0.991": lambda: _r3(_solution().output_3I[0, 1]),
    # the same from the lecture's rounded weights 0.670 / 0.330 times 3
    "2.010": lambda: _r3(3 * 0.670),
    "0.990": lambda: _r3(3 * 0.330),
    # position 1's weight on itself with W_q = 3I
    "0.893": lambda: _r3(_solution().weights_3Wq[0, 0]),
    # 1/sqrt(2) as a float (the prose warns against writing it)
    "0.7071": lambda: f"{1 / np.sqrt(2):.4f}",
    # the limit c -> 0 of position 1's weights: uniform over the two positions
    "0.5": lambda: f"{_solution().position1_max_weight(0.0):g}",
}
