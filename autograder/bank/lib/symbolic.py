"""Checking symbolic (SymPy) answers: kind, exactness, symbols by name, equivalence.

Equivalence is decided by ``simplify(a - b) == 0`` under a time limit, with a
random-point numeric test as the fallback and as the way to prove a difference.
Symbols are matched by *name*: a student's ``Symbol('c', positive=True)`` is the same
unknown as the grader's ``Symbol('c')``.
"""

from __future__ import annotations

import cmath
import math
import random
from collections.abc import Mapping

import numpy as np
import sympy as sp

from ...engine.protocol.deadline import TimeLimit, time_limit
from .compare import fail, kind_name

__all__ = ["as_expression", "as_matrix", "canonical", "is_equivalent", "assert_equivalent",
           "assert_matrix_equivalent"]


#: What evaluating or simplifying a student's expression may raise (it is then unknown
#: at that point, never a grader error).
_UNEVALUABLE = (TypeError, ValueError, ArithmeticError, RecursionError, NotImplementedError,
                sp.PolynomialError)


def _non_finite(expr: sp.Basic) -> bool:
    """Whether ``expr`` contains NaN, ±oo or zoo (which agree with nothing, themselves
    included: ``max(worst, nan)`` once made NaN agree with everything)."""
    return expr.has(sp.nan, sp.zoo, sp.oo, -sp.oo)


def _evaluated(expr: sp.Basic, memo: dict[int, sp.Basic] | None = None) -> sp.Basic | None:
    """``expr.doit()``: every node evaluated (the host's reader builds them unevaluated, so
    ``0/(c - c)`` reaches a check as written); ``None`` if SymPy cannot.

    ``memo`` (node id → its value) is shared by the entries of one matrix: an attention
    matrix repeats the same exponentials in every entry, and ``doit`` would evaluate each
    copy again (q3's 3×2 symbolic output: 2418 nodes, 336 distinct; 40 ms against 3 ms).
    """
    try:
        return _doit(expr, {} if memo is None else memo)
    except _UNEVALUABLE:
        return None


def _doit(node: sp.Basic, memo: dict[int, sp.Basic]) -> sp.Basic:
    """What ``node.doit()`` returns, each distinct node evaluated once. Only where a class
    keeps SymPy's generic ``doit`` (evaluate the arguments, then rebuild) are the arguments
    taken from ``memo``; any other class's own ``doit`` runs as it is."""
    done = memo.get(id(node))
    if done is not None:
        return done
    method = type(node).doit
    if method is _ASSOC_DOIT and node.args:
        done = node.func(*[_doit(a, memo) for a in node.args], evaluate=True)
    elif method is _BASIC_DOIT and node.args:
        done = node.func(*[_doit(a, memo) if isinstance(a, sp.Basic) else a for a in node.args])
    else:
        done = node.doit()
    memo[id(node)] = done  # ids stay valid: every node is alive in the caller's expression
    return done


_ASSOC_DOIT = sp.core.operations.AssocOp.doit
_BASIC_DOIT = sp.Basic.doit


def _value(expr: sp.Basic, point: dict) -> complex | None:
    """``expr`` at ``point`` to :data:`_DIGITS` digits; ``None`` where it has no value."""
    try:
        return complex(sp.N(expr.xreplace(point), _DIGITS))
    except _UNEVALUABLE:
        return None


def _has_float(expr: sp.Basic) -> bool:
    return any(isinstance(a, sp.Float) for a in sp.preorder_traversal(expr))


def _not_an_expression(value: object) -> str | None:
    """Why a SymPy object is not an expression a check can compare, or ``None``."""
    if isinstance(value, sp.Expr):
        return None
    if isinstance(value, sp.core.relational.Relational):
        return "一个等式或不等式（关系式），而不是表达式"
    if isinstance(value, sp.logic.boolalg.Boolean):
        return "一个布尔值或逻辑式，而不是表达式"
    if isinstance(value, sp.Set):
        return "一个集合或区间，而不是表达式"
    return f"{type(value).__name__}，而不是表达式"


def as_expression(value: object, what: str, *, exact: bool = True) -> sp.Expr:
    """``value`` as a SymPy expression; wrong kinds and floats get their own messages."""
    if value is None:
        fail(f"{what} 是 None：应是一个 SymPy 表达式。是不是忘了赋值？")
    if isinstance(value, str):
        fail(f"{what} 应是 SymPy 表达式，得到的是字符串 {value[:60]!r}。请用 sympy 的符号和函数构造它，"
             "例如 sp.exp(1/sp.sqrt(2))。")
    if isinstance(value, float) and exact:
        fail(f"{what} 应是精确的 SymPy 表达式，得到的是 Python 浮点数 {value:.6g}。"
             "请用 sp.exp、sp.sqrt、sp.Rational 等构造精确值，不要先算成小数。")
    if isinstance(value, sp.MatrixBase):
        fail(f"{what} 应是一个标量表达式，得到的是 {value.shape} 矩阵。")
    try:
        expr = sp.sympify(value, strict=True)
    except (sp.SympifyError, TypeError, ValueError, AttributeError, ArithmeticError):
        fail(f"{what} 应是 SymPy 表达式，得到的 {kind_name(value)} 无法转换。")
    why = _not_an_expression(expr)
    if why is not None:
        fail(f"{what} 应是 SymPy 表达式，得到的是{why}。")
    expr = _evaluated(expr)
    if expr is None or _non_finite(expr):
        fail(f"{what} 含有 NaN、无穷大或 zoo（例如除以零），不是一个确定的值。")
    if exact and _has_float(expr):
        first = next(a for a in sp.preorder_traversal(expr) if isinstance(a, sp.Float))
        fail(f"{what} 含有浮点数 {float(first):.6g}，不是精确答案。请用 sp.sqrt、sp.Rational、"
             "sp.exp 等精确写法构造它，不要先算成小数。")
    return expr


#: Largest matrix (entries) a check converts from a student's value.
MAX_MATRIX_ENTRIES = 10_000
_NUMBERS = (int, float, complex, np.number, np.bool_)


def _rows(value: object, what: str) -> list:
    """A list, tuple or array as rows of SymPy objects or plain numbers, checked leaf by
    leaf *before* SymPy sees it: ``sp.Matrix`` would parse a string entry as Python code."""
    rows = value.tolist() if isinstance(value, np.ndarray) else value
    if not isinstance(rows, (list, tuple)):
        fail(f"{what} 应是 SymPy 矩阵（sp.Matrix），得到的是 {kind_name(value)}。")
    flat = [e for r in rows for e in (r if isinstance(r, (list, tuple)) else [r])]
    if len(flat) > MAX_MATRIX_ENTRIES:
        fail(f"{what} 的元素超过 {MAX_MATRIX_ENTRIES} 个，不是题目要的矩阵。")
    for entry in flat:
        if not isinstance(entry, (sp.Basic, *_NUMBERS)) or isinstance(entry, (bool, np.bool_)):
            fail(f"{what} 的元素应是 SymPy 表达式或数，其中一个是 {kind_name(entry)}。")
    return rows


def as_matrix(value: object, what: str, *, exact: bool = True) -> sp.Matrix:
    """``value`` as a SymPy Matrix of expressions (lists of expressions and arrays accepted)."""
    if value is None:
        fail(f"{what} 是 None：应是一个 SymPy 矩阵（sp.Matrix）。")
    if isinstance(value, sp.MatrixBase):
        mat = value
    else:
        try:
            mat = sp.Matrix(_rows(value, what))
        except (TypeError, ValueError, IndexError, ArithmeticError, sp.SympifyError):
            fail(f"{what} 应是 SymPy 矩阵（sp.Matrix），得到的 {kind_name(value)} 无法转换。")
    if len(mat) > MAX_MATRIX_ENTRIES:
        fail(f"{what} 的元素超过 {MAX_MATRIX_ENTRIES} 个，不是题目要的矩阵。")
    for entry in mat:
        why = _not_an_expression(entry)
        if why is not None:
            fail(f"{what} 的元素应是 SymPy 表达式，其中一个是{why}。")
    memo: dict[int, sp.Basic] = {}
    mat = mat.applyfunc(lambda e: sp.nan if (done := _evaluated(e, memo)) is None else done)
    if any(_non_finite(e) for e in mat):
        fail(f"{what} 的元素含有 NaN、无穷大或 zoo（例如除以零），不是确定的值。")
    if exact and any(_has_float(e) for e in mat):
        fail(f"{what} 含有浮点数，不是精确答案。请用精确的 SymPy 写法（sp.sqrt、sp.Rational 等）。")
    return sp.Matrix(mat)


def canonical(expr: sp.Basic, symbols: Mapping[str, sp.Symbol]) -> sp.Basic:
    """Replace every free symbol whose name is in ``symbols`` by the grader's symbol."""
    subs = {s: symbols[s.name] for s in expr.free_symbols if s.name in symbols and s != symbols[s.name]}
    return expr.xreplace(subs) if subs else expr


#: Agreement at every random point to this many digits counts as equal when
#: ``simplify`` cannot finish the proof (e.g. tanh forms of a sigmoid).
_DIGITS = 50
_NUMERIC_EQUAL = 1e-30


def _numeric_difference(a: sp.Basic, b: sp.Basic, trials: int = 6) -> float | None:
    """Largest relative |a - b| over random positive points: ``inf`` as soon as one side
    is NaN or infinite at a point where the other is not, ``None`` when no point could be
    evaluated (only ``simplify`` can then say equal)."""
    names = sorted((a - b).free_symbols, key=lambda s: s.name)
    rnd = random.Random(20261130)
    worst, evaluated = 0.0, 0
    for _ in range(trials if names else 1):
        point = {s: sp.Rational(rnd.randint(51, 299), 100) for s in names}
        va, vb = _value(a, point), _value(b, point)
        if va is None or vb is None:
            if (va is None) != (vb is None):
                return math.inf  # a value on one side only: they differ there
            continue
        if not (cmath.isfinite(va) and cmath.isfinite(vb)):
            return math.inf
        evaluated += 1
        worst = max(worst, abs(va - vb) / max(1.0, abs(vb)))
    return worst if evaluated else None


def _expression(value: object) -> sp.Expr | None:
    """``value`` as a SymPy expression without parsing text; ``None`` if it is not one."""
    if isinstance(value, (str, bytes, np.str_, np.bytes_)):
        return None
    try:
        expr = sp.sympify(value, strict=True)
    except (sp.SympifyError, TypeError, ValueError, AttributeError, ArithmeticError):
        return None
    return expr if isinstance(expr, sp.Expr) else None


def is_equivalent(a: object, b: object, *, seconds: float = 10.0) -> bool:
    """Whether ``a`` and ``b`` are the same expression (symbols already canonical).

    Anything that is not a SymPy expression (text is never parsed), and any expression
    holding NaN, ±oo or zoo, is equivalent to nothing. A random point where they differ
    proves inequality at once (a NaN or infinite value there counts as a difference);
    agreement to 30 digits at every random point proves equality of analytic
    expressions (those with ``Abs``, ``Piecewise`` and the like still go to
    ``simplify``). Otherwise ``simplify(a - b) == 0`` decides, under a time limit.
    """
    a, b = _expression(a), _expression(b)
    a, b = (None if x is None else _evaluated(x) for x in (a, b))
    if a is None or b is None or _non_finite(a) or _non_finite(b):
        return False
    if a - b == 0:
        return True
    difference = _numeric_difference(a, b)
    if difference is not None and difference > _NUMERIC_EQUAL:
        return False
    agreed = difference is not None
    if agreed and not (a - b).has(sp.Abs, sp.sign, sp.Piecewise, sp.floor, sp.ceiling,
                                  sp.Min, sp.Max):
        # agreement to 30 digits at every random point: two different analytic
        # expressions cannot do that, and simplify would only confirm it, slowly
        return True
    try:
        with time_limit(seconds):
            if sp.simplify(a - b) == 0:
                return True
    except TimeLimit:
        pass
    except _UNEVALUABLE:  # SymPy gave up on the student's expression
        pass
    return agreed


def _symbol_message(expr: sp.Basic, symbols: Mapping[str, sp.Symbol], what: str) -> None:
    extra = sorted(s.name for s in expr.free_symbols if s.name not in symbols)
    if extra:
        allowed = "、".join(symbols) or "（无）"
        fail(f"{what} 含有未预期的符号 {', '.join(extra)}；允许的符号：{allowed}。"
             "请用题目给出的符号名。")


def assert_equivalent(
    value: object, expected: sp.Basic, what: str, *,
    symbols: Mapping[str, sp.Symbol] | None = None, exact: bool = True, seconds: float = 10.0,
) -> sp.Expr:
    """Fail unless ``value`` is a SymPy expression equivalent to ``expected``."""
    symbols = dict(symbols or {})
    expr = canonical(as_expression(value, what, exact=exact), symbols)
    _symbol_message(expr, symbols, what)
    if not is_equivalent(expr, expected, seconds=seconds):
        fail(f"{what} 与正确答案不等价：{_near_miss(expr, expected)}")
    return expr


def _near_miss(expr: sp.Basic, expected: sp.Basic) -> str:
    names = sorted((expr - expected).free_symbols, key=lambda s: s.name)
    point = {s: sp.Rational(3, 2) for s in names}
    got, want = _value(expr, point), _value(expected, point)
    if got is None or want is None:
        return "两者化简后的差不为零。"
    where = "（在所有符号取 3/2 处）" if names else ""
    if not cmath.isfinite(got):
        return f"数值不同{where}：期望 {want.real:.6g}，得到的是 NaN 或无穷大。"
    if want != 0 and abs(got - want) / abs(want) < 1e-3:
        return (f"数值上非常接近{where}（期望 {want.real:.6g}，得到 {got.real:.6g}），"
                "但不是精确相等：可能用了近似值或舍入。")
    return f"数值不同{where}：期望 {want.real:.6g}，得到 {got.real:.6g}。"


def assert_matrix_equivalent(
    value: object, expected: sp.Matrix, what: str, *,
    symbols: Mapping[str, sp.Symbol] | None = None, exact: bool = True,
    allow_transpose: bool = False, seconds: float = 20.0,
) -> sp.Matrix:
    """Fail unless ``value`` is a SymPy matrix equal, entry by entry, to ``expected``."""
    symbols = dict(symbols or {})
    mat = as_matrix(value, what, exact=exact)
    if mat.shape != expected.shape and allow_transpose and mat.T.shape == expected.shape:
        mat = mat.T
    if mat.shape != expected.shape:
        fail(f"{what} 的形状不对：期望 {expected.shape}，得到 {mat.shape}。")
    mat = canonical(mat, symbols)
    for entry in mat:
        _symbol_message(entry, symbols, what)
    for index, (got, want) in enumerate(zip(mat, expected)):
        if not is_equivalent(got, want, seconds=seconds / max(1, len(mat))):
            row, col = divmod(index, expected.cols)
            fail(f"{what} 的元素 ({row}, {col}) 与正确答案不等价：{_near_miss(got, want)}")
    return mat
