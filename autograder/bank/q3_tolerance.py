"""q3's tolerance probes: rows that differ by a small, position-dependent amount.

Drawn like every probe of :mod:`.q3_probes` (random source, answer measured in the host),
they grade how the student's checker uses its tolerance: ``np.allclose``'s default
``rtol`` kept, ``atol`` ignored or used as a relative tolerance, exact equality.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .q3_probes import DRAWS, Probe, _assemble, _Source, gaps, random_perm

__all__ = ["TOLERANCE_CASES", "draw_tolerance"]


def _large(magnitude: float, size: float, pooled: bool) -> Callable[[_Source, str, int], str]:
    """Finish: values in [M, 4M] plus a position-dependent bump of about ``size``;
    ``pooled``: every row first replaced by the rows' mean (then f(X[perm]) = f(X))."""
    def finish(s: _Source, cur: str, w: int) -> str:
        if pooled:
            a = s.const(0)
            cur = s.assign(f"np.broadcast_to({cur}.mean(axis={a}), {cur}.shape)")
        M, c0 = s.const(magnitude), s.const(float(s.rng.uniform(2.0, 3.0)))
        rows = int(s.rng.integers(8, 12))
        bump = s.const(size * s.rng.uniform(0.0, 1.0, (rows, w)))
        return f"{M} * ({c0} + np.tanh({cur})) + {bump}[:len({cur})]"
    return finish


#: The four tolerance cases: name -> (magnitude range (log10), bump size relative to
#: rtol·M or absolute, the atol passed as a multiple of the measured gap, or None).
TOLERANCE_CASES = ("rtol_trap", "atol_large", "atol_between", "below_atol")


def draw_tolerance(rng: np.random.Generator, X: np.ndarray, case: str) -> Probe:
    """A probe whose rows differ by a small, position-dependent amount ``D``.

    - ``rtol_trap``: values ≥ 1000 and ``D`` ≤ 0.3·1e-5·min|f|, default atol: False, though
      ``np.allclose``'s default ``rtol=1e-5`` would call it equal;
    - ``atol_large``: atol several times ``D``: True (a checker that ignores atol says False);
    - ``atol_between``: atol a fraction of ``D``, values ≥ 1000: False (atol used as rtol
      says True);
    - ``below_atol``: ``D`` about 1e-11..1e-10, default atol: True (exact equality says False).

    The swap is a single transposition, so the inverse permutation is the same one: these
    cases grade the tolerance alone. In ``rtol_trap`` every row is first pooled, so that a
    checker comparing with f(X) answers differently from every other misreading."""
    n = X.shape[0]
    for _ in range(DRAWS):
        perm = random_perm(rng, n, involution=True)
        if case == "below_atol":
            magnitude, size = float(rng.uniform(0.5, 2.0)), float(10 ** rng.uniform(-11, -10))
        else:
            magnitude = float(10 ** rng.uniform(3.0, 4.5))
            size = 1e-5 * magnitude * float(rng.uniform(0.05, 0.3))
        fn = _assemble(rng, X.shape[1], n, False, _large(magnitude, size, case == "rtol_trap"))
        g = gaps(fn, X, perm)
        if not np.isfinite(g.equivariant) or g.equivariant < 0.2 * size:
            continue
        if case == "below_atol":
            return Probe(fn, X, perm, True, g, None, case)
        if g.equivariant > 0.3e-5 * g.smallest:
            continue
        if case == "rtol_trap":
            return Probe(fn, X, perm, False, g, None, case)
        if case == "atol_large":
            return Probe(fn, X, perm, True, g, g.equivariant * float(rng.uniform(3, 30)), case)
        return Probe(fn, X, perm, False, g, g.equivariant * float(rng.uniform(0.1, 0.5)), case)
    raise RuntimeError(f"no clear {case} probe in {DRAWS} draws")
