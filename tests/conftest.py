"""Every check in these tests sees the student's values as the sandboxed engine delivers
them: through the wire format, functions as handles (:mod:`autograder.engine.loopback`)."""

from __future__ import annotations

import pytest

from autograder import bank
from autograder.engine.loopback import crossing


@pytest.fixture(autouse=True)
def values_cross_the_boundary(monkeypatch):
    evaluate = bank.evaluate

    def across(name, values, **kwargs):
        return evaluate(name, {k: crossing(v) for k, v in values.items()}, **kwargs)

    monkeypatch.setattr(bank, "evaluate", across)
