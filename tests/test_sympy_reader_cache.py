"""The host's SymPy reader leaves SymPy's cache alone: entering and leaving
``sympy.evaluate(False)`` clears it, and every check after a read then started cold."""

from __future__ import annotations

import sympy
from sympy.core.cache import CACHE

from autograder.engine.host.sympy_reader import from_srepr


def _cached_entries() -> int:
    return sum(f.cache_info().currsize for f in CACHE)


def test_reading_keeps_what_sympy_has_cached() -> None:
    a = sympy.Symbol("cache_probe_a")
    sympy.simplify(sympy.exp(a + 1) / sympy.exp(a))
    before = _cached_entries()
    assert before > 0
    value = from_srepr("Add(Mul(Integer(2), Symbol('x')), Pow(Symbol('x'), Integer(-1)))")
    assert _cached_entries() >= before
    assert value.args and not value.is_Atom


def test_what_is_read_stays_as_written() -> None:
    """Nothing is evaluated while reading, as before: the text's own terms come back."""
    value = from_srepr("Add(Integer(1), Integer(1))")
    assert isinstance(value, sympy.Add) and value.args == (1, 1)
    assert sympy.srepr(from_srepr("Pow(Integer(0), Integer(-1))")) == "Pow(Integer(0), Integer(-1))"
    assert from_srepr("Mul(Integer(0), Symbol('c'))").args == (0, sympy.Symbol("c"))
    assert from_srepr("exp(log(Symbol('c')))").func is sympy.exp
