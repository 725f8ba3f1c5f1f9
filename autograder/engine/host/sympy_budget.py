"""How large the numbers in an ``srepr`` text can grow, measured on its syntax tree.

The reader builds every node unevaluated, so nothing is computed while it reads; but a
check later subtracts, simplifies and evaluates the student's expression, and SymPy then
works out what the text only wrote down: ``Pow(Integer(10), Integer(10**9))`` is a
billion-digit integer, built in one call to C that no time limit can interrupt;
``Pow(Add(c, 1), 10**6)`` expands to a million terms; ``N(exp(10**3000))`` runs for
minutes. :func:`size_of` bounds, for every symbol worth at most 3 (the checks' random
points lie in [0.51, 2.99]):

- ``bits``: the bits of any exact number (numerator or denominator) that evaluating,
  expanding or simplifying can produce. A literal costs its own bits, an atom 2; ``Add``,
  ``Mul``, functions, relations: the sum of their arguments', plus one per argument
  (|a·b| and |a/b + c/d| grow by no more); ``Pow(b, e)``: the base's bits times the
  largest |e|; ``exp(a)`` only when ``a`` holds a ``log`` (``exp(k·log(n))`` is ``n**k``);
  a matrix: its largest entry (checks compare entries one by one);
- ``upper``: a bound on |value| (sums add, products multiply, powers raise);
- ``exponent``: the largest |exponent| anywhere (of a ``Pow``, or the argument of
  ``exp``, ``sinh``, ``cosh``), which bounds the work of numeric evaluation.

The bounds are coarse on purpose; the honest students' largest values measure well
inside :data:`~.budgets.SYMPY` (``tests/test_hostile_checks.py`` keeps the census).
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

__all__ = ["Size", "size_of", "call_name"]

#: The largest value a symbol or a named constant stands for (pi rounded up).
_ATOM_VALUE = 3.2
_ATOM_BITS = 2.0
_MATRICES = ("MutableDenseMatrix", "ImmutableDenseMatrix")
_EXPONENTIAL = ("exp", "sinh", "cosh")
_LOG2_10 = math.log2(10)


@dataclass(frozen=True)
class Size:
    """Bounds for one node (see the module docstring)."""

    bits: float
    upper: float
    exponent: float = 0.0
    logs: bool = False

    @property
    def spread(self) -> float:
        """A bound on max(|x|, 1/|x|): an exact number's reciprocal is below 2**bits."""
        return max(self.upper, _pow(2.0, min(self.bits, 2000.0)))


_ATOM = Size(_ATOM_BITS, _ATOM_VALUE)


def _pow(base: float, exponent: float) -> float:
    try:
        return math.pow(base, exponent)
    except OverflowError:
        return math.inf


def _product(values: list[float]) -> float:
    return math.inf if math.inf in values else math.prod(values)


def call_name(node: ast.AST) -> str:
    """``X`` of a call ``X(...)``; "" for anything else."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id
    return ""


def _int_literal(node: ast.AST) -> int:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_int_literal(node.operand)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return 0


def _number(node: ast.Call) -> Size:
    """An Integer, Rational or Float call (malformed ones are the reader's to refuse)."""
    if call_name(node) == "Float":
        text = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else ""
        try:
            value = abs(Decimal(str(text)))
        except (InvalidOperation, ValueError):
            return Size(math.inf, math.inf)
        precision = next((_int_literal(kw.value) for kw in node.keywords
                          if kw.arg == "precision"), 53)
        magnitude = max(0, value.adjusted()) * _LOG2_10 if value else 0.0
        return Size(precision + magnitude, float(value) if value < 10**300 else math.inf)
    p, q = ([_int_literal(a) for a in node.args] + [1, 1])[:2]
    bits = max(abs(p).bit_length(), abs(q).bit_length()) + 1
    return Size(bits, abs(p / q) if q and bits < 1000 else math.inf)


def size_of(node: ast.AST, refs: list[Size] = ()) -> Size:
    """The bounds of the expression ``node`` (an ``ast`` of ``srepr`` text); ``refs``:
    those of the definitions ``Ref(k)`` stands for (the reader checks each ``k``)."""
    name = call_name(node)
    if name in ("Integer", "Rational", "Float"):
        return _number(node)
    if name == "Ref" and len(node.args) == 1 and 0 <= _int_literal(node.args[0]) < len(refs):
        return refs[_int_literal(node.args[0])]
    if isinstance(node, ast.List):
        return _largest([size_of(e, refs) for e in node.elts])
    if not isinstance(node, ast.Call):
        return _ATOM
    parts = [size_of(a, refs) for a in node.args if not isinstance(a, ast.Constant)]
    if not parts:  # Symbol('x'), Dummy(...): a name and assumptions
        return _ATOM
    if name in _MATRICES:
        return _largest(parts)
    if name == "Pow" and len(parts) == 2:
        return _power(parts[0], parts[1], _nonnegative_literal(node.args[1]))
    if name in _EXPONENTIAL and len(parts) == 1:
        return _exponential(parts[0])
    bits = sum(p.bits for p in parts) + len(parts)
    exponent, logs = max(p.exponent for p in parts), any(p.logs for p in parts)
    if name == "Mul":
        return Size(bits, _product([p.upper for p in parts]), exponent, logs)
    if name == "log":
        arg = parts[0]
        return Size(bits, arg.bits + math.log(max(arg.upper, 1.0)) + 1, exponent, True)
    return Size(bits, sum(p.upper for p in parts) + 1, exponent, logs)


def _nonnegative_literal(node: ast.AST) -> bool:
    """Whether an exponent is a literal number >= 0 (then a base below 1 stays below 1)."""
    return call_name(node) in ("Integer", "Rational", "Float") and bool(node.args) \
        and not isinstance(node.args[0], ast.UnaryOp)


def _power(base: Size, exponent: Size, nonnegative: bool) -> Size:
    times = max(1.0, exponent.upper)
    bits = _product([base.bits, times]) + exponent.bits
    upper = _pow(max(base.upper if nonnegative else base.spread, 1.0), exponent.upper)
    return Size(bits, upper, max(base.exponent, exponent.exponent, exponent.upper),
                base.logs or exponent.logs)


def _exponential(arg: Size) -> Size:
    bits = arg.bits + (_product([_ATOM_BITS, max(1.0, arg.upper)]) if arg.logs else _ATOM_BITS)
    return Size(bits, _pow(math.e, arg.upper), max(arg.exponent, arg.upper), arg.logs)


def _largest(parts: list[Size]) -> Size:
    if not parts:
        return Size(0.0, 0.0)
    return Size(max(p.bits for p in parts), max(p.upper for p in parts),
                max(p.exponent for p in parts), any(p.logs for p in parts))
