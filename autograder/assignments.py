"""The five assignments, in the lecture's order, and where their checks live.

Kept free of imports: the student's ``autograder check`` client reads it on every run.
"""

from __future__ import annotations

__all__ = ["ASSIGNMENTS", "ASSIGNMENT_MODULES"]

#: Assignment id -> its check module (relative to ``autograder.bank``).
ASSIGNMENT_MODULES: dict[str, str] = {
    "q1_value_scaling": ".q1",
    "q2_dk_growth": ".q2",
    "q3_permutation": ".q3",
    "q4_single_token": ".q4",
    "q5_cost_scaling": ".q5",
}

#: The five assignments, in the lecture's order.
ASSIGNMENTS: tuple[str, ...] = tuple(ASSIGNMENT_MODULES)
