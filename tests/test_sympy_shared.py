"""SymPy values with shared subexpressions: the child writes each once
(``Shared([...], value)`` and ``Ref(k)``), the host reads them back as the same
expression, and every budget holds for the expression spelled out in full."""

from __future__ import annotations

import time

import pytest
import sympy as sp

from autograder.engine.host.sympy_reader import SreprError, from_srepr
from autograder.engine.protocol.budgets import SYMPY
from autograder.engine.protocol.sympy_writer import fast_srepr


def _softmax_attention() -> sp.Matrix:
    """A 3×2 symbolic attention output: the same exponentials in every entry."""
    X = sp.Matrix(3, 2, lambda i, j: sp.Symbol(f"t{i + 1}{j + 1}"))
    W = sp.Matrix([[sp.Rational(1, 2), -1], [2, sp.Rational(3, 2)]])
    scores = (X * W) * (X * W).T / sp.sqrt(2)
    weights = sp.Matrix(3, 3, lambda i, j: sp.exp(scores[i, j])
                        / sum(sp.exp(scores[i, k]) for k in range(3)))
    return weights * X


def test_a_shared_value_is_written_once_and_read_back_as_it_was() -> None:
    value = _softmax_attention()
    text = fast_srepr(value)
    assert text.startswith("Shared([") and "Ref(" in text
    assert len(text) < len(sp.srepr(value)) / 3
    assert sp.srepr(from_srepr(text)) == sp.srepr(value)


@pytest.mark.parametrize("value", [sp.Integer(3), sp.Symbol("c") + 1,
                                   sp.Matrix([[1, sp.Symbol("c")]]), sp.exp(sp.Symbol("c"))])
def test_values_without_repeats_are_plain_srepr_text(value) -> None:
    text = fast_srepr(value)
    assert "Shared" not in text and "Ref" not in text
    assert sp.srepr(from_srepr(text)) == sp.srepr(value)


def _doublings(levels: int) -> str:
    chain = ["Add(Symbol('x'), Symbol('y'))"]
    chain += [f"Add(Ref({k}), Ref({k}))" for k in range(levels - 1)]
    return f"Shared([{', '.join(chain)}], Ref({levels - 1}))"


def test_a_chain_of_doublings_is_refused_without_being_spelled_out() -> None:
    """60 doublings spell out 2**60 nodes: refused by the count, in well under a second."""
    started = time.monotonic()
    with pytest.raises(SreprError, match="展开后超过"):
        from_srepr(_doublings(60))
    assert time.monotonic() - started < 5
    small = from_srepr(_doublings(4))  # 8 copies of x + y: within every budget
    assert sp.srepr(small).count("Symbol('x')") == 8


def test_nesting_through_definitions_is_refused() -> None:
    chain = ["exp(Symbol('x'))"] + [f"exp(Ref({k}))" for k in range(SYMPY.depth)]
    with pytest.raises(SreprError, match="嵌套超过"):
        from_srepr(f"Shared([{', '.join(chain)}], Ref({SYMPY.depth}))")


@pytest.mark.parametrize("text", [
    "Ref(0)",                                               # no definitions at all
    "Shared([Add(Symbol('x'), Ref(0))], Ref(0))",           # refers to itself
    "Shared([Symbol('x'), Add(Ref(2), Ref(0))], Ref(1))",   # refers ahead
    "Shared([Symbol('x')], Ref(1))",                        # no such definition
    "Shared([Symbol('x')], Ref(-1))",
    "Shared([Symbol('x')], Ref('0'))",
    "Shared([Symbol('x')], Ref(k=0))",
    "Shared(Symbol('x'), Ref(0))",                          # not a list
    "Add(Shared([Symbol('x')], Ref(0)), Integer(1))",       # not at the top
    "Shared([Symbol('x')], Ref(0), Ref(0))",
])
def test_malformed_sharing_is_refused(text: str) -> None:
    with pytest.raises(SreprError):
        from_srepr(text)


def test_number_budgets_hold_through_references() -> None:
    """A power of a shared large integer is refused as the same text spelled out is."""
    big = "Integer(" + "9" * 30 + ")"
    spelled = f"Pow({big}, Integer(1000000))"
    shared = f"Shared([{big}], Pow(Ref(0), Integer(1000000)))"
    for text in (spelled, shared):
        with pytest.raises(SreprError, match="二进制位"):
            from_srepr(text)
    unused = "Shared([Pow(Integer(10), Integer(100000000))], Integer(1))"
    with pytest.raises(SreprError, match="二进制位"):  # an unused definition is checked too
        from_srepr(unused)
