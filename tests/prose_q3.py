"""Numbers in q3_permutation's prose: given as they are, or computed here.

The hand example's own numbers (0.670, 0.330, 1.340, 0.660) come from the lecture and
are allowed by tests/test_prose.py; the causal-mask outputs the prose quotes with them
are asserted in tests/test_bank_q3.py (test_causal_example_in_the_notebook_breaks_equivariance).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from autograder import reference as ref
from autograder.bank import q3

GIVEN: set[str] = {
    "0.1",    # the large atol of the checker's noisy-tanh case
    "11",     # section number
    "10000",  # lecture 8's base of the sinusoidal encoding
}


def _bites_weight_on_man() -> str:
    """人咬人: the total weight 咬 gives the two 人 (reference attention on the hand vectors)."""
    weights = ref.self_attention(q3.RBR_X, np.eye(2), np.eye(2), 2 * np.eye(2))[1]
    return f"{weights[1, 0] + weights[1, 2]:.3f}"


FIGURES: dict[str, Callable[[], str]] = {
    "0.497": _bites_weight_on_man,
}
