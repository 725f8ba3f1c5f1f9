"""Hand steps carried forward: a step passes on the exact value or on the lecture's rule
applied to the student's own previous answer, and a failure says what is wrong with what
came back (never the right value: the exercises edition shows it the moment a student
checks a guess)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from . import reference as ref
from .compare import CheckFailed, as_array, fail, fmt

__all__ = ["TOL", "Diagnosis", "Chain", "chain", "earlier", "vector", "require_weights", "close",
           "cause", "judge"]

#: The hand steps' tolerance: the lecture prints its numbers to this many places.
TOL = ref.LECTURE_ATOL

#: (the likely cause in words, the value that mistake gives or None)
Diagnosis = tuple[str, "np.ndarray | None"]


class Chain(NamedTuple):
    """The lecture's six hand steps for one query's row."""

    scores: np.ndarray
    scaled: np.ndarray
    exps: np.ndarray
    total: np.ndarray
    weights: np.ndarray
    output: np.ndarray


def chain(scores: np.ndarray, d_k: int, values: np.ndarray) -> Chain:
    """The six steps from one query's ``scores``: scale by √d_k, exp, their sum, the
    weights, and the weighted sum of the ``values`` rows."""
    scaled = scores / np.sqrt(d_k)
    exps = np.exp(scaled)
    total = np.array(exps.sum())
    weights = exps / total
    return Chain(scores, scaled, exps, total, weights, weights @ values)


def earlier(value: object, shape: tuple[int, ...]) -> np.ndarray | None:
    """A previous step's value as a finite float array of ``shape``, or None (then only
    the exact value counts for this step)."""
    try:
        arr = as_array(value, "")
    except CheckFailed:
        return None
    return arr if arr.shape == shape and np.isfinite(arr).all() else None


def vector(got: object, what: str, length: int = 2) -> np.ndarray:
    """A hand answer as a finite float array of ``length``, or a message saying what it is not."""
    arr = as_array(got, what)
    if arr.shape != (length,):
        fail(f"{what} 应是长度 {length} 的数组，得到的形状是 {arr.shape}。")
    if not np.isfinite(arr).all():
        fail(f"{what} 含有 NaN 或无穷大。")
    return arr


def require_weights(weights: np.ndarray, what: str, why: str = "") -> None:
    """Fail unless ``weights`` are a softmax's output (non-negative, summing to 1): only
    then may a later step be carried forward from them. ``why``: the slip they show."""
    if (weights < 0).any() or abs(float(weights.sum()) - 1) > TOL:
        fail(f"{what} = {fmt(weights)} 应非负、加起来等于 1（softmax 的输出），"
             f"它的和是 {float(weights.sum()):.4g}。{why}")


def close(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=TOL, atol=TOL))


def cause(arr: np.ndarray, targets: Sequence[np.ndarray], diagnoses: Sequence[Diagnosis]) -> str:
    """The first diagnosis whose value ``arr`` matches (and no right value does)."""
    for text, wrong in diagnoses:
        if wrong is not None and close(arr, wrong) and not any(close(wrong, t) for t in targets):
            return f"\n可能的原因：{text}"
    return ""


def judge(arr: np.ndarray, what: str, *, exact: np.ndarray, carried: np.ndarray | None,
          source: str, diagnoses: Sequence[Diagnosis] = ()) -> None:
    """Pass when ``arr`` is ``carried`` (the lecture's rule applied to the student's own
    previous value, named ``source``) or the exact value; else fail saying what is wrong."""
    targets = [t for t in (carried, exact) if t is not None]
    if any(close(arr, t) for t in targets):
        return
    why = cause(arr, targets, diagnoses)
    if carried is None or close(carried, exact):
        fail(f"{what} = {fmt(arr)} 不对（容差 {TOL:g}）。{why}")
    fail(f"{what} = {fmt(arr)} 不对：它既不是由你上一步的 {source} 按讲义的做法算出来的，"
         f"也不等于精确值（容差 {TOL:g}）。{why}")
