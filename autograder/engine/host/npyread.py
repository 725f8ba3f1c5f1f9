"""An ``.npy`` attachment from the child, read only once its header is shown to be honest.

``np.load`` trusts the header: it allocates the array the header describes before it
reads a byte of data, so a few bytes claiming a shape of 10**12 cost the host memory, and
a zero-size string dtype makes an "array" of 10**18 elements out of nothing. Here the
header is parsed with numpy's own (literal-only) header reader, the dtype, shape, element
count and byte count are checked against :data:`~.budgets.VALUE`, and the data must be
exactly as long as the header says; only then is the array copied out of the bytes.
"""

from __future__ import annotations

import math

import numpy as np

from ..protocol.budgets import ValueBudget
from ..protocol.codec import ARRAY_KINDS, NpyVersionError, npy_header

__all__ = ["NpyError", "load"]


class NpyError(ValueError):
    """The attachment is not an ``.npy`` array the host accepts (message in Chinese)."""


def _header(blob: bytes) -> tuple[tuple, bool, np.dtype, int]:
    try:
        return npy_header(blob)
    except NpyVersionError:
        raise NpyError("附件的 .npy 版本不受支持") from None
    except Exception:  # numpy raises ValueError, SyntaxError, TypeError... for a bad header
        raise NpyError("附件不是有效的 .npy 数组") from None


def _checked(shape: tuple, dtype: np.dtype, budget: ValueBudget) -> int:
    """The element count of a header that passes every budget."""
    if dtype.kind not in ARRAY_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise NpyError(f"不接受 dtype 为 {str(dtype)[:40]} 的数组")
    if not 0 < dtype.itemsize <= budget.array_itemsize:
        raise NpyError(f"数组元素大小 {dtype.itemsize} 字节不在允许范围内")
    if not isinstance(shape, tuple) or len(shape) > budget.array_ndim or \
            not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise NpyError("数组的形状不合规")
    count = math.prod(shape)
    if count > budget.array_items or count * dtype.itemsize > budget.array_bytes:
        raise NpyError(f"数组有 {count} 个元素，超过上限 {budget.array_items}"
                       f"（或超过 {budget.array_bytes >> 20} MB）")
    return count


def load(blob: bytes, budget: ValueBudget) -> np.ndarray:
    """The array in ``blob``, or :class:`NpyError`."""
    shape, fortran, dtype, offset = _header(blob)
    count = _checked(shape, dtype, budget)
    if len(blob) - offset != count * dtype.itemsize:
        raise NpyError(f"数组数据有 {len(blob) - offset} 字节，与头部声明的形状 {shape} 不符")
    flat = np.frombuffer(blob, dtype=dtype, count=count, offset=offset)
    return flat.reshape(shape, order="F" if fortran else "C").copy()
