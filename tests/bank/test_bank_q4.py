"""q4_single_token's checks on the source solution, its alternatives and its mistakes: the
sample class, the seed sweep, the core's hand steps and code checks. The extensions'
behaviours are in test_bank_q4_ext.py."""

from __future__ import annotations

import functools

import nbformat
import numpy as np
import pytest
import seeds
from helpers import ROOT, grade_namespace, hidden_calls, solution_namespace, visible_failures

from autograder.bank import Context, checks_for, get_check, q4, q4_hand, runner
from autograder.bank.lib.compare import CheckFailed
from autograder.bank.lib.misconceptions import CATALOG
from autograder.bank.runner import run_check
from autograder.engine.host.hidden import strip_markers
from autograder.samples import q4 as samples_q4

A = "q4_single_token"
CALLS = hidden_calls(A)


def _grade(ns) -> dict[str, str | None]:
    return grade_namespace(A, ns)


@functools.cache
def _namespace(variant=None):
    """Each sample student's notebook runs once per session (checks never mutate it)."""
    return solution_namespace(A, variant)


@functools.cache
def _verdicts(variant=None) -> dict[str, str | None]:
    """Each sample student graded once per session, with the default seeds."""
    return _grade(_namespace(variant))


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


def test_source_solution_passes_every_check():
    assert _verdicts() == dict.fromkeys(CALLS)


@pytest.mark.parametrize("variant", samples_q4.ALTERNATIVES, ids=lambda v: v.name)
def test_alternative_passes_every_check(variant):
    assert _verdicts(variant) == dict.fromkeys(CALLS)


@pytest.mark.parametrize("variant", samples_q4.MISTAKES, ids=lambda v: v.name)
def test_mistake_fails_exactly_its_cells_and_is_named(variant):
    verdicts = _verdicts(variant)
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
    hidden = _verdicts(variant)
    assert set(visible) <= set(variant.loses)
    printed = "\n".join(visible.get(cell) or hidden[cell] or "" for cell in variant.loses)
    for label in variant.feedback:
        assert label in printed


def test_every_named_misconception_has_a_mistake():
    labels = {label for v in samples_q4.MISTAKES for label in v.feedback}
    assert labels == {CATALOG[k].label for k in (
        "no_scaling", "q4_phantom_token", "dk_is_n", "q4_phantom_exp",
        "exp_without_normalising", "output_is_x", "q_as_v", "raw_scores", "naive_softmax_overflow",
        "linear_map_transposed", "two_token_delta_sign", "two_token_overflow", "decode_degenerate",
        "softmax_query_axis", "causal_no_mask", "cache_without_self")}


def test_the_first_and_the_last_mistake_lose_core_cells():
    """The engine test grades the last mistake and the parity test the first; under the
    default release an extension cell is not scored, so both must lose core cells."""
    core = {c for c in CALLS if not c.startswith(("test_two", "test_decode", "test_kv",
                                                  "test_softmax_symbolic", "test_residual"))}
    for variant in (samples_q4.MISTAKES[0], samples_q4.MISTAKES[-1]):
        assert variant.loses <= core, variant.name


#: Samples whose checks meet NaN, overflow warnings, exceptions and random draws.
NOISY = [None, *(v for v in samples_q4.MISTAKES if v.name in (
    "naive_softmax", "two_token_overflow", "cache_without_self", "raw_score_weight",
    "decode_no_scaling", "hand_phantom_exp"))]


@pytest.mark.parametrize("variant", NOISY, ids=lambda v: v.name if v else "perfect")
def test_checks_write_nothing_to_stderr(variant, capfd):
    _grade(_namespace(variant))
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("variant", NOISY, ids=lambda v: v.name if v else "perfect")
def test_same_seed_same_verdict(variant, monkeypatch):
    ns = _namespace(variant)
    monkeypatch.setenv("AUTOGRADER_STUDENT", "student-42")
    first = _grade(ns)
    assert _grade(ns) == first
    monkeypatch.setenv("AUTOGRADER_STUDENT", "student-43")
    assert {c: m is None for c, m in _grade(ns).items()} == {c: m is None for c, m in first.items()}


def test_explicit_seed_gives_identical_messages():
    wrong = _namespace(_mistake("raw_score_weight"))
    chk = get_check("q4.attention_output")
    messages = []
    for _ in range(2):
        with pytest.raises(CheckFailed) as err:
            chk.func(Context(chk.name, seed=7), single_token_attention=wrong.single_token_attention)
        messages.append(str(err.value))
    assert messages[0] == messages[1]


# ------------------------------------------------------------------ every mistake, every seed


@pytest.mark.parametrize("variant", samples_q4.MISTAKES, ids=lambda v: v.name)
def test_every_mistake_loses_its_cells_on_200_seeds_by_the_hidden_checks_alone(variant, monkeypatch):
    """tests/seeds.py's sweep with the visible asserts switched off: the hidden inputs see
    each mistake by themselves on every one of 200 seeds (a visible assert is the
    student's to delete). A cell lost by its hidden check is lost, so this implies the
    contract's sweep, where a failing visible assert also loses the cell."""
    monkeypatch.setattr(seeds, "visible_failures", lambda *args: {})
    monkeypatch.setattr(seeds, "solution_namespace", lambda a, v=None: _namespace(v))
    assert seeds.surviving_seeds(A, variant) == dict.fromkeys(variant.loses, [])


def _exp_only(x, W_q, W_k):
    x = np.atleast_2d(x)
    return np.exp((x @ W_q) @ (x @ W_k).T / np.sqrt(W_k.shape[1]))


def test_the_score_range_is_what_catches_an_unnormalised_weight(monkeypatch):
    """Shown to fail when the guard is removed: with the one scaled score near 0 instead
    of a magnitude in [1.5, 4], a weight of e^s without the division passes the weights
    check on every seed; with the range it fails on every seed."""
    def passes(seed: int) -> bool:
        return runner.evaluate("q4.weights", {"single_token_weights": _exp_only}, seed=seed).passed

    assert not any(passes(seed) for seed in range(200))
    monkeypatch.setattr(q4, "_score_size", lambda ctx, sign=None: 1e-12)
    # the 2-3 token probe has its own spread; n = 1 alone is what this guard is about
    monkeypatch.setattr(q4, "_tokens", lambda ctx: (np.zeros((1, 2)), np.eye(2), np.eye(2), np.eye(2)))
    assert all(passes(seed) for seed in range(5))


def test_hidden_scores_lie_where_the_wrong_weights_are_far_from_right():
    for seed in range(200):
        ctx = Context("q4.weights", seed=seed)
        for _ in range(4):
            x, W_q, W_k, _ = q4._inputs(ctx)
            s = abs(float(q4._score(x, W_q, W_k)[0, 0]))
            assert q4.SCORE_LOW - 1e-9 <= s <= q4.SCORE_HIGH + 1e-9


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


# ------------------------------------------------------------------ the hand steps


HAND = {"exps_1": np.array([np.exp(1 / np.sqrt(2))]), "total_1": np.exp(1 / np.sqrt(2)),
        "weights_1": np.array([1.0]), "output_1": np.array([2.0, 0.0])}
STEP_OF = {"weights_1": "q4.hand_weights", "output_1": "q4.hand_output"}


def _hand(name: str, **changed):
    keywords = next(k for n, k in CALLS.values() if n == name)
    return {k: changed.get(k, HAND[k]) for k in keywords}


def test_the_hand_steps_are_the_two_new_ones():
    """The lecture's own score, scaled score, exp and total (1, 0.707, 2.028) earn no
    point of their own (issue 30): the weight and the output are the graded hand steps."""
    hand = {name for name, _ in CALLS.values() if name.startswith("q4.hand_")}
    assert hand == {*STEP_OF.values(), "q4.hand_example"}


def test_the_exact_and_the_rounded_hand_values_pass():
    rounded = {"exps_1": [2.028], "total_1": 2.028, "weights_1": [1.0], "output_1": [2.0, 0.0]}
    for name in STEP_OF.values():
        run_check(name, **_hand(name))
        run_check(name, **_hand(name, **rounded))


@pytest.mark.parametrize("key, value, words", [
    ("weights_1", np.array([np.exp(1 / np.sqrt(2))]), CATALOG["exp_without_normalising"].label),
    ("weights_1", np.array([1 / np.sqrt(2)]), CATALOG["raw_scores"].label),
    ("weights_1", np.array([0.670]), q4_hand.PHANTOM_EXP.label),
    ("weights_1", np.array([0.670, 0.330]), q4_hand.PHANTOM_TOKEN.label),
    ("weights_1", np.array([[1.0]]), "一维数组"),
    ("weights_1", np.array([np.nan]), "NaN"),
    ("output_1", np.array([1.0, 0.0]), q4_hand.OUTPUT_IS_X.label),
    ("output_1", np.array([1.340, 0.660]), q4_hand.PHANTOM_TOKEN.label),
    ("output_1", np.array([[2.0, 0.0]]), "一维数组"),
    ("output_1", np.array([2.0, 0.0, 0.0]), "长度 2"),
])
def test_each_hand_step_names_its_misconception(key, value, words):
    _fails(STEP_OF[key], words, **_hand(STEP_OF[key], **{key: value}))


def test_the_weight_is_carried_only_from_well_formed_working():
    """Shown to fail without the guard: a weight computed from the student's own exps_1 /
    total_1 passes only when total_1 is their sum; with the lecture's total 3.028 (x₂'s
    e⁰ kept) the carried 0.670 fails, named, and so does the unnormalised exp."""
    e = np.exp(1 / np.sqrt(2))
    run_check("q4.hand_weights", exps_1=[2.03], total_1=2.03, weights_1=[1.0])
    run_check("q4.hand_weights", exps_1=[np.e], total_1=np.e, weights_1=[1.0])  # no scaling: still 1
    _fails("q4.hand_weights", q4_hand.PHANTOM_EXP.label, exps_1=[e], total_1=e + 1, weights_1=[e / (e + 1)])
    _fails("q4.hand_weights", "不是 exps_1 各项之和", exps_1=[e], total_1=2.5, weights_1=[e / 2.5])
    _fails("q4.hand_weights", exps_1=[-e], total_1=-e, weights_1=[1.0 + 0.1])
    _fails("q4.hand_weights", exps_1=[2.028, 1.0], total_1=3.028, weights_1=[0.670, 0.330])


def test_the_output_is_carried_from_the_students_weight():
    run_check("q4.hand_output", weights_1=np.array([0.67]), output_1=np.array([1.34, 0.0]))
    _fails("q4.hand_output", weights_1=np.array([0.67]), output_1=np.array([2.0, 0.5]))


def test_the_lecture_two_token_row_is_not_carried_forward():
    """Redoing the lecture's two-token row earns neither hand step."""
    row = {"exps_1": [2.028, 1.0], "total_1": 3.028, "weights_1": [0.670, 0.330],
           "output_1": [1.340, 0.660]}
    for name in STEP_OF.values():
        _fails(name, **_hand(name, **row))


@pytest.mark.parametrize("key, value", [
    ("weights_1", [2.028]), ("output_1", [1.0, 0.0]), ("weights_1", [0.670]),
])
def test_hand_messages_never_state_the_right_value(key, value):
    message = _fails(STEP_OF[key], **_hand(STEP_OF[key], **{key: value}))
    assert "期望" not in message
    exact = {"weights_1": "[1.]", "output_1": "[2., 0.]"}[key]
    assert exact not in message, message


# ------------------------------------------------------------------ the code confirms the hand


def test_hand_example_passes_when_code_and_hand_agree(solution):
    run_check("q4.hand_example", single_token_weights=solution.single_token_weights,
              single_token_attention=solution.single_token_attention, weights_1=[1.0],
              output_1=[2.0, 0.0])


def test_hand_example_fails_when_they_disagree(solution):
    _fails("q4.hand_example", "对不上", single_token_weights=solution.single_token_weights,
           single_token_attention=solution.single_token_attention, weights_1=[0.670],
           output_1=[2.0, 0.0])


def test_hand_example_fails_when_code_is_wrong_on_the_example(solution):
    wrong = _namespace(_mistake("raw_score_weight"))
    _fails("q4.hand_example", CATALOG["raw_scores"].label, single_token_weights=wrong.single_token_weights,
           single_token_attention=wrong.single_token_attention, weights_1=[0.707],
           output_1=[1.414, 0.0])


# ------------------------------------------------------------------ the code for one token


def test_weights_must_be_a_one_by_one_array():
    _fails("q4.weights", "1×1", single_token_weights=lambda x, W_q, W_k: 1.0)


def test_weights_exp_without_normalising_is_named():
    def exp_only(x, W_q, W_k):
        x = np.atleast_2d(x)
        return np.exp((x @ W_q) @ (x @ W_k).T / np.sqrt(W_k.shape[1]))

    _fails("q4.weights", CATALOG["exp_without_normalising"].label, single_token_weights=exp_only)


def test_the_weight_messages_never_print_the_right_weight():
    """The right weight is the same on every input: printing it would give it away."""
    message = _fails("q4.weights", single_token_weights=_namespace(_mistake("raw_score_weight")
                                                                   ).single_token_weights)
    assert "期望" not in message and "1.0" not in message.replace("1e", "")


def test_weights_extreme_names_overflow_in_the_output_too(solution):
    def naive_output(x, W_q, W_k, W_v):
        x = np.atleast_2d(x)
        e = np.exp((x @ W_q) @ (x @ W_k).T / np.sqrt(W_k.shape[1]))
        return (e / e.sum()) @ (x @ W_v)

    _fails("q4.weights_extreme", CATALOG["naive_softmax_overflow"].label,
           single_token_weights=solution.single_token_weights, single_token_attention=naive_output)


def test_hard_coded_hand_example_earns_nothing_for_the_function():
    _fails("q4.attention_output", single_token_attention=lambda *args: np.array([[2.0, 0.0]]))
    _fails("q4.weights", single_token_weights=lambda *args: np.array([[0.707]]))


def test_input_shapes_rejects_a_flat_output_for_flat_x(solution):
    def flat(x, W_q, W_k, W_v):
        return np.asarray(x) @ W_v

    _fails("q4.input_shapes", r"\(1, d_v\)", single_token_weights=solution.single_token_weights,
           single_token_attention=flat)


def test_qk_invariance_does_not_judge_values():
    """Forgetting W_v is the output cell's business: the output still ignores W_q and W_k."""
    run_check("q4.qk_invariance", single_token_attention=lambda x, W_q, W_k, W_v: np.atleast_2d(x))


def test_qk_invariance_names_an_output_that_follows_the_score():
    def scaled_by_score(x, W_q, W_k, W_v):
        x = np.atleast_2d(x)
        return np.tanh((x @ W_q) @ (x @ W_k).T) @ (x @ W_v)

    message = _fails("q4.qk_invariance", q4.OUTPUT_DEPENDS_ON_QK.label,
                     single_token_attention=scaled_by_score)
    assert "x·W_v" not in message


@pytest.mark.parametrize("wrong, label", [
    (lambda W_q, W_k, W_v: np.asarray(W_v).T, "等价线性映射被转置"),
    (lambda W_q, W_k, W_v: np.eye(len(W_v)), CATALOG["output_is_x"].label),
    (lambda W_q, W_k, W_v: np.asarray(W_q), "把 Q 当成了 V"),
])
def test_linear_map_mistakes_are_named(wrong, label):
    _fails("q4.linear_map", label, equivalent_linear_map=wrong)


def test_no_misconception_text_states_the_core_answer():
    """A misconception says what is wrong with what came back: none of q4's own says the
    weight is 1, the output is x·W_v or M is W_v."""
    from autograder.bank import q4_ext

    mine = [q4_hand.PHANTOM_TOKEN, q4_hand.PHANTOM_EXP, q4_hand.OUTPUT_IS_X, q4.OUTPUT_DEPENDS_ON_QK, q4.MAP_TRANSPOSED, q4_ext.DELTA_SIGN,
            q4_ext.TWO_TOKEN_OVERFLOW, q4_ext.DECODE_DEGENERATE, q4_ext.CAUSAL_NO_MASK,
            q4_ext.CACHE_WITHOUT_SELF]
    for entry in mine:
        text = entry.describe()
        assert not any(w in text for w in ("恒为 1", "输出 = x·W_v", "输出恒为", "就是 W_v", "x₁·W_v", "σ(Δs)")), text


def test_the_visible_transposed_label_needs_the_transposed_shape():
    """A visible 【label】 only when its variant reproduces the value: M = I (output = x)
    has the wrong shape too but is not named transposed; before this test the one shape
    assert named 【等价线性映射被转置】 for any wrong shape."""
    assert q4.MAP_TRANSPOSED.label not in visible_failures(A, _mistake("output_is_x")).get("test_linear_map", "")
    assert q4.MAP_TRANSPOSED.label in visible_failures(A, _mistake("linear_map_transposed"))["test_linear_map"]
