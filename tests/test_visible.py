"""What a student sees before submitting: the visible asserts of the release notebook.

Each named mistake must fail at least one visible assert (a student learns of it before
the grade does); the solution and every correct alternative must pass them all.
"""

from __future__ import annotations

import pytest
from helpers import visible_failures
from lecture import ASSIGNMENT_ORDER

from autograder.samples import alternatives, mistakes

PRESENT = ASSIGNMENT_ORDER  # every assignment: a missing notebook fails, never skips


def _params(kind):
    return [pytest.param(a, v, id=f"{a}-{v.name}") for a in PRESENT for v in kind(a)]


@pytest.mark.parametrize("assignment", PRESENT)
def test_solution_passes_every_visible_assert(assignment):
    assert visible_failures(assignment) == {}


@pytest.mark.parametrize("assignment, variant", _params(alternatives))
def test_alternative_passes_every_visible_assert(assignment, variant):
    assert visible_failures(assignment, variant) == {}


@pytest.mark.parametrize("assignment, variant", _params(mistakes))
def test_mistake_fails_a_visible_assert(assignment, variant):
    if not variant.visible:
        pytest.skip("no visible assert may see it without stating a graded answer (issue 30)")
    failed = visible_failures(assignment, variant)
    assert failed, f"{variant.name}: every visible assert passes, the student learns only from the grade"


@pytest.mark.parametrize("assignment, variant", _params(mistakes))
def test_a_visible_failure_costs_only_the_mistakes_own_cells(assignment, variant):
    """A failing visible assert scores its cell 0 before the hidden check runs, so it may
    fail only in cells the mistake loses anyway."""
    extra = set(visible_failures(assignment, variant)) - set(variant.loses)
    assert not extra, f"{variant.name} fails visible asserts in cells it should keep: {extra}"

