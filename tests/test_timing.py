"""Issue 30: cores that fit. The time model (autograder/authoring/timing.py) is refitted to
the reviewers' estimates, and every core of the release is held to it: at most 40 minutes
each, at most 3 hours for the five, and a time table that does not promise less."""

from __future__ import annotations

import nbformat
import pytest
from lecture import ASSIGNMENT_ORDER, ROOT, core_table_minutes

from autograder.authoring import timing

CORE_LIMIT, ALL_LIMIT = 40, 180


def _release(assignment: str):
    return nbformat.read(ROOT / "release" / assignment / f"{assignment}.ipynb", as_version=4)


def test_the_rate_is_the_fit_to_the_reviewers_estimates():
    assert round(timing.fitted_rate()) == timing.CHARS_PER_MINUTE
    for assignment, (chars, low, high) in timing.CALIBRATION.items():
        estimate = chars / timing.CHARS_PER_MINUTE
        assert low - 4 <= estimate <= high + 4, (assignment, round(estimate, 1), low, high)


def test_the_model_sees_a_longer_core():
    """The yardstick moves: one planted paragraph of 1000 characters adds about 11 minutes."""
    nb = _release("q5_cost_scaling")
    before = timing.core_minutes(nb)
    nb.cells.insert(3, nbformat.v4.new_markdown_cell("读" * 1000))
    assert timing.core_minutes(nb) - before == pytest.approx(1000 / timing.CHARS_PER_MINUTE)


@pytest.mark.parametrize("assignment", ASSIGNMENT_ORDER)
def test_each_core_fits_and_its_table_promises_no_less(assignment):
    nb = _release(assignment)
    estimate = timing.core_minutes(nb)
    stated = sum(core_table_minutes(nb.cells[1].source))
    assert estimate <= CORE_LIMIT, (f"{assignment}: the core's prose ({timing.prose_chars(nb)} "
                                    f"characters) is about {estimate:.0f} minutes; cut to "
                                    f"{CORE_LIMIT * timing.CHARS_PER_MINUTE}")
    assert round(estimate) <= stated <= CORE_LIMIT, (assignment, round(estimate, 1), stated)


def test_the_five_cores_fit_in_three_hours():
    total = sum(timing.core_minutes(_release(a)) for a in ASSIGNMENT_ORDER)
    assert total <= ALL_LIMIT, f"the five cores are about {total:.0f} minutes"
