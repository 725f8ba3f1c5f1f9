"""q4_single_token's checks on the source solution, its alternatives and its mistakes."""

from __future__ import annotations

import functools

import nbformat
import numpy as np
import pytest
import sympy as sp
from helpers import ROOT, grade_namespace, hidden_calls, solution_namespace, visible_failures

from autograder.bank import Context, checks_for, get_check, run_check
from autograder.compare import CheckFailed
from autograder.misconceptions import CATALOG
from autograder.notebooks import strip_markers
from autograder.samples import q4 as samples_q4

A = "q4_single_token"
CALLS = hidden_calls(A)
SAMPLES = [None, *samples_q4.ALTERNATIVES, *samples_q4.MISTAKES]
S = sp.Symbol("s")


def _grade(ns) -> dict[str, str | None]:
    return grade_namespace(A, ns)


@functools.cache
def _namespace(variant=None):
    """Each sample student's notebook runs once per session (checks never mutate it)."""
    return solution_namespace(A, variant)


@pytest.fixture(scope="module")
def solution():
    return _namespace()


def _mistake(name: str):
    return next(v for v in samples_q4.MISTAKES if v.name == name)


def _fails(name: str, match: str | None = None, **values) -> str:
    with pytest.raises(CheckFailed, match=match) as err:
        run_check(name, **values)
    return str(err.value)


# ------------------------------------------------------------------ the sample class


def test_every_check_has_a_grade_cell():
    assert {name for name, _ in CALLS.values()} == {c.name for c in checks_for(A)}


def test_source_notebook_runs_top_to_bottom_with_its_tests():
    """Every test cell, visible asserts and hidden check, passes where it stands."""
    nb = nbformat.read(ROOT / "source" / A / f"{A}.ipynb", as_version=4)
    env: dict = {"__name__": "__student__"}
    for cell in nb.cells:
        if cell.cell_type == "code" and "plt." not in cell.source:
            exec(compile(strip_markers(cell.source), f"<{A}>", "exec"), env)


def test_source_solution_passes_every_check(solution):
    assert _grade(solution) == dict.fromkeys(CALLS)


@pytest.mark.parametrize("variant", samples_q4.ALTERNATIVES, ids=lambda v: v.name)
def test_alternative_passes_every_check(variant):
    assert _grade(_namespace(variant)) == dict.fromkeys(CALLS)


@pytest.mark.parametrize("variant", samples_q4.MISTAKES, ids=lambda v: v.name)
def test_mistake_fails_exactly_its_cells_and_is_named(variant):
    verdicts = _grade(_namespace(variant))
    assert {cell for cell, message in verdicts.items() if message} == set(variant.loses)
    text = "\n".join(m for m in verdicts.values() if m)
    for label in variant.feedback:
        assert label in text


@pytest.mark.parametrize("variant", samples_q4.MISTAKES, ids=lambda v: v.name)
def test_mistake_as_nbgrader_runs_it(variant):
    """In a real test cell the visible asserts run first: a failing visible assert loses
    the cell and its message is all the student sees. So a mistake may fail visibly only
    in cells it loses anyway, and the label must be in what the lost cells print."""
    visible = visible_failures(A, variant)
    hidden = _grade(_namespace(variant))
    assert set(visible) <= set(variant.loses)
    printed = "\n".join(visible.get(cell) or hidden[cell] or "" for cell in variant.loses)
    for label in variant.feedback:
        assert label in printed


def test_every_named_misconception_has_a_mistake():
    labels = {label for v in samples_q4.MISTAKES for label in v.feedback}
    assert labels == {CATALOG[k].label for k in
                      ("no_scaling", "output_is_x", "q_as_v", "raw_scores", "naive_softmax_overflow",
                       "two_token_delta_sign", "two_token_overflow", "decode_degenerate",
                       "softmax_query_axis", "causal_no_mask", "cache_without_self")}


@pytest.mark.parametrize("variant", SAMPLES, ids=lambda v: v.name if v else "perfect")
def test_checks_write_nothing_to_stderr(variant, capfd):
    _grade(_namespace(variant))
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("variant", SAMPLES, ids=lambda v: v.name if v else "perfect")
def test_same_seed_same_verdict(variant, monkeypatch):
    ns = _namespace(variant)
    monkeypatch.setenv("AUTOGRADER_STUDENT", "student-42")
    first = _grade(ns)
    assert _grade(ns) == first
    monkeypatch.setenv("AUTOGRADER_STUDENT", "student-43")
    assert {c: m is None for c, m in _grade(ns).items()} == {c: m is None for c, m in first.items()}


def test_explicit_seed_gives_identical_messages(solution):
    wrong = _namespace(_mistake("raw_score_weight"))
    chk = get_check("q4.attention_output")
    messages = []
    for _ in range(2):
        with pytest.raises(CheckFailed) as err:
            chk.func(Context(chk.name, seed=7), single_token_attention=wrong.single_token_attention)
        messages.append(str(err.value))
    assert messages[0] == messages[1]


# ------------------------------------------------------------------ wrong kinds


@pytest.mark.parametrize("bad", [None, "single_token_attention"], ids=["None", "string"])
@pytest.mark.parametrize("cell", sorted(CALLS))
def test_wrong_kind_is_a_clear_check_failure(cell, bad):
    name, keywords = CALLS[cell]
    message = _fails(name, **dict.fromkeys(keywords, bad))
    assert message.startswith(get_check(name).title)
    assert "检查时出错" not in message and "Traceback" not in message


@pytest.mark.parametrize("returned, words", [(None, "None"), ("1.0", "数值数组")])
@pytest.mark.parametrize("name, keyword", [
    ("q4.weights", "single_token_weights"),
    ("q4.attention_output", "single_token_attention"),
    ("q4.linear_map", "equivalent_linear_map"),
    ("q4.two_token_weight", "two_token_weight"),
    ("q4.decode_step", "decode_step"),
    ("q4.kv_cache_decode", "kv_cache_decode"),
])
def test_functions_returning_wrong_kinds_are_explained(name, keyword, returned, words):
    _fails(name, words, **{keyword: lambda *args: returned})


def test_student_exception_is_reported_in_chinese():
    def broken(x, W_q, W_k):
        raise ValueError("shapes not aligned")

    _fails("q4.weights", "运行出错：ValueError", single_token_weights=broken)


# ------------------------------------------------------------------ behaviours


def test_weights_must_be_a_one_by_one_array():
    _fails("q4.weights", "1×1", single_token_weights=lambda x, W_q, W_k: 1.0)


def test_weights_exp_without_normalising_is_named():
    def exp_only(x, W_q, W_k):
        x = np.atleast_2d(x)
        return np.exp((x @ W_q) @ (x @ W_k).T / np.sqrt(W_k.shape[1]))

    _fails("q4.weights", CATALOG["exp_without_normalising"].label, single_token_weights=exp_only)


def test_weights_extreme_names_overflow_in_the_output_too(solution):
    def naive_output(x, W_q, W_k, W_v):
        x = np.atleast_2d(x)
        e = np.exp((x @ W_q) @ (x @ W_k).T / np.sqrt(W_k.shape[1]))
        return (e / e.sum()) @ (x @ W_v)

    _fails("q4.weights_extreme", CATALOG["naive_softmax_overflow"].label,
           single_token_weights=solution.single_token_weights, single_token_attention=naive_output)


def test_hard_coded_hand_example_earns_nothing_for_the_function(solution):
    run_check("q4.hand_example", hand_scores=np.array([[0.707]]), hand_weight=np.array([[1.0]]),
              hand_output=np.array([[2.0, 0.0]]))
    _fails("q4.attention_output", single_token_attention=lambda *args: np.array([[2.0, 0.0]]))


def test_input_shapes_rejects_a_flat_output_for_flat_x(solution):
    def flat(x, W_q, W_k, W_v):
        return np.asarray(x) @ W_v

    _fails("q4.input_shapes", r"\(1, d_v\)", single_token_weights=solution.single_token_weights,
           single_token_attention=flat)


def test_qk_invariance_does_not_judge_values():
    """Forgetting W_v is the output cell's business: the output still ignores W_q and W_k."""
    run_check("q4.qk_invariance", single_token_attention=lambda x, W_q, W_k, W_v: np.atleast_2d(x))


@pytest.mark.parametrize("wrong, label", [
    (lambda W_q, W_k, W_v: np.asarray(W_v).T, "等价线性映射被转置"),
    (lambda W_q, W_k, W_v: np.eye(len(W_v)), "忘了乘 W_v"),
    (lambda W_q, W_k, W_v: np.asarray(W_q), "把 Q 当成了 V"),
])
def test_linear_map_mistakes_are_named(wrong, label):
    _fails("q4.linear_map", label, equivalent_linear_map=wrong)


@pytest.mark.parametrize("form", [
    1, sp.Integer(1), sp.exp(S) / sp.exp(S), sp.Matrix([[1]]),
    sp.exp(sp.Symbol("s", real=True)) / sp.Add(sp.exp(sp.Symbol("s", real=True))),
    sp.Mul(sp.exp(S), sp.Pow(sp.exp(S), -1), evaluate=False),
    (sp.cosh(S) + sp.sinh(S)) / sp.exp(S),
])
def test_softmax_symbolic_accepts_any_equivalent_form(form):
    run_check("q4.softmax_symbolic", softmax_single_symbolic=form)


@pytest.mark.parametrize("form, words", [
    (S, CATALOG["raw_scores"].label), (sp.exp(S), CATALOG["exp_without_normalising"].label),
    (1.0, "浮点数"), (sp.Rational(1, 2), "不等价"), (sp.Symbol("t"), "未预期的符号"),
])
def test_softmax_symbolic_wrong_answers_are_explained(form, words):
    _fails("q4.softmax_symbolic", words, softmax_single_symbolic=form)


def _symbolic_inputs():
    x = sp.Matrix([sp.symbols("x1 x2")])
    W = {w: sp.Matrix(2, 2, sp.symbols(f"{w}11 {w}12 {w}21 {w}22")) for w in "qkv"}
    return x, W


@pytest.mark.parametrize("make", [
    lambda x, W: sp.zeros(1, 2),
    lambda x, W: sp.zeros(2, 1),
    lambda x, W: (sp.sin(x[0]) ** 2 + sp.cos(x[0]) ** 2 - 1) * x * W["v"],
    lambda x, W: [[0, 0]],
])
def test_residual_symbolic_accepts_any_form_of_zero(make):
    x, W = _symbolic_inputs()
    run_check("q4.residual_symbolic", symbolic_single_token_residual=make(x, W))


@pytest.mark.parametrize("make, words", [
    (lambda x, W: x - x * W["v"], CATALOG["output_is_x"].label),
    (lambda x, W: x * W["q"] - x * W["v"], CATALOG["q_as_v"].label),
    (lambda x, W: ((x * W["q"] * (x * W["k"]).T)[0, 0] / sp.sqrt(2) - 1) * x * W["v"],
     CATALOG["raw_scores"].label),
    (lambda x, W: sp.zeros(2, 2), "形状"),
    (lambda x, W: sp.Matrix([[0.0, 0]]), "浮点数"),
])
def test_residual_symbolic_wrong_answers_are_explained(make, words):
    x, W = _symbolic_inputs()
    _fails("q4.residual_symbolic", words, symbolic_single_token_residual=make(x, W))


def test_residual_symbols_are_matched_by_name():
    x = sp.Matrix([sp.symbols("x1 x2", real=True)])
    W_v = sp.Matrix(2, 2, sp.symbols("v11 v12 v21 v22", positive=True))
    run_check("q4.residual_symbolic", symbolic_single_token_residual=x * W_v - x * W_v)
    _fails("q4.residual_symbolic", CATALOG["output_is_x"].label,
           symbolic_single_token_residual=x - x * W_v)


# ------------------------------------------------------------------ the hand example


HAND = {"hand_scores": np.array([[1 / np.sqrt(2)]]), "hand_weight": np.array([[1.0]]),
        "hand_output": np.array([[2.0, 0.0]])}


@pytest.mark.parametrize("key, value, words", [
    ("hand_scores", np.array([[1.0]]), CATALOG["no_scaling"].label),
    ("hand_scores", np.array([[0.5]]), CATALOG["divide_by_dk"].label),
    ("hand_scores", 0.7071, "二维数组"),
    ("hand_weight", np.array([[0.670]]), "分走"),
    ("hand_weight", np.array([[0.7071]]), CATALOG["raw_scores"].label),
    ("hand_weight", np.array([[np.exp(1 / np.sqrt(2))]]), CATALOG["exp_without_normalising"].label),
    ("hand_output", np.array([[1.0, 0.0]]), CATALOG["output_is_x"].label),
    ("hand_output", np.array([[1.340, 0.660]]), "分走"),
    ("hand_output", np.array([2.0, 0.0]), "二维数组"),
])
def test_hand_example_wrong_answers_are_explained(key, value, words):
    _fails("q4.hand_example", words, **{**HAND, key: value})


def test_hand_example_accepts_the_lecture_precision():
    run_check("q4.hand_example", **{**HAND, "hand_scores": np.array([[0.707]])})


# ------------------------------------------------------------------ two tokens


def _stable_sigmoid(d):
    d = np.asarray(d, dtype=float)
    e = np.exp(-np.abs(d))
    return np.where(d >= 0, 1 / (1 + e), e / (1 + e))


@pytest.mark.parametrize("right", [
    _stable_sigmoid,
    lambda d: np.exp(-np.logaddexp(0.0, -np.asarray(d))),
    lambda d: 1 / (1 + np.exp(-np.asarray(d))),  # overflows to inf on the way, ends exact
    lambda d: (np.tanh(np.asarray(d) / 2) + 1) / 2,
    lambda d: list(_stable_sigmoid(d).tolist()),
])
def test_two_token_weight_accepts_correct_forms(right):
    run_check("q4.two_token_weight", two_token_weight=right)


@pytest.mark.parametrize("wrong, words", [
    (lambda d: _stable_sigmoid(-np.asarray(d)), "Δs 的方向弄反了"),
    (lambda d: np.exp(d) / (np.exp(d) + 1), "两个 token 的权重数值溢出"),
    (lambda d: np.exp(d), CATALOG["exp_without_normalising"].label),
    (lambda d: np.ones_like(d), "不一致"),
    (lambda d: float(_stable_sigmoid(np.ravel(d))[0]), "形状"),
    (lambda d: _stable_sigmoid(np.asarray(d) / np.sqrt(2)), "不一致"),
])
def test_two_token_weight_wrong_answers_are_explained(wrong, words):
    _fails("q4.two_token_weight", words, two_token_weight=wrong)


D = sp.Symbol("delta")
S1, S2 = sp.symbols("s1 s2")


@pytest.mark.parametrize("form", [
    1 / (1 + sp.exp(-D)), sp.exp(D) / (sp.exp(D) + 1), (sp.tanh(D / 2) + 1) / 2,
    (sp.exp(S1) / (sp.exp(S1) + sp.exp(S2))).subs(S1, S2 + D),
    1 / (1 + sp.exp(-sp.Symbol("delta", real=True))),
])
def test_two_token_symbolic_accepts_any_equivalent_form(form):
    run_check("q4.two_token_symbolic", two_token_weight_symbolic=form)


@pytest.mark.parametrize("form, words", [
    (1 / (1 + sp.exp(D)), "Δs 的方向弄反了"),
    (sp.exp(D), CATALOG["exp_without_normalising"].label),
    (sp.exp(S1) / (sp.exp(S1) + sp.exp(S2)), "s1, s2"),
    (1 / (1 + sp.exp(-1.0 * D)), "浮点数"),
    (sp.Rational(1, 2), "不等价"),
    ("1/(1+exp(-delta))", "字符串"),
])
def test_two_token_symbolic_wrong_answers_are_explained(form, words):
    _fails("q4.two_token_symbolic", words, two_token_weight_symbolic=form)


# ------------------------------------------------------------------ decoding with a KV cache


def _decode(q, K, V, axis=-1, scale=True):
    q, K, V = np.atleast_2d(q), np.asarray(K), np.asarray(V)
    s = q @ K.T / (np.sqrt(K.shape[-1]) if scale else 1)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=axis, keepdims=True)) @ V


@pytest.mark.parametrize("wrong, words", [
    (lambda q, K, V: np.asarray(V)[-1:], "以为一步解码也退化成只看自己"),
    (lambda q, K, V: _decode(q, K, V, axis=0), CATALOG["softmax_query_axis"].label),
    (lambda q, K, V: _decode(q, K, V, scale=False), CATALOG["no_scaling"].label),
    (lambda q, K, V: np.asarray(V).mean(axis=0, keepdims=True), "不一致"),
    (lambda q, K, V: _decode(q, K, V)[0], "形状"),
])
def test_decode_step_wrong_answers_are_explained(wrong, words):
    _fails("q4.decode_step", words, decode_step=wrong)


def test_decode_step_checks_the_degenerate_cache_too():
    """Right for t > 1, wrong for t = 1: the one-token cache is part of the check."""
    def no_single(q, K, V):
        return np.zeros((1, np.shape(V)[1])) if np.shape(K)[0] == 1 else _decode(q, K, V)

    _fails("q4.decode_step", "t=1", decode_step=no_single)


def _kv(decode=_decode, cache=lambda K, V, i: (K[: i + 1], V[: i + 1])):
    def kv_cache_decode(X, W_q, W_k, W_v):
        X = np.asarray(X, dtype=float)
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        return np.vstack([decode(Q[i : i + 1], *cache(K, V, i)) for i in range(len(X))])

    return kv_cache_decode


def test_kv_cache_decode_accepts_the_loop_and_the_mask(solution):
    run_check("q4.kv_cache_decode", kv_cache_decode=_kv())
    run_check("q4.kv_cache_decode", kv_cache_decode=solution.kv_cache_decode)


@pytest.mark.parametrize("wrong, words", [
    (_kv(cache=lambda K, V, i: (K, V)), "解码时看到了后面的 token"),
    (_kv(cache=lambda K, V, i: (K[:i], V[:i])), "缓存里漏了当前 token 自己"),
    (lambda X, W_q, W_k, W_v: (np.asarray(X) @ W_v)[1:], "缓存里漏了当前 token 自己"),
    (_kv(decode=lambda q, K, V: np.asarray(V)[-1:]), "以为一步解码也退化成只看自己"),
    (_kv(decode=lambda q, K, V: _decode(q, K, V, axis=0)), CATALOG["softmax_query_axis"].label),
    (_kv(cache=lambda K, V, i: (K[max(i, 1) - 1 : i + 1], V[max(i, 1) - 1 : i + 1]) if i else
         (K[:2], V[:2])), "位置 1 的输出不对"),
])
def test_kv_cache_decode_wrong_answers_are_explained(wrong, words):
    _fails("q4.kv_cache_decode", words, kv_cache_decode=wrong)
