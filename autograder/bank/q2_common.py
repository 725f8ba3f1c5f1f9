"""What the q2_dk_growth check modules share: the tolerance in standard errors and the
generator handed to a student's sampling function."""

from __future__ import annotations

import numpy as np

from . import Context

#: Standard errors a statistical estimate may be off before it fails.
Z = 6.0


def generator(ctx: Context) -> np.random.Generator:
    """A fresh generator for the student's function, seeded from the check's rng."""
    return np.random.default_rng(int(ctx.rng.integers(2**62)))


def near(value: float, target: float, rel: float = 0.15) -> bool:
    """Whether ``value`` is finite and within ``rel`` (relative) of ``target``."""
    return bool(np.isfinite(value) and abs(value - target) <= rel * abs(target))
