"""The host's strict reading of a value the child sent (the format is :mod:`.wire`'s).

Every tag, type, size and count is checked against :data:`~.budgets.VALUE`; the whole value
shares one node budget (the frame's JSON item count, so an in-process crossing through
:mod:`.loopback` meets the same limit as the socket). Anything else raises
:class:`~.wire.WireError` with a Chinese reason, which the host turns into the student's
failure of the check (:class:`~.errors.BadValue`). No decoder recurses without counting
its depth, and ``RecursionError`` / ``MemoryError`` inside one are reported the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ..protocol.budgets import VALUE, VALUE_FRAME, ValueBudget
from ..protocol.codec import Opaque
from ..protocol.wire import WireError
from . import npyread

__all__ = ["decode_from_child"]


def decode_from_child(obj: Any, blobs: list[bytes], *, remote: Callable[[int, str], Any],
                      depth: int = 0, budget: ValueBudget = VALUE,
                      nodes: int = VALUE_FRAME.json_items) -> Any:
    """Strictly decode a value sent by the child; ``remote(handle, type)`` makes a proxy."""
    reader = _Reader(blobs, remote, budget, nodes)
    try:
        return reader.value(obj, depth)
    except (RecursionError, MemoryError):
        raise WireError("返回的值嵌套太深或太大") from None


class _Reader:
    """One value's decoding: its attachments, its proxies and what is left of its budget."""

    def __init__(self, blobs: list[bytes], remote: Callable[[int, str], Any],
                 budget: ValueBudget, nodes: int) -> None:
        self.blobs, self.remote, self.budget, self.left = blobs, remote, budget, nodes

    def value(self, obj: Any, depth: int) -> Any:
        if depth > self.budget.depth:
            raise WireError(f"返回的值嵌套超过 {self.budget.depth} 层")
        self.left -= 1
        if self.left < 0:
            raise WireError("返回的值包含的元素太多")
        if obj is None or isinstance(obj, (bool, int, float)):
            return obj
        if isinstance(obj, str):
            if len(obj) > self.budget.string_chars:
                raise WireError(f"字符串长度超过 {self.budget.string_chars}")
            return obj
        if isinstance(obj, list):
            return [self.value(v, depth + 1) for v in obj]
        if not isinstance(obj, dict) or not isinstance(obj.get("$"), str):
            raise WireError("值的格式不合规")
        decode = _DECODERS.get(obj["$"])
        if decode is None:
            raise WireError(f"未知的值类型 {obj['$'][:40]!r}")
        return decode(self, obj, depth)

    def blob(self, obj: dict) -> bytes:
        index = obj.get("blob")
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(self.blobs):
            raise WireError("值引用了不存在的附件")
        return self.blobs[index]

    def array(self, obj: dict) -> np.ndarray:
        try:
            return npyread.load(self.blob(obj), self.budget)
        except npyread.NpyError as err:
            raise WireError(str(err)) from None

    def items(self, obj: dict, key: str = "items") -> list:
        items = obj.get(key)
        if not isinstance(items, list):
            raise WireError("容器的格式不合规")
        return items

    def type_name(self, obj: dict, default: str) -> str:
        name = obj.get("type", default)
        return name[:self.budget.type_name_chars] if isinstance(name, str) else default


def _dec_ndarray(r: _Reader, obj: dict, depth: int) -> np.ndarray:
    return r.array(obj)


def _dec_npscalar(r: _Reader, obj: dict, depth: int) -> Any:
    arr = r.array(obj)
    if arr.ndim != 0:
        raise WireError("标量附件不是 0 维数组")
    return arr[()]


def _dec_objarray(r: _Reader, obj: dict, depth: int) -> np.ndarray:
    shape, items = r.items(obj, "shape"), r.items(obj)
    if len(shape) > r.budget.array_ndim or \
            not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        raise WireError("数组的形状不合规")
    if len(items) > r.budget.object_items or math.prod(shape) != len(items):
        raise WireError("对象数组的形状与元素个数不符，或元素太多")
    out = np.empty(len(items), dtype=object)
    out[:] = [r.value(v, depth + 1) for v in items] if items else []
    return out.reshape(shape)


def _dec_tuple(r: _Reader, obj: dict, depth: int) -> tuple:
    return tuple(r.value(v, depth + 1) for v in r.items(obj))


def _dec_dict(r: _Reader, obj: dict, depth: int) -> dict:
    out = {}
    for pair in r.items(obj):
        if not isinstance(pair, list) or len(pair) != 2:
            raise WireError("字典的条目格式不合规")
        key = r.value(pair[0], depth + 1)
        if not _hashable_data(key):
            raise WireError("字典的键不是可哈希的数据")
        out[key] = r.value(pair[1], depth + 1)
    return out


def _hashable_data(key: Any) -> bool:
    if isinstance(key, tuple):
        return all(_hashable_data(k) for k in key)
    return key is None or isinstance(key, (str, int, float, bool))


def _dec_int(r: _Reader, obj: dict, depth: int) -> int:
    text = obj.get("v")
    if not isinstance(text, str) or len(text) > r.budget.int_digits + 1 \
            or not _INT.fullmatch(text):
        raise WireError("整数的格式不合规，或超过位数上限")
    return int(text)


_INT = re.compile(r"-?[0-9]+")


def _dec_float(r: _Reader, obj: dict, depth: int) -> float:
    text = obj.get("v")
    if text not in ("nan", "inf", "-inf"):
        raise WireError("浮点数的格式不合规")
    return float(text)


def _dec_complex(r: _Reader, obj: dict, depth: int) -> complex:
    re, im = obj.get("re"), obj.get("im")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (re, im)):
        raise WireError("复数的格式不合规")
    try:
        return complex(re, im)
    except OverflowError:  # an int part too large for a float
        raise WireError("复数超出浮点范围") from None


def _dec_sympy(r: _Reader, obj: dict, depth: int) -> Any:
    from .sympy_reader import SreprError, from_srepr

    try:
        return from_srepr(obj.get("srepr"))
    except SreprError as err:
        raise WireError(f"SymPy 对象不被接受：{err}") from None


def _dec_function(r: _Reader, obj: dict, depth: int) -> Any:
    handle = obj.get("handle")
    if not isinstance(handle, int) or isinstance(handle, bool) or not 0 <= handle < 1 << 31:
        raise WireError("函数句柄的格式不合规")
    return r.remote(handle, r.type_name(obj, "function"))


def _dec_opaque(r: _Reader, obj: dict, depth: int) -> Opaque:
    return Opaque(r.type_name(obj, "object"))


_DECODERS: dict[str, Callable[[_Reader, dict, int], Any]] = {
    "ndarray": _dec_ndarray, "npscalar": _dec_npscalar, "objarray": _dec_objarray,
    "tuple": _dec_tuple, "dict": _dec_dict, "int": _dec_int, "float": _dec_float,
    "complex": _dec_complex, "sympy": _dec_sympy, "function": _dec_function,
    "opaque": _dec_opaque}
