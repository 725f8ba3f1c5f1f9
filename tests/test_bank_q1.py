"""q1_value_scaling's checks on the source solution, its alternatives and its mistakes."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from helpers import grade_namespace, hidden_calls, solution_namespace, visible_failures

from autograder.bank import checks_for, run_check
from autograder.compare import CheckFailed
from autograder.samples import q1 as samples_q1

A = "q1_value_scaling"
CALLS = hidden_calls(A)


def _grade(ns) -> dict[str, str | None]:
    return grade_namespace(A, ns)


@pytest.fixture(scope="module")
def solution():
    return solution_namespace(A)


def test_every_check_has_a_grade_cell():
    assert {name for name, _ in CALLS.values()} == {c.name for c in checks_for(A)}


def test_source_solution_passes_every_check(solution):
    assert _grade(solution) == dict.fromkeys(CALLS)


@pytest.mark.parametrize("variant", samples_q1.ALTERNATIVES, ids=lambda v: v.name)
def test_alternative_passes_every_check(variant):
    assert _grade(solution_namespace(A, variant)) == dict.fromkeys(CALLS)


@pytest.mark.parametrize("variant", samples_q1.MISTAKES, ids=lambda v: v.name)
def test_mistake_fails_exactly_its_cells_and_is_named(variant):
    verdicts = _grade(solution_namespace(A, variant))
    failed = {cell for cell, message in verdicts.items() if message}
    assert failed == set(variant.loses)
    text = "\n".join(m for m in verdicts.values() if m)
    for label in variant.feedback:
        assert label in text


@pytest.mark.parametrize("variant", samples_q1.MISTAKES, ids=lambda v: v.name)
def test_mistake_fails_visible_asserts_only_in_its_own_cells_and_the_student_reads_its_name(variant):
    """A visible assert that fails scores its cell 0 in nbgrader and stops the hidden check,
    so it may fail only in the cells the mistake loses, and what the student reads
    (the failing visible asserts, then the hidden checks of the other lost cells) names it."""
    visible = visible_failures(A, variant)
    assert visible and set(visible) <= set(variant.loses)
    verdicts = _grade(solution_namespace(A, variant))
    read = [*visible.values(), *(verdicts[c] or "" for c in variant.loses if c not in visible)]
    for label in variant.feedback:
        assert any(label in text for text in read), (label, read)


def test_hand_example_accepts_lecture_rounding(solution):
    rounded = {k: np.round(getattr(solution, k), 3) for k in
               ("weights_2I", "output_2I", "weights_3I")}
    run_check("q1.hand_example", **rounded, output_3I=np.round(rounded["weights_3I"] * 3, 3))


def test_hard_coded_hand_example_earns_nothing_for_the_functions():
    def hard_coded(X, W_q, W_k, W_v):
        return np.array([[1.34, 0.66], [0.66, 1.34]]), np.array([[0.67, 0.33], [0.33, 0.67]])

    with pytest.raises(CheckFailed):
        run_check("q1.self_attention", self_attention=hard_coded)


@pytest.mark.parametrize("value, message", [
    (3.0, "3/2"), (2 / 3, "方向反了"), (1.0, "加权求和"), ("1.5", "字符串"), (None, "None"),
])
def test_wrong_scale_factor_is_explained(value, message):
    with pytest.raises(CheckFailed, match=message):
        run_check("q1.output_scale_factor", output_scale_factor=value)


@pytest.mark.parametrize("value", [1.5, 3 / 2, np.float32(1.5), sp.Rational(3, 2)])
def test_scale_factor_accepts_any_number_type(value):
    run_check("q1.output_scale_factor", output_scale_factor=value)


def test_weights_changed_must_be_a_bool():
    with pytest.raises(CheckFailed, match="布尔值"):
        run_check("q1.weights_changed", weights_changed="False")


def test_weights_changed_true_is_rejected_and_named():
    with pytest.raises(CheckFailed, match="权重随 W_v 改变"):
        run_check("q1.weights_changed", weights_changed=True)
    run_check("q1.weights_changed", weights_changed=np.False_)


@pytest.mark.parametrize("form", [
    1 / (1 + sp.exp(-sp.sqrt(2) / 2)),
    sp.exp(sp.sqrt(2) / 2) / (1 + sp.exp(sp.sqrt(2) / 2)),
    sp.Rational(1, 2) + sp.tanh(sp.sqrt(2) / 4) / 2,
])
def test_w11_exact_accepts_any_equivalent_form(form):
    run_check("q1.w11_exact", w11_exact=form)


def test_w11_float_approximation_is_rejected_with_its_own_message():
    with pytest.raises(CheckFailed, match="浮点数"):
        run_check("q1.w11_exact", w11_exact=sp.Float(0.669761549))


def test_output1_symbolic_accepts_a_column_and_assumptions_on_c(solution):
    c = sp.Symbol("c", positive=True)
    w = solution.w11_exact
    run_check("q1.output1_symbolic", output1_symbolic=sp.Matrix([c * w, c * (1 - w)]))


def test_output1_symbolic_without_c_is_rejected(solution):
    w = solution.w11_exact
    with pytest.raises(CheckFailed, match="不等价"):
        run_check("q1.output1_symbolic", output1_symbolic=sp.Matrix([[2 * w, 2 * (1 - w)]]))


def test_weights_3Wq_equal_to_unchanged_weights_is_rejected(solution):
    with pytest.raises(CheckFailed):
        run_check("q1.weights_3Wq", weights_3Wq=solution.weights_2I)


def test_hand_example_without_scaling_is_named(solution):
    from autograder import reference as ref

    unscaled = ref.softmax(ref.HAND_X @ ref.HAND_X.T)
    values = {k: getattr(solution, k) for k in ("output_2I", "weights_3I", "output_3I")}
    with pytest.raises(CheckFailed, match="缺少 1/√d_k 缩放"):
        run_check("q1.hand_example", weights_2I=unscaled, **values)


# ------------------------------------------------------------------ temperature (W_q = c·I)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


@pytest.mark.parametrize("student, message", [
    (lambda c: _sigmoid(1 / np.sqrt(2)), "把 c 乘在了 W_v 上"),
    (lambda c: _sigmoid(c), "缺少 1/√d_k 缩放"),
    (lambda c: _sigmoid(np.sqrt(2) * c), "权重随 W_v 改变"),
    (lambda c: 1 - _sigmoid(c / np.sqrt(2)), "较小的权重"),
    (lambda c: np.array([_sigmoid(c / np.sqrt(2)), 1 - _sigmoid(c / np.sqrt(2))]), "应是一个数"),
    (lambda c: min(1.0, c * _sigmoid(1 / np.sqrt(2))), "不对"),
])
def test_temperature_rejects_wrong_sweeps_with_their_names(student, message):
    with pytest.raises(CheckFailed, match=message):
        run_check("q1.temperature", position1_max_weight=student)


def test_temperature_accepts_the_closed_form_and_numpy_scalars():
    run_check("q1.temperature", position1_max_weight=lambda c: np.float64(_sigmoid(c / np.sqrt(2))))
    run_check("q1.temperature", position1_max_weight=lambda c: np.array(_sigmoid(c / np.sqrt(2))))


def test_temperature_wants_a_number_not_a_one_element_array():
    with pytest.raises(CheckFailed, match="应是一个数"):
        run_check("q1.temperature", position1_max_weight=lambda c: np.array([_sigmoid(c / np.sqrt(2))]))


def test_temperature_sweep_is_the_figure_of_the_notebook(solution):
    cs = np.linspace(0, 8, 81)
    sweep = np.array([solution.position1_max_weight(c) for c in cs])
    assert sweep[0] == pytest.approx(0.5) and np.all(np.diff(sweep) > 0) and sweep[-1] < 1
    assert solution.position1_max_weight(3.0) == pytest.approx(solution.weights_3Wq[0, 0])


@pytest.mark.parametrize("form", [
    1 / (1 + sp.exp(-sp.Symbol("c") / sp.sqrt(2))),
    sp.exp(sp.Symbol("c", positive=True) * sp.sqrt(2) / 2)
    / (1 + sp.exp(sp.Symbol("c", positive=True) * sp.sqrt(2) / 2)),
])  # the tanh form is the closed_forms alternative's answer
def test_w11_of_c_accepts_any_equivalent_form(form):
    run_check("q1.w11_of_c", w11_of_c=form)


@pytest.mark.parametrize("make, message", [
    (lambda c, w: c * w, "以为权重随 c 线性变化"),
    (lambda c, w: 1 - 1 / (1 + sp.exp(-c / sp.sqrt(2))), "w12"),
    (lambda c, w: 1 / (1 + sp.exp(-c)), "缺少 1/√d_k 缩放"),
    (lambda c, w: 1 / (1 + sp.exp(-0.7071067811865476 * c)), "浮点数"),
    (lambda c, w: 1 / (1 + sp.exp(-sp.Symbol("x") / sp.sqrt(2))), "未预期的符号"),
    (lambda c, w: w, "不等价"),
])
def test_w11_of_c_rejects_wrong_answers_with_their_own_message(solution, make, message):
    with pytest.raises(CheckFailed, match=message):
        run_check("q1.w11_of_c", w11_of_c=make(sp.Symbol("c"), solution.w11_exact))


def test_output1_symbolic_with_floats_is_rejected(solution):
    c = sp.Symbol("c")
    with pytest.raises(CheckFailed, match="浮点数"):
        run_check("q1.output1_symbolic", output1_symbolic=sp.Matrix([[0.6698 * c, 0.3302 * c]]))
