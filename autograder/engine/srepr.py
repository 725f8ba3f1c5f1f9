"""SymPy values from the child, rebuilt by a whitelist reader (never ``eval``/``sympify``).

The child sends ``sympy.srepr(value)``: Python call syntax such as
``Mul(Rational(1, 2), Pow(Symbol('c'), Integer(2)))``. It is parsed with :mod:`ast` in
``eval`` mode and only these forms are accepted:

- ``Name(args...)`` where ``Name`` is a SymPy class (a ``Basic`` or matrix subclass
  exported by ``sympy``); keyword arguments only for assumptions (``positive=True``),
  ``precision`` of ``Float`` and ``dummy_index`` of ``Dummy``;
- ``Function('f')(args...)``: an undefined function applied to arguments;
- the SymPy constants ``pi``, ``E``, ``I``, ``oo``, ``zoo``, ``nan``, ``true``, ``false``...;
- literals: short strings, ints of at most 400 digits, floats, lists (matrix rows).

Everything is built under ``sympy.evaluate(False)`` and the tree size is bounded, so a
hostile expression cannot make the host compute much while it is read.
"""

from __future__ import annotations

import ast
from functools import cache
from typing import Any

import sympy

__all__ = ["SreprError", "from_srepr", "MAX_TEXT", "MAX_NODES"]

MAX_TEXT = 1 << 20
MAX_NODES = 50_000
_MAX_DIGITS = 400
_KEYWORDS = {"precision", "dummy_index", "evaluate"}


class SreprError(ValueError):
    """The text is not an ``srepr`` this reader accepts."""


@cache
def _classes() -> dict[str, Any]:
    """SymPy names ``srepr`` may call: every exported Basic or matrix class."""
    found = {}
    for name, obj in vars(sympy).items():
        if isinstance(obj, type) and issubclass(obj, (sympy.Basic, sympy.MatrixBase)):
            found[name] = obj
    from sympy.functions.elementary.piecewise import ExprCondPair

    found["ExprCondPair"] = ExprCondPair
    found.pop("Function", None)  # only in the applied form Function('f')(x)
    return found


@cache
def _constants() -> dict[str, Any]:
    names = ("pi", "E", "I", "oo", "zoo", "nan", "true", "false", "EulerGamma",
             "GoldenRatio", "Catalan", "TribonacciConstant")
    return {n: getattr(sympy, n) for n in names if hasattr(sympy, n)}


def _assumption_names() -> frozenset[str]:
    from sympy.core.assumptions import _assume_defined

    return frozenset(_assume_defined) | {"commutative"}


def from_srepr(text: object) -> Any:
    """The SymPy object ``text`` describes; :class:`SreprError` for anything else."""
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise SreprError("not a string of acceptable length")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise SreprError("not valid srepr syntax") from None
    count = sum(1 for _ in ast.walk(tree))
    if count > MAX_NODES:
        raise SreprError(f"expression of {count} nodes is too large")
    try:
        with sympy.evaluate(False):
            return _build(tree.body)
    except SreprError:
        raise
    except RecursionError:
        raise SreprError("expression nested too deeply") from None
    except Exception as err:  # a SymPy constructor refusing its arguments
        raise SreprError(f"SymPy could not build it ({type(err).__name__})") from None


def _build(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return _literal(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
            and isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float)):
        return -_literal(node.operand.value)
    if isinstance(node, ast.List):
        return [_build(item) for item in node.elts]
    if isinstance(node, ast.Name):
        if node.id in _constants():
            return _constants()[node.id]
        raise SreprError(f"name {node.id!r} is not a SymPy constant")
    if isinstance(node, ast.Call):
        return _call(node)
    raise SreprError(f"{type(node).__name__} is not allowed")


def _literal(value: object) -> object:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if len(str(abs(value))) > _MAX_DIGITS:
            raise SreprError("integer literal too long")
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, str) and len(value) <= 1000:
        return value
    raise SreprError("literal not allowed")


def _call(node: ast.Call) -> Any:
    func = node.func
    if isinstance(func, ast.Call):  # Function('f')(x): an undefined function applied
        if not (isinstance(func.func, ast.Name) and func.func.id == "Function"
                and len(func.args) == 1 and not func.keywords
                and isinstance(func.args[0], ast.Constant) and isinstance(func.args[0].value, str)):
            raise SreprError("only Function('name')(...) may be called twice")
        target = sympy.Function(_literal(func.args[0].value))
    elif isinstance(func, ast.Name) and func.id in _classes():
        target = _classes()[func.id]
    else:
        raise SreprError(f"{ast.unparse(func)[:40]!r} is not an accepted SymPy class")
    args = [_build(arg) for arg in node.args]
    kwargs = {}
    for kw in node.keywords:
        if kw.arg is None or (kw.arg not in _KEYWORDS and kw.arg not in _assumption_names()):
            raise SreprError(f"keyword {kw.arg!r} is not accepted")
        if not isinstance(kw.value, ast.Constant) or not isinstance(kw.value.value, (bool, int)):
            raise SreprError(f"keyword {kw.arg!r} needs a literal")
        kwargs[kw.arg] = kw.value.value
    if getattr(target, "__name__", "") == "Float" and isinstance(kwargs.get("precision"), int) \
            and not 1 <= kwargs["precision"] <= 4000:
        raise SreprError("Float precision out of range")
    return target(*args, **kwargs)
