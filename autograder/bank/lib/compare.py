"""Assertions that explain themselves in Chinese, in the spirit of ``numpy.testing``.

Every comparison checks kind, then shape, then finiteness, then values, and each
failure says what was expected, what came back, by how much it differs and with
which tolerance. Messages never print the hidden inputs, only summaries of results.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable

import numpy as np

from ...engine.protocol.codec import Opaque

__all__ = [
    "CheckFailed",
    "fail",
    "as_array",
    "as_number",
    "as_bool",
    "assert_close",
    "assert_number_close",
    "fmt",
    "kind_name",
]

_SHORT = reprlib.Repr()
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 60, 60, 60


class CheckFailed(AssertionError):
    """A check that did not pass; ``str(err)`` is the Chinese explanation.

    IPython renders ``_render_traceback_`` instead of the usual traceback, so the
    feedback shows the explanation only, never the grader's code or inputs.
    """

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;31m未通过\x1b[0m: {line}" if i == 0 else line
                for i, line in enumerate(str(self).splitlines())]


def fail(message: str) -> None:
    """Raise :class:`CheckFailed` with ``message``."""
    raise CheckFailed(message)


def fmt(value: object, digits: int = 4) -> str:
    """Short human form of a number or array (at most a few entries); never raises."""
    if isinstance(value, (bool, np.bool_)):
        return "True" if value else "False"
    try:
        arr = np.asarray(value)
        if arr.dtype.kind in "fciu":
            with np.printoptions(precision=digits, suppress=True, threshold=8, edgeitems=2):
                return np.array2string(arr, separator=", ") if arr.ndim \
                    else f"{arr.item():.{digits}g}"
    except (TypeError, ValueError, OverflowError):  # ragged lists, odd objects
        pass
    try:
        text = _SHORT.repr(value)
    except Exception:  # an int past Python's 4300 printable digits, a broken __repr__
        text = f"<{kind_name(value)}>"
    return text if len(text) <= 80 else text[:77] + "..."


def kind_name(value: object) -> str:
    """The type of a student's value for a message (an opaque object: the type it had)."""
    if isinstance(value, Opaque):
        return f"无法读取的 {value.type_name} 对象"
    return type(value).__name__



def _float_array(value: object, what: str, wanted: str) -> np.ndarray:
    """``value`` as a float64 array, or the student's failure saying why it is not one.

    Complex values with a non-zero imaginary part, strings, integers beyond the float
    range and objects that do not convert are refused (numpy would drop an imaginary part
    or parse a string silently)."""
    try:
        raw = np.asarray(value)
        if raw.dtype.kind == "c":
            if np.any(raw.imag != 0):
                fail(f"{what} 应是{wanted}（实数），得到的是复数。")
            raw = raw.real
        if raw.dtype.kind in "USVMm":
            fail(f"{what} 应是{wanted}，得到的是 {raw.dtype.kind in 'US' and '字符串' or '非数值'}数组。")
        return raw.astype(np.float64)
    except OverflowError:
        fail(f"{what} 应是{wanted}，得到的数超出了浮点数的范围（约 1.8e308）。")
    except (TypeError, ValueError, ArithmeticError, AttributeError):
        fail(f"{what} 应是{wanted}，得到的 {kind_name(value)} 无法转换为浮点数。")
    raise AssertionError("unreachable")


def as_array(value: object, what: str) -> np.ndarray:
    """``value`` as a float array, or a message saying an array was expected."""
    if value is None:
        fail(f"{what} 返回了 None：应返回一个数组。是不是忘了 return？")
    if isinstance(value, (str, bytes, dict, set)):
        fail(f"{what} 应是数值数组，得到的是 {kind_name(value)}。")
    return _float_array(value, what, "数值数组")


def as_number(value: object, what: str, *, finite: bool = True) -> float:
    """``value`` as a plain float, or a message saying a single number was expected.

    NaN and ±inf are refused unless ``finite=False`` (they compare as neither larger
    nor smaller than anything, so a check's ``if got > limit`` would let them pass)."""
    if value is None:
        fail(f"{what} 是 None：应是一个数。是不是忘了 return 或赋值？")
    if isinstance(value, (str, bytes)):
        fail(f"{what} 应是一个数，得到的是字符串 {fmt(value)}。")
    if isinstance(value, (dict, set)):
        fail(f"{what} 应是一个数，得到的是 {kind_name(value)}。")
    arr = _float_array(value, what, "一个数")
    if arr.size != 1:
        fail(f"{what} 应是一个数，得到的是形状为 {arr.shape} 的数组。")
    number = float(arr.reshape(()))
    if finite and not np.isfinite(number):
        fail(f"{what} 应是一个有限的数，得到的是 {number}。")
    return number


def as_bool(value: object, what: str) -> bool:
    """``value`` as a plain bool; numbers, strings and SymPy's ``true`` are refused."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    fail(f"{what} 应是布尔值 True 或 False，得到的是 {kind_name(value)}：{fmt(value)}。")
    return False  # unreachable, keeps type checkers calm


def assert_close(
    actual: object,
    expected: np.ndarray,
    what: str,
    *,
    rtol: float = 1e-6,
    atol: float = 1e-8,
    diagnose: Callable[[np.ndarray], str | None] | None = None,
) -> np.ndarray:
    """Compare an array with the reference: kind, shape, finiteness, then values.

    ``diagnose`` receives the student's array (of any shape) and returns the name and
    explanation of the misconception it matches, or ``None``.
    """
    arr = as_array(actual, what)
    expected = np.asarray(expected, dtype=np.float64)

    def cause() -> str:
        found = diagnose(arr) if diagnose else None
        return f"\n可能的原因：{found}" if found else ""

    if arr.shape != expected.shape:
        fail(f"{what} 的形状不对：期望 {expected.shape}，得到 {arr.shape}。{cause()}")
    if not np.isfinite(arr).all() and np.isfinite(expected).all():
        fail(f"{what} 含有 NaN 或无穷大，而正确结果全是有限数。{cause()}")
    if not np.allclose(arr, expected, rtol=rtol, atol=atol):
        diff = np.abs(arr - expected)
        diff = np.where(np.isnan(diff), np.inf, diff)  # NaN differs from everything
        where = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.ndim else ()
        fail(
            f"{what} 与正确结果不一致：最大绝对误差 {float(np.max(diff)):.3g}"
            f"（容差 rtol={rtol:g}, atol={atol:g}）。"
            f"\n在位置 {tuple(int(i) for i in where)}：期望 {float(expected[where]):.6g}，"
            f"得到 {float(arr[where]):.6g}。{cause()}"
        )
    return arr


def assert_number_close(
    actual: object, expected: float, what: str, *, rtol: float = 1e-9, atol: float = 1e-12,
    hint: Callable[[float], str | None] | None = None,
) -> float:
    """Compare one number with the expected value; ``hint`` may name a misconception."""
    value = as_number(actual, what, finite=False)
    if not np.isfinite(value) or not np.isclose(value, expected, rtol=rtol, atol=atol):
        found = hint(value) if hint else None
        extra = f"\n可能的原因：{found}" if found else ""
        fail(f"{what} 不对：期望 {expected:.6g}，得到 {value:.6g}"
             f"（容差 rtol={rtol:g}, atol={atol:g}）。{extra}")
    return value
