"""The bank's unit tests: every check they run sees the student's values as the sandboxed
engine delivers them, through the wire format, functions as handles (:mod:`boundary`).

Only these tests: the end-to-end tests grade through the real engine, and nothing here
reaches a forked grading worker.
"""

from __future__ import annotations

import pytest
from boundary import evaluate_across

from autograder.bank import runner


@pytest.fixture(autouse=True)
def values_cross_the_boundary(monkeypatch):
    monkeypatch.setattr(runner, "evaluate", evaluate_across)
