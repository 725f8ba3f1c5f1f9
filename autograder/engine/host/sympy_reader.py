"""SymPy values from the child, rebuilt by an allowlist reader (never ``eval``/``sympify``).

The child sends ``srepr`` text (:mod:`.sreprfast`): Python call syntax such as
``Mul(Rational(1, 2), Pow(Symbol('c'), Integer(2)))``. It is parsed with :mod:`ast` in
``eval`` mode, measured (text length, syntax nodes, nesting: :data:`~.budgets.SYMPY`), and
only these forms are built, unevaluated:

- numbers: ``Integer(n)``, ``Rational(p, q)``, ``Float('text', precision=b)``, with
  bounded digits, exponent and precision;
- ``Symbol('name', <assumption>=True...)`` and ``Dummy``; ``Function('f')(args...)``, an
  undefined function applied;
- the plain expression nodes in :data:`NODES`: ``Add``, ``Mul``, ``Pow``, the elementary
  functions, ``Piecewise`` and its conditions, the two dense matrix classes;
- the constants ``pi``, ``E``, ``I``, ``oo``, ``-oo``, ``zoo``, ``nan``, ``true``, ``false``.

Each node is built with ``evaluate=False`` rather than inside ``sympy.evaluate(False)``:
entering and leaving that context clears SymPy's whole cache, which made every check
after a read start cold (q3's swap check: 0.14 s against 0.11 s).

A subexpression the child used more than once comes once, as a definition:
``Shared([d0, d1, ...], value)`` at the top, ``Ref(k)`` for ``dk`` inside later
definitions and the value (:mod:`~autograder.engine.protocol.sympy_writer`). The budgets
hold for the text as written and for the expression it spells out, every ``Ref``
expanded (nodes and nesting counted, numbers and exponents bounded, definition by
definition): sharing saves parsing and building, never a limit.

Nothing else: no ``Poly`` (which expands its argument when built), no ``Sum``,
``Integral``, ``Derivative``, ``factorial``, sets or intervals. The honest students of every
assignment send only numbers, symbols, ``Add``/``Mul``/``Pow``, ``exp``, ``tanh`` and the
two matrix classes (the census in ``tests/test_hostile_checks.py``). Before anything is
built, :func:`.sreprbudget.size_of` bounds the exact numbers and the exponents the
expression could produce when a check later simplifies or evaluates it.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from typing import Any

import sympy

from ..protocol.budgets import SYMPY
from .sympy_budget import call_name, size_of

__all__ = ["SreprError", "from_srepr", "expanded_size", "NODES", "CONSTANTS", "SHARING"]

#: The expression-node classes the reader builds (by their ``srepr`` name).
NODES = ("Add", "Mul", "Pow", "exp", "log", "sin", "cos", "tan", "cot", "sinh", "cosh",
         "tanh", "asin", "acos", "atan", "Abs", "sign", "Max", "Min", "Piecewise",
         "ExprCondPair", "Equality", "Unequality", "StrictLessThan", "LessThan",
         "StrictGreaterThan", "GreaterThan", "And", "Or", "Not")
CONSTANTS = ("pi", "E", "I", "oo", "zoo", "nan", "true", "false")
#: The two forms of a value with shared subexpressions (see the module docstring).
SHARING = ("Shared", "Ref")
_MATRICES = ("MutableDenseMatrix", "ImmutableDenseMatrix")
_ASSUMPTIONS = frozenset({"real", "positive", "negative", "nonnegative", "nonpositive",
                          "nonzero", "integer", "rational", "finite", "complex",
                          "extended_real"})
_FLOAT = re.compile(r"-?([0-9]+)(?:\.[0-9]*)?(?:e([-+]?[0-9]{1,4}))?")
_MATRIX_SIDE = 10_000


class SreprError(ValueError):
    """The text is not an ``srepr`` this reader accepts (the message is Chinese)."""


@cache
def _nodes() -> dict[str, Any]:
    from sympy.functions.elementary.piecewise import ExprCondPair

    return {name: ExprCondPair if name == "ExprCondPair" else getattr(sympy, name)
            for name in NODES}


def from_srepr(text: object) -> Any:
    """The SymPy object ``text`` describes; :class:`SreprError` for anything else."""
    if not isinstance(text, str) or len(text) > SYMPY.text_chars:
        raise SreprError(f"不是长度不超过 {SYMPY.text_chars} 的文本")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise SreprError("不是有效的 srepr 文本") from None
    _measure(tree)
    definitions, body = _shared(tree.body)
    if definitions:
        expanded_size(definitions, body)
    sizes: list = []
    for node in [*definitions, body]:
        sizes.append(_within_budget(size_of(node, sizes)))
    try:
        built: list = []
        for node in definitions:
            built.append(_build(node, built))
        return _build(body, built)
    except SreprError:
        raise
    except RecursionError:
        raise SreprError("表达式嵌套太深") from None
    except Exception as err:  # a SymPy constructor refusing its arguments
        raise SreprError(f"SymPy 无法构造它（{type(err).__name__}）") from None


def _measure(tree: ast.AST) -> None:
    """Refuse a tree of too many nodes or too deep, without recursing."""
    count, stack = 0, [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > SYMPY.nodes:
            raise SreprError(f"表达式超过 {SYMPY.nodes} 个语法节点")
        if depth > SYMPY.depth:
            raise SreprError(f"表达式嵌套超过 {SYMPY.depth} 层")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _within_budget(size: Any) -> Any:
    if not size.bits <= SYMPY.bits:  # (also refuses nan)
        raise SreprError(f"其中的精确数值可能多达 {size.bits:.3g} 个二进制位（上限 {SYMPY.bits}）")
    if not size.exponent <= SYMPY.exponent:
        raise SreprError(f"其中的指数可能大到 {size.exponent:.3g}（上限 {SYMPY.exponent}）")
    return size


def _shared(node: ast.AST) -> tuple[list[ast.AST], ast.AST]:
    """``Shared([d0, ...], value)`` as (definitions, value); any other text as ([], itself)."""
    if call_name(node) != "Shared":
        return [], node
    if node.keywords or len(node.args) != 2 or not isinstance(node.args[0], ast.List):
        raise SreprError("Shared 应写成 Shared([定义, ...], 值)")
    return list(node.args[0].elts), node.args[1]


def _ref_index(node: ast.AST, defined: int) -> int | None:
    """k of ``Ref(k)`` (a definition made before), None for any other node."""
    if call_name(node) != "Ref":
        return None
    if node.keywords or len(node.args) != 1 or not isinstance(node.args[0], ast.Constant) \
            or type(node.args[0].value) is not int or not 0 <= node.args[0].value < defined:
        raise SreprError("Ref 只能指向它之前的一个定义")
    return node.args[0].value


def expanded_size(definitions: list[ast.AST], body: ast.AST) -> tuple[int, int]:
    """(syntax nodes, nesting) of what the text spells out, every ``Ref`` expanded;
    refused when there are too many or it nests too deep (counted per definition, so a
    chain of doublings is caught without expanding it)."""
    spans: list[tuple[int, int]] = []  # (nodes, depth) of each definition, expanded
    for tree in [*definitions, body]:
        count, deepest, stack = 0, 0, [(tree, 1)]
        while stack:
            node, depth = stack.pop()
            k = _ref_index(node, len(spans))
            nodes, below = spans[k] if k is not None else (1, 0)
            count, deepest = count + nodes, max(deepest, depth + below)
            if count > SYMPY.nodes:
                raise SreprError(f"表达式展开后超过 {SYMPY.nodes} 个语法节点")
            if deepest > SYMPY.depth:
                raise SreprError(f"表达式展开后嵌套超过 {SYMPY.depth} 层")
            if k is None:
                stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
        spans.append((count, deepest))
    return spans[-1]


def _build(node: ast.AST, built: list) -> Any:
    k = _ref_index(node, len(built))
    if k is not None:
        return built[k]
    if isinstance(node, ast.Name):
        if node.id in CONSTANTS:
            return getattr(sympy, node.id)
        raise SreprError(f"名字 {node.id[:40]!r} 不是接受的 SymPy 常数")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
            and isinstance(node.operand, ast.Name) and node.operand.id == "oo":
        return sympy.S.NegativeInfinity
    if isinstance(node, ast.Call):
        return _call(node, built)
    raise SreprError(f"不接受 {type(node).__name__} 形式")


def _call(node: ast.Call, built: list) -> Any:
    func = node.func
    if isinstance(func, ast.Call):  # Function('f')(x): an undefined function applied
        if not (isinstance(func.func, ast.Name) and func.func.id == "Function"
                and len(func.args) == 1 and not func.keywords):
            raise SreprError("只有 Function('名字')(...) 可以连续调用")
        return sympy.Function(_name(func.args[0]))(*_args(node, built), evaluate=False)
    name = func.id if isinstance(func, ast.Name) else ""
    if name in _NUMBERS:
        return _NUMBERS[name](node)
    if name in ("Symbol", "Dummy"):
        return _symbol(name, node)
    if name in _MATRICES:
        return _matrix(name, node, built)
    if name in NODES:
        if name == "ExprCondPair":  # a pair only, nothing to evaluate
            return _nodes()[name](*_args(node, built))
        return _nodes()[name](*_args(node, built), evaluate=False)
    raise SreprError(f"不接受的 SymPy 类 {ast.unparse(func)[:40]!r}")


def _args(node: ast.Call, built: list) -> list[Any]:
    if node.keywords:
        raise SreprError("表达式节点不接受关键字参数")
    return [_build(arg, built) for arg in node.args]


def _int(node: ast.AST) -> int:
    """An integer literal (``5`` or ``-5``) of at most :attr:`SympyBudget.digits` digits."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        sign, node = -1, node.operand
    if not isinstance(node, ast.Constant) or type(node.value) is not int:
        raise SreprError("需要整数字面量")
    if node.value.bit_length() > SYMPY.digits * 3.33:
        raise SreprError(f"整数超过 {SYMPY.digits} 位")
    return sign * node.value


def _str(node: ast.AST, limit: int) -> str:
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str) \
            or len(node.value) > limit or not node.value.isprintable():
        raise SreprError(f"需要不超过 {limit} 个可打印字符的字符串")
    return node.value


def _name(node: ast.AST) -> str:
    return _str(node, SYMPY.name_chars)


def _plain(node: ast.Call, count: int) -> list[ast.AST]:
    if len(node.args) != count or node.keywords:
        raise SreprError(f"{ast.unparse(node.func)[:20]} 的参数不合规")
    return node.args


def _integer(node: ast.Call) -> Any:
    return sympy.Integer(_int(_plain(node, 1)[0]))


def _rational(node: ast.Call) -> Any:
    p, q = _plain(node, 2)
    return sympy.Rational(_int(p), _int(q))


def _float(node: ast.Call) -> Any:
    if len(node.args) != 1 or [kw.arg for kw in node.keywords] not in ([], ["precision"]):
        raise SreprError("Float 的参数不合规")
    text = _str(node.args[0], 2 * SYMPY.float_exponent)
    match = _FLOAT.fullmatch(text)
    if match is None:
        raise SreprError("Float 的文本不是十进制数")
    magnitude = len(match.group(1).lstrip("0")) + abs(int(match.group(2) or 0))
    if magnitude > SYMPY.float_exponent:
        raise SreprError(f"Float 的十进制指数超过 {SYMPY.float_exponent}")
    precision = _int(node.keywords[0].value) if node.keywords else 53
    if not 1 <= precision <= SYMPY.float_bits:
        raise SreprError(f"Float 的精度超过 {SYMPY.float_bits} 位")
    return sympy.Float(text, precision=precision)


_NUMBERS = {"Integer": _integer, "Rational": _rational, "Float": _float}


def _symbol(kind: str, node: ast.Call) -> Any:
    if len(node.args) != 1:
        raise SreprError(f"{kind} 需要一个名字")
    options: dict[str, Any] = {}
    for kw in node.keywords:
        if kind == "Dummy" and kw.arg == "dummy_index":
            options[kw.arg] = _int(kw.value)
        elif kw.arg in _ASSUMPTIONS and isinstance(kw.value, ast.Constant) \
                and isinstance(kw.value.value, bool):
            options[kw.arg] = kw.value.value
        else:
            raise SreprError(f"{kind} 不接受关键字 {str(kw.arg)[:40]!r}")
    return getattr(sympy, kind)(_name(node.args[0]), **options)


def _matrix(kind: str, node: ast.Call, built: list) -> Any:
    """``Matrix([[...], ...])`` (rectangular) or ``Matrix(rows, cols, [])`` when empty."""
    if node.keywords or len(node.args) not in (1, 3):
        raise SreprError("矩阵的参数不合规")
    if len(node.args) == 3:
        rows, cols = _int(node.args[0]), _int(node.args[1])
        if not (0 <= rows <= _MATRIX_SIDE and 0 <= cols <= _MATRIX_SIDE and rows * cols == 0) \
                or not isinstance(node.args[2], ast.List) or node.args[2].elts:
            raise SreprError("只接受空矩阵写成 (行数, 列数, [])")
        return getattr(sympy, kind)(rows, cols, [])
    table = node.args[0]
    if not isinstance(table, ast.List) or not all(isinstance(r, ast.List) for r in table.elts):
        raise SreprError("矩阵应写成由行组成的列表")
    if len({len(r.elts) for r in table.elts}) > 1:
        raise SreprError("矩阵的各行长度不同")
    return getattr(sympy, kind)([[_build(e, built) for e in r.elts] for r in table.elts])
