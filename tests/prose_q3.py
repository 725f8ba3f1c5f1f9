"""Numbers in q3_permutation's prose: given as they are, or computed here.

The hand example's own numbers (0.670, 0.330, 1.340, 0.660, 0.707, 2.028, 3.028) come
from the lecture and are allowed by tests/test_prose.py; the hand step's new output (with
W_v_hand) is computed here; the causal-mask outputs the prose quotes after its cell are
asserted in tests/test_bank_q3.py (test_the_causal_numbers_the_notebook_prints_after_its_cell).
"""

from __future__ import annotations

from collections.abc import Callable

import nbformat
import numpy as np
from lecture import ROOT, core_solution_lines

from autograder.bank import q3, q3_hand
from autograder.bank.lib import reference as ref

GIVEN: set[str] = {
    "30",     # the core's estimated minutes (an estimate, stated in the intro's metadata too)
    "15",     # an extension's estimated minutes
    "10000",  # lecture 8's base of the sinusoidal encoding
}


def _bites_weight_on_man() -> str:
    """人咬人: the total weight 咬 gives the two 人 (reference attention on the hand vectors)."""
    weights = ref.self_attention(q3.RBR_X, np.eye(2), np.eye(2), 2 * np.eye(2))[1]
    return f"{weights[1, 0] + weights[1, 2]:.3f}"


def _hand_output(i: int) -> str:
    """The model answer's [2.340, 3.340]: the new position 1's output with W_v_hand."""
    return f"{q3_hand.EXACT_OUTPUT[i]:.3f}"


def _core_lines() -> str:
    """“约 25 行”: the code lines of the core's solution regions, rounded to 5 (25 is also
    two extensions' estimated minutes)."""
    nb = nbformat.read(ROOT / "source" / "q3_permutation" / "q3_permutation.ipynb", as_version=4)
    return str(5 * round(core_solution_lines(nb) / 5))


FIGURES: dict[str, Callable[[], str]] = {
    "0.497": _bites_weight_on_man,
    "2.340": lambda: _hand_output(0),
    "3.340": lambda: _hand_output(1),
    "25": _core_lines,
}
