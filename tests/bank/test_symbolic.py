"""Symbolic answers: equivalent forms pass, near misses and wrong kinds get their message."""

from __future__ import annotations

import pytest
import sympy as sp

from autograder.bank.lib.compare import CheckFailed
from autograder.bank.lib.symbolic import assert_equivalent, assert_matrix_equivalent, is_equivalent

S = sp.exp(1 / sp.sqrt(2))
W11 = S / (1 + S)
D = sp.Symbol("d_k")


@pytest.mark.parametrize("form", [
    1 / (1 + sp.exp(-sp.sqrt(2) / 2)),
    sp.exp(sp.sqrt(2) / 2) / (sp.exp(sp.sqrt(2) / 2) + sp.exp(0)),
    1 - 1 / (1 + S),
    (sp.tanh(sp.sqrt(2) / 4) + 1) / 2,
])
def test_equivalent_forms_are_accepted(form):
    assert_equivalent(form, W11, "w11_exact")


def test_near_miss_is_rejected_as_close_but_not_equal():
    near = W11 + sp.Rational(1, 10**6)
    with pytest.raises(CheckFailed, match="非常接近"):
        assert_equivalent(near, W11, "w11_exact")


def test_float_inside_exact_answer_gets_its_own_message():
    with pytest.raises(CheckFailed, match="含有浮点数"):
        assert_equivalent(sp.exp(0.7071) / (1 + sp.exp(0.7071)), W11, "w11_exact")


def test_python_float_is_told_apart():
    with pytest.raises(CheckFailed, match="Python 浮点数"):
        assert_equivalent(0.66976, W11, "w11_exact")


@pytest.mark.parametrize("value, message", [
    (None, "是 None"), ("exp(1/sqrt(2))", "字符串"), (sp.Matrix([1, 2]), "矩阵"), (object(), "无法转换"),
])
def test_wrong_kinds_get_a_clear_message(value, message):
    with pytest.raises(CheckFailed, match=message):
        assert_equivalent(value, W11, "w11_exact")


def test_symbols_are_matched_by_name_whatever_their_assumptions():
    student_d = sp.Symbol("d_k", positive=True, integer=True)
    sigma = sp.Symbol("sigma_q", real=True)
    expected = D * sp.Symbol("sigma_q") ** 2
    assert_equivalent(student_d * sigma**2, expected, "var",
                      symbols={"d_k": D, "sigma_q": sp.Symbol("sigma_q")})


def test_unexpected_symbol_is_named():
    with pytest.raises(CheckFailed, match="未预期的符号 x"):
        assert_equivalent(D + sp.Symbol("x"), D, "var", symbols={"d_k": D})


def test_wrong_expression_reports_values():
    with pytest.raises(CheckFailed, match="不等价"):
        assert_equivalent(D**2, D, "var", symbols={"d_k": D})


def test_matrix_equivalence_accepts_transpose_when_allowed():
    c = sp.Symbol("c")
    expected = c * sp.Matrix([[W11, 1 - W11]])
    assert_matrix_equivalent(sp.Matrix([c * W11, c / (1 + S)]), expected, "out",
                             symbols={"c": c}, allow_transpose=True)
    with pytest.raises(CheckFailed, match="形状"):
        assert_matrix_equivalent(sp.Matrix([c * W11, c / (1 + S)]), expected, "out", symbols={"c": c})


def test_matrix_entry_mismatch_names_the_entry():
    c = sp.Symbol("c")
    with pytest.raises(CheckFailed, match=r"\(0, 1\)"):
        assert_matrix_equivalent(sp.Matrix([[c * W11, c * W11]]), c * sp.Matrix([[W11, 1 - W11]]),
                                 "out", symbols={"c": c})


def test_is_equivalent_proves_difference_numerically():
    assert not is_equivalent(sp.sin(D) ** 2, 1 - sp.cos(D) ** 2 + D / 10**9)
    assert is_equivalent(sp.sin(D) ** 2, 1 - sp.cos(D) ** 2)


def test_inner_time_limit_keeps_the_outer_one():
    import time

    from autograder.engine.protocol.deadline import TimeLimit, time_limit

    started = time.monotonic()
    with pytest.raises(TimeLimit):
        with time_limit(0.5):
            with time_limit(5):
                pass
            while time.monotonic() - started < 3:
                pass
    assert time.monotonic() - started < 2
