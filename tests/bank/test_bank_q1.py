"""q1_value_scaling's checks on the source solution, its alternatives and its mistakes."""

from __future__ import annotations

import re

import numpy as np
import prose_q1
import pytest
import sympy as sp
from helpers import grade_namespace, hidden_calls, solution_namespace, visible_failures
from lecture import core_table_minutes
from seeds import surviving_seeds

from autograder.bank import checks_for, q1_apple, q1_hand
from autograder.bank.lib import reference as ref
from autograder.bank.lib.compare import CheckFailed, fmt
from autograder.bank.runner import evaluate, run_check
from autograder.samples import q1 as samples_q1

A = "q1_value_scaling"
CALLS = hidden_calls(A)
#: Right hand values (3 decimals) for the answers' consistency with the hand steps.
OWN_WEIGHTS, OWN_OUTPUT = [0.670, 0.330], [2.009, 0.991]


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


def _lost(variant) -> tuple[set[str], list[str]]:
    """The cells ``variant`` loses (a failing visible assert or a failing hidden check, as
    the engine and nbgrader score them) and every message its feedback shows for them."""
    verdicts = _grade(solution_namespace(A, variant))
    visible = visible_failures(A, variant)
    lost = {cell for cell, message in verdicts.items() if message} | set(visible)
    return lost, [*visible.values(), *(m for m in verdicts.values() if m)]


@pytest.mark.parametrize("variant", samples_q1.MISTAKES, ids=lambda v: v.name)
def test_mistake_loses_exactly_its_cells_and_is_named(variant):
    lost, messages = _lost(variant)
    assert lost == set(variant.loses)
    # issue 29.2: the host decides every point; a cell failed by a visible assert (which
    # runs where numpy.allclose can be wrapped) is failed by its hidden check too
    verdicts = _grade(solution_namespace(A, variant))
    assert not {cell for cell in visible_failures(A, variant) if not verdicts[cell]}
    for label in variant.feedback:
        assert any(label in m for m in messages), (label, messages)


def test_a_whole_array_max_softmax_is_diagnosed_as_such():
    """The hidden check names what the student did, not the softmax without a max."""
    variant = next(v for v in samples_q1.MISTAKES if v.name == "global_max")
    message = _grade(solution_namespace(A, variant))["test_softmax_stable"]
    assert "【减去了整张打分表的最大值】" in message, message
    assert "softmax 直接计算 exp(z)" not in message, message


@pytest.mark.parametrize("variant", samples_q1.MISTAKES, ids=lambda v: v.name)
def test_mistake_fails_a_visible_assert_before_submission_only_in_its_own_cells(variant):
    """A failing visible assert scores its cell 0 in nbgrader and stops the hidden check,
    so it may fail only in the cells the mistake loses; and at least one fails, so the
    student learns of the mistake before the grade does."""
    visible = visible_failures(A, variant)
    assert (bool(visible) or not variant.visible) and set(visible) <= set(variant.loses)


@pytest.mark.parametrize("variant", samples_q1.MISTAKES, ids=lambda v: v.name)
def test_mistake_loses_its_cells_on_every_seed(variant):
    """The contract's sweep: on each of 200 seeds, every cell the mistake names is lost."""
    survived = {cell: seeds for cell, seeds in surviving_seeds(A, variant).items() if seeds}
    assert not survived, survived


def test_hand_example_accepts_lecture_rounding(solution):
    rounded = {k: np.round(getattr(solution, k), 3) for k in
               ("weights_2I", "output_2I", "weights_3I")}
    run_check("q1.hand_example", **rounded, output_3I=np.round(rounded["weights_3I"] * 3, 3),
              weights_1=[0.670, 0.330], output_1=[2.010, 0.990])


def test_hand_example_wants_the_hand_values_to_agree_with_the_code(solution):
    values = {k: getattr(solution, k) for k in ("weights_2I", "output_2I", "weights_3I", "output_3I")}
    with pytest.raises(CheckFailed, match="手算的 weights_1"):
        run_check("q1.hand_example", **values, weights_1=[0.893, 0.107], output_1=solution.output_1)
    with pytest.raises(CheckFailed, match="手算的 output_1"):
        run_check("q1.hand_example", **values, weights_1=solution.weights_1, output_1=[1.340, 0.660])


def test_hard_coded_hand_example_earns_nothing_for_the_functions():
    def hard_coded(X, W_q, W_k, W_v):
        return np.array([[1.34, 0.66], [0.66, 1.34]]), np.array([[0.67, 0.33], [0.33, 0.67]])

    with pytest.raises(CheckFailed):
        run_check("q1.self_attention", self_attention=hard_coded)


@pytest.mark.parametrize("value, message", [
    (3.0, "把 W_v 的新系数当成了倍数"), (2 / 3, "方向反了"), (1.0, "加权求和"), ("1.5", "字符串"),
    (None, "None"), (float("nan"), "有限的数"),
])
def test_wrong_scale_factor_is_explained_without_the_right_value(value, message):
    with pytest.raises(CheckFailed, match=message) as err:
        run_check("q1.output_scale_factor", output_scale_factor=value, output_1=OWN_OUTPUT)
    if not isinstance(value, str):  # a string answer is quoted back as it came
        assert "1.5" not in str(err.value) and "3/2" not in str(err.value)


@pytest.mark.parametrize("value", [1.5, 3 / 2, np.float32(1.5), sp.Rational(3, 2)])
def test_scale_factor_accepts_any_number_type(value):
    run_check("q1.output_scale_factor", output_scale_factor=value, output_1=OWN_OUTPUT)


def test_weights_changed_must_be_a_bool():
    with pytest.raises(CheckFailed, match="布尔值"):
        run_check("q1.weights_changed", weights_changed="False", weights_1=OWN_WEIGHTS)


def test_weights_changed_true_is_rejected_and_named():
    with pytest.raises(CheckFailed, match="权重随 W_v 改变"):
        run_check("q1.weights_changed", weights_changed=True, weights_1=OWN_WEIGHTS)
    run_check("q1.weights_changed", weights_changed=np.False_, weights_1=OWN_WEIGHTS)


@pytest.mark.parametrize("base", ["hand_no_sqrt_dk", "sum_one_term", "output_old_v"])
def test_the_host_checks_the_answers_against_the_students_own_hand_steps(base):
    """Issue 29.2: the consistency of the answers with the student's own hand steps was a
    visible assert only, so wrapping numpy.allclose in the child kept both points. The
    host now decides it on the student's values as data: the honest base loses the cells
    through the hidden checks alone (without the fix these checks passed)."""
    variant = next(v for v in samples_q1.MISTAKES if v.name == base)
    ns = solution_namespace(A, variant)
    verdicts = _grade(ns)
    answers = {"test_weights_changed", "test_output_scale_factor"} & set(variant.loses)
    assert answers and all(verdicts[cell] for cell in answers), verdicts
    assert all("对不上" in verdicts[cell] for cell in answers)


def test_the_visible_assert_bypass_is_flagged():
    """The bypass that scored +2 (issue 29.2): numpy imported as N, allclose wrapped."""
    from autograder.engine.host.integrity import scan_source
    bypass = ("import numpy as N\n_allclose = N.allclose\n"
              "N.allclose = lambda a, b, **k: True\nN.isclose = lambda a, b, **k: True")
    assert any("N.allclose" in r for r in scan_source(bypass))


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
    from autograder.bank.lib import reference as ref

    unscaled = ref.softmax(ref.HAND_X @ ref.HAND_X.T)
    values = {k: getattr(solution, k) for k in ("output_2I", "weights_3I", "output_3I",
                                                 "weights_1", "output_1")}
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


# ------------------------------------------------------------------ the hand step (W_v = 3I)


def test_the_hand_step_ends_where_the_reference_does():
    output, weights = ref.hand_example(v_scale=3.0)
    assert np.allclose(q1_hand.EXACT_WEIGHTS, weights[0])
    assert np.allclose(q1_hand.EXACT_OUTPUT, output[0])
    # why only the output is graded: the weights are the lecture's (W_v = 2I) own
    assert np.allclose(q1_hand.EXACT_WEIGHTS, ref.hand_example(v_scale=2.0)[1][0])


SQRT2 = float(np.sqrt(2))


def _weights(scores, d=SQRT2):
    """Position 1's weights from a row of scores divided by ``d``, as a student computes them."""
    exps = np.exp(np.asarray(scores, dtype=float) / d)
    return exps / exps.sum()


def _hand(weights_1, output_1=None):
    """q1.hand_output on ``weights_1`` and (by default) the output they give with W_v = 3I."""
    if output_1 is None:
        output_1 = np.asarray(weights_1) @ (3 * np.eye(2))
    run_check("q1.hand_output", weights_1=weights_1, output_1=output_1)


@pytest.mark.parametrize("weights_1", [
    _weights([3.0, 0.0]), _weights([1.0, 0.0], 1.0), _weights([1.0, 0.0], 2.0), [0.5, 0.5],
], ids=["scores-from-V", "unscaled", "divided-by-dk", "uniform"])
def test_an_output_that_follows_from_the_students_own_weights_is_carried_forward(weights_1):
    _hand(weights_1)


def test_the_lecture_rounding_and_the_exact_output_pass_whatever_the_weights():
    _hand([0.670, 0.330], [2.010, 0.990])
    _hand(_weights([3.0, 0.0]), q1_hand.EXACT_OUTPUT)


@pytest.mark.parametrize("weights_1, label", [
    (np.exp([1 / np.sqrt(2), 0]) / np.exp(1 / np.sqrt(2)), q1_hand.SUM_ONE_TERM.label),
    (np.exp([1 / np.sqrt(2), 0]), q1_hand.SUM_ONE_TERM.label),
    (1.5 * q1_hand.EXACT_WEIGHTS, "权重随 W_v 改变"),
    ([0.6, 0.3], "加起来等于 1"),
    ([1.2, -0.2], "非负"),
])
def test_weights_that_are_not_weights_lose_the_step_even_with_the_exact_output(weights_1, label):
    with pytest.raises(CheckFailed, match=label):
        _hand(weights_1, q1_hand.EXACT_OUTPUT)
    with pytest.raises(CheckFailed, match=label):
        _hand(weights_1)


@pytest.mark.parametrize("output_1, label", [
    ([1.340, 0.660], q1_hand.OUTPUT_OLD_V.label),
    ([0.670, 0.330], "返回了权重而不是输出"),
    ([2.0, 1.0], "不对"),
    ([2.009, 0.991, 0.0], "长度 2"),
    ([np.nan, 0.991], "NaN"),
])
def test_a_wrong_output_is_named(output_1, label):
    with pytest.raises(CheckFailed, match=label):
        _hand([0.670, 0.330], output_1)


@pytest.mark.parametrize("bad", [None, "1, 0", [1.0], [[0.670, 0.330]], [np.nan, 0.0]])
def test_a_malformed_weights_1_is_a_failed_step_not_a_grader_error(bad):
    with pytest.raises(CheckFailed, match="weights_1"):
        _hand(bad, q1_hand.EXACT_OUTPUT)


@pytest.mark.parametrize("text, wrong", q1_hand.WEIGHT_DIAGNOSES,
                         ids=lambda v: v[:12] if isinstance(v, str) else "")
def test_the_answers_name_the_slip_in_the_students_own_weights(text, wrong):
    """The slips the five removed steps named are named by the answers that rest on
    weights_1: without the diagnosis the message only said "对不上"."""
    with pytest.raises(CheckFailed) as err:
        run_check("q1.weights_changed", weights_changed=False, weights_1=wrong)
    assert "对不上" in str(err.value) and text in str(err.value)


# ------------------------------------------------------------------ 苹果 in two sentences


def test_the_notebook_and_the_checks_use_the_same_sentences(solution):
    assert np.array_equal(solution.X_A, q1_apple.sentence("A"))
    assert np.array_equal(solution.X_B, q1_apple.sentence("B"))


def test_apple_has_one_embedding_and_two_representations(solution):
    """The task's premise and its point, as the prose and the model answer state them."""
    (out_a, w_a), (out_b, w_b) = q1_apple.reference("A"), q1_apple.reference("B")
    row_a, row_b = q1_apple.APPLE_ROW["A"], q1_apple.APPLE_ROW["B"]
    assert np.array_equal(solution.X_A[row_a], solution.X_B[row_b])
    assert not np.allclose(out_a[row_a], out_b[row_b])
    assert out_a[row_a][0] > out_a[row_a][1] and out_b[row_b][1] > out_b[row_b][0]
    assert q1_apple.SENTENCES["A"][int(np.argmax(w_a[row_a]))] == "公司"
    assert q1_apple.SENTENCES["B"][int(np.argmax(w_b[row_b]))] == "咬"
    # B mirrors A (the model answer quotes A's numbers for both)
    assert np.isclose(w_a[row_a].max(), w_b[row_b].max())
    assert np.allclose(out_b[row_b], out_a[row_a][::-1])


def _broken(X, W_q, W_k, W_v):
    raise RuntimeError("not written yet")


def _tables(attention=None) -> dict:
    """The student's own tables (weights_A … out_B) the answers must be rows of."""
    (out_a, w_a), (out_b, w_b) = (
        (q1_apple.reference(n) if attention is None else attention(q1_apple.sentence(n), *[np.eye(2)] * 3))
        for n in ("A", "B"))
    return {"weights_A": w_a, "weights_B": w_b, "out_A": out_a, "out_B": out_b}


def _w(tables: dict) -> dict:
    return {k: tables[k] for k in ("weights_A", "weights_B")}


def _o(tables: dict) -> dict:
    return {k: tables[k] for k in ("out_A", "out_B")}


def test_the_answers_are_rows_of_the_students_own_tables_in_the_host(solution):
    """Issue 29.2: "apple_A is a row of your out_A" was a visible assert only."""
    tables = _tables()
    with pytest.raises(CheckFailed, match="out_A 的某一行"):
        run_check("q1.apple_outputs", self_attention=solution.self_attention, apple_A=solution.apple_A,
                  apple_B=solution.apple_B, out_A=tables["out_A"] + 1, out_B=tables["out_B"])


def test_apple_values_by_hand_pass_without_a_working_function(solution):
    run_check("q1.apple_weights", self_attention=_broken,
              apple_weights_A=solution.apple_weights_A, apple_weights_B=solution.apple_weights_B,
              **_w(_tables()))
    run_check("q1.apple_outputs", self_attention=_broken,
              apple_A=solution.apple_A, apple_B=solution.apple_B, **_o(_tables()))


def test_apple_values_of_a_wrong_function_are_carried_forward():
    def no_scaling(X, W_q, W_k, W_v):
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        weights = ref.softmax(Q @ K.T)
        return weights @ V, weights

    (out_a, w_a), (out_b, w_b) = no_scaling(q1_apple.sentence("A"), *[np.eye(2)] * 3), \
        no_scaling(q1_apple.sentence("B"), *[np.eye(2)] * 3)
    run_check("q1.apple_weights", self_attention=no_scaling, apple_weights_A=w_a[0],
              apple_weights_B=w_b[2], **_w(_tables(no_scaling)))
    run_check("q1.apple_outputs", self_attention=no_scaling, apple_A=out_a[0], apple_B=out_b[2],
              **_o(_tables(no_scaling)))
    with pytest.raises(CheckFailed):  # ... but not with someone else's function
        run_check("q1.apple_outputs", self_attention=_broken, apple_A=out_a[0], apple_B=out_b[2],
                  **_o(_tables(no_scaling)))


@pytest.mark.parametrize("pick, message", [
    (lambda out, w, row: w[:, row], "权重被转置"),
    (lambda out, w, row: w[1], "“公司”那个词|“一口”那个词"),
    (lambda out, w, row: np.full(3, 1 / 3), "不对"),
])
def test_wrong_apple_weights_are_named(solution, pick, message):
    (out_a, w_a), (out_b, w_b) = q1_apple.reference("A"), q1_apple.reference("B")
    with pytest.raises(CheckFailed, match=message):
        run_check("q1.apple_weights", self_attention=_broken,
                  apple_weights_A=pick(out_a, w_a, 0), apple_weights_B=pick(out_b, w_b, 2), **_w(_tables()))


@pytest.mark.parametrize("apple_b, message", [
    (lambda s: s.apple_A, "以为“苹果”的表示与句子无关"),
    (lambda s: np.array([1.0, 1.0]), "以为“苹果”的表示与句子无关"),
    (lambda s: s.out_B[0], "“咬”那个词"),
    (lambda s: s.apple_B[:1], "长度 2"),
])
def test_wrong_apple_outputs_are_named(solution, apple_b, message):
    with pytest.raises(CheckFailed, match=message):
        run_check("q1.apple_outputs", self_attention=solution.self_attention,
                  apple_A=solution.apple_A, apple_B=apple_b(solution), **_o(_tables()))


# ------------------------------------------------------------------ hidden inputs


class _Spy:
    """A correct self_attention that records what the checks ask it."""

    def __init__(self):
        self.calls = []

    def __call__(self, X, W_q, W_k, W_v):
        self.calls.append((X, W_q, W_k, W_v))
        return ref.self_attention(X, W_q, W_k, W_v)


@pytest.mark.parametrize("name", ["q1.self_attention", "q1.value_scaling"])
def test_self_attention_inputs_leave_the_softmax_unsaturated(name):
    """The blind spot of issue 21: standard-normal X and W gave scores near ±50, a one-hot
    softmax, and a √d_model scale changed the weights by 6e-17."""
    spy = _Spy()
    for seed in range(200):
        evaluate(name, {"self_attention": spy}, seed=seed)
    for X, W_q, W_k, W_v in spy.calls:
        (d_model, d_k), d_v = W_q.shape, W_v.shape[1]
        weights = ref.softmax((X @ W_q) @ (X @ W_k).T / np.sqrt(d_k))
        assert weights.max() < 0.999 and d_model != d_k and d_model != d_v
        assert d_v != d_k or name == "q1.value_scaling"  # its first pair has d_v = d_k
        wrong = ref.softmax((X @ W_q) @ (X @ W_k).T / np.sqrt(d_model))
        assert np.abs(wrong - weights).max() > 1e-4  # √d_model shows


def test_value_scaling_draws_c_where_the_prose_says():
    spy = _Spy()
    for seed in range(200):
        evaluate("q1.value_scaling", {"self_attention": spy}, seed=seed)
    cs = [second[3][0, 0] / first[3][0, 0] for first, second in zip(spy.calls[::2], spy.calls[1::2])]
    assert len(cs) == 400
    assert all(0.25 <= c <= 0.5 or 2 <= c <= 4 for c in cs)


# ------------------------------------------------------------------ the notebook's parts


def _cells():
    import nbformat
    from helpers import ROOT

    return nbformat.read(ROOT / "source" / A / f"{A}.ipynb", as_version=4).cells


def test_the_core_comes_first_and_each_extension_is_one_block_with_its_heading():
    parts = [c.metadata.get("autograder", {}).get("part", "core") for c in _cells()]
    blocks = [p for i, p in enumerate(parts) if i == 0 or p != parts[i - 1]]
    assert blocks == ["core", "ext-temperature", "ext-sympy"]
    for cell in _cells():
        meta = cell.metadata.get("autograder", {})
        if meta.get("part", "core") != "core" and "minutes" in meta:
            heading = re.match(r"## 拓展 [A-Z]：(.+)（选做，约 (\d+) 分钟）", cell.source)
            assert heading and int(heading[2]) == meta["minutes"], cell.source[:60]


def test_the_intro_states_the_core_time_its_table_adds_up_and_the_core_meets_the_contract():
    intro = _cells()[0]
    minutes = prose_q1.part_minutes()
    assert f"必做部分：约 {minutes['core']} 分钟" in intro.source
    assert sum(core_table_minutes(intro.source)) == minutes["core"] <= 40
    assert prose_q1.core_solution_lines() <= 40
    core = [c for c in _cells() if c.metadata.get("autograder", {}).get("part", "core") == "core"
            and c.metadata.get("nbgrader", {}).get("grade")]
    auto = [c for c in core if c.cell_type == "code"]
    assert len(auto) >= 5 and sum(c.metadata.nbgrader.points for c in auto) >= 10
    assert any(c.cell_type == "markdown" for c in core)  # a written answer for the "why"


def _hidden_sweep(variant, cell: str) -> list[int]:
    """The seeds on which ``cell``'s hidden check alone passes ``variant`` (visible asserts
    ignored: the hidden inputs must see the mistake by themselves)."""
    name, keywords = CALLS[cell]
    ns = solution_namespace(A, variant)
    values = {k: getattr(ns, k) for k in keywords}
    return [seed for seed in range(200) if evaluate(name, values, seed=seed).passed]


@pytest.mark.parametrize("variant, cell", [
    pytest.param(v, cell, id=f"{v.name}-{cell}") for v in samples_q1.MISTAKES
    for cell in sorted(v.loses)
    if CALLS[cell][0] in ("q1.self_attention", "q1.value_scaling", "q1.attention_weights",
                          "q1.attention")
])
def test_the_hidden_inputs_alone_see_every_code_mistake_on_every_seed(variant, cell):
    """Issue 21's blind spots: scale_sqrt_dmodel passed test_self_attention on most seeds
    and softmax_wrong_axis on 1 of 200 when the softmax was saturated."""
    if evaluate(CALLS[cell][0], {k: getattr(solution_namespace(A, variant), k)
                                 for k in CALLS[cell][1]}, seed=0).passed:
        pytest.skip("this cell is lost through its visible asserts only")
    assert _hidden_sweep(variant, cell) == []


def test_a_wrong_hand_output_is_not_told_the_right_value():
    """What came back and what is wrong with it, never the value: the exercises edition
    shows the message as soon as a student checks a guess."""
    with pytest.raises(CheckFailed) as err:
        _hand([0.670, 0.330], q1_hand.EXACT_OUTPUT + 0.05)
    assert fmt(q1_hand.EXACT_OUTPUT) not in str(err.value) and "期望" not in str(err.value)
    assert "2.009" not in str(err.value) and "2.01" not in str(err.value)


def test_a_wrong_apple_value_is_not_told_the_right_value(solution):
    with pytest.raises(CheckFailed) as err:
        run_check("q1.apple_outputs", self_attention=_broken, apple_A=solution.apple_A + 0.1,
                  apple_B=solution.apple_B, **_o(_tables()))
    assert fmt(solution.apple_A) not in str(err.value) and "期望" not in str(err.value)
