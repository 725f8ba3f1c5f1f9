"""Every named mistake loses its cells on every seed: the sweep the contract asks for.

A cell is lost on a seed when its visible asserts fail (that does not depend on the
seed) or when one of its hidden checks fails with that seed. A check that never touches
``ctx.rng`` gives the same verdict on every seed, so the sweep stops after its first
seed: only checks that draw inputs (or pass the generator to the student) are run 200
times, which keeps the sweep inside the test budget.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from helpers import hidden_calls, solution_namespace, visible_failures

from autograder import bank
from autograder.bank import runner
from autograder.samples.variants import Variant

SEEDS = range(200)


class _WatchedContext(bank.Context):
    """A check context that records whether the check used its random generator."""

    made: list[_WatchedContext] = []

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        _WatchedContext.made.append(self)

    @property
    def rng(self):
        self.drew = True
        return self._rng

    @rng.setter
    def rng(self, value) -> None:
        self._rng, self.drew = value, False


def surviving_seeds(assignment: str, variant: Variant, cells: Iterable[str] | None = None,
                    seeds: Iterable[int] = SEEDS) -> dict[str, list[int]]:
    """Grade cell -> the seeds on which ``variant`` does *not* lose it (empty: lost on
    every seed). ``cells`` defaults to the variant's ``loses``."""
    seeds = list(seeds)
    visible = visible_failures(assignment, variant)
    calls = hidden_calls(assignment)
    ns = solution_namespace(assignment, variant)
    survived: dict[str, list[int]] = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "Context", _WatchedContext)
        for cell in cells if cells is not None else variant.loses:
            survived[cell] = [] if cell in visible else \
                _surviving(calls[cell], ns, assignment, seeds)
    return survived


def _surviving(call: tuple[str, list[str]], ns, assignment: str, seeds: list[int]) -> list[int]:
    name, keywords = call
    values = {k: getattr(ns, k) for k in keywords}
    left = []
    for seed in seeds:
        _WatchedContext.made.clear()
        outcome = runner.evaluate(name, values, seed=seed)
        assert outcome.status != "error", f"{assignment} {name} broke:\n{outcome.detail}"
        if outcome.passed:
            left.append(seed)
        if not any(c.drew for c in _WatchedContext.made):
            return list(seeds) if left else []  # the verdict cannot depend on the seed
    return left
