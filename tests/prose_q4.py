"""Numbers printed in q4_single_token's prose: given as they are, or computed here."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np

from autograder.bank import q4 as bank

A = "q4_single_token"

#: Section numbers of the notebook (4.1–4.3 are sub-sections of "对照").
GIVEN: set[str] = {"4.1", "4.2", "4.3"}


@cache
def _solution():
    from helpers import solution_namespace

    return solution_namespace(A)


def _two_token_weight(delta: float) -> float:
    return float(np.ravel(_solution().two_token_weight(np.array([delta])))[0])


FIGURES: dict[str, Callable[[], str]] = {
    # the hand example is compared with the lecture's precision (bank.LECTURE_ATOL)
    "0.002": lambda: f"{bank.LECTURE_ATOL:g}",
    # two tokens: w1 = σ(Δs) at Δs = 0 and Δs = 5
    "0.5": lambda: f"{_two_token_weight(0.0):.1f}",
    "0.993": lambda: f"{_two_token_weight(5.0):.3f}",
}
