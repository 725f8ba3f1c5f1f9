"""Numbers printed in q4_single_token's prose: given as they are, or computed here."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np
from release_contract import core, solution_lines

from autograder.authoring import cells as nbs

A = "q4_single_token"

#: Nothing beyond the lecture's own numbers and small integers is given as it is.
GIVEN: set[str] = set()


@cache
def _solution():
    from helpers import solution_namespace

    return solution_namespace(A)


@cache
def _cells():
    from helpers import ROOT

    return nbs.read(ROOT / "source" / A / f"{A}.ipynb").cells


def _two_token_weight(delta: float) -> float:
    return float(np.ravel(_solution().two_token_weight(np.array([delta])))[0])


def _minutes(part: str) -> str:
    """The minutes a part's metadata states (the intro cell for the core, the heading of
    an extension), which the prose repeats."""
    for cell in _cells():
        meta = cell.metadata.get("autograder", {})
        if meta.get("part") == part and "minutes" in meta:
            return str(meta["minutes"])
    raise AssertionError(f"no minutes for {part}")


def core_solution_lines() -> list[str]:
    """The lines a student writes in the core (:func:`release_contract.solution_lines`)."""
    return solution_lines(core(_cells()))


FIGURES: dict[str, Callable[[], str]] = {
    # the core's time and the longest extension's, as their metadata states them
    "29": lambda: _minutes("core"),
    "25": lambda: _minutes("ext-kv-cache"),
    # "要写的代码约 20 行": the core's solution lines, to the nearest 5
    "20": lambda: str(5 * round(len(core_solution_lines()) / 5)),
    # two tokens: w1 = σ(Δs) at Δs = 0 and Δs = 5
    "0.5": lambda: f"{_two_token_weight(0.0):.1f}",
    "0.993": lambda: f"{_two_token_weight(5.0):.3f}",
}
