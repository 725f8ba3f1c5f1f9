"""What q4's checks share: tolerances and a diagnoser where several wrong results may
share one misconception (``mc.diagnoser`` takes one result per misconception)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .lib import misconceptions as mc

#: Tolerances: the outputs are plain matrix products, but float32 arithmetic is allowed.
RTOL, ATOL = 1e-5, 1e-5

Diagnose = Callable[[np.ndarray], "str | None"]


def diagnoser(pairs: Sequence[tuple[str, np.ndarray]]) -> Diagnose:
    """The description of the first misconception (by catalog key) whose wrong result
    ``arr`` matches, else None."""

    def diagnose(arr: np.ndarray) -> str | None:
        for key, wrong in pairs:
            found = mc.match(arr, {key: np.asarray(wrong, dtype=np.float64)})
            if found:
                return found
        return None

    return diagnose


def first(*diagnoses: Diagnose) -> Diagnose:
    """The first of ``diagnoses`` that names something."""

    def diagnose(arr: np.ndarray) -> str | None:
        for d in diagnoses:
            found = d(arr)
            if found:
                return found
        return None

    return diagnose
