"""Fast tests of the q5_cost_scaling check bank (no kernels, no nbgrader).

The reference solution is the source notebook's own solution cells, run in-process;
sample students are the same cells with the bank's ``ALTERNATIVES``/``MISTAKES`` edits.
The last part proves the contract of issue 21 for q5: a 40-minute core that meets the
points rule alone, marked and timed extensions, no answer before it is asked, and every
named mistake losing its cells on 200 seeds, through the hidden checks alone as well.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import seeds
import sympy as sp
from helpers import visible_failures

from autograder.authoring import cells as nbs
from autograder.bank import checks_for, q5, q5_ext, runner
from autograder.bank.lib.compare import CheckFailed
from autograder.bank.runner import evaluate, run_check
from autograder.engine.host import hidden
from autograder.samples import q5 as samples_q5

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "source" / "q5_cost_scaling" / "q5_cost_scaling.ipynb"
ASSIGNMENT = "q5_cost_scaling"

#: check name -> the student names it receives; its grade cell is "test_" + behaviour.
ARGS = {
    "q5.entries_2": ("entries_2",),
    "q5.entries_1000": ("entries_1000",),
    "q5.table_ratio": ("table_ratio",),
    "q5.score_table_entries": ("score_table_entries",),
    "q5.cost_ratio": ("cost_ratio",),
    "q5.score_table_bytes": ("score_table_bytes",),
    "q5.count_tokens": ("count_tokens",),
    "q5.token_multipliers": ("p_zh", "p_mixed", "token_multiplier"),
    "q5.attention_multipliers": ("attention_zh", "attention_mixed", "attention_multiplier"),
    "q5.layer_flops": ("layer_flops",),
    "q5.crossover_length": ("crossover_length",),
    "q5.layer_ratio": ("layer_ratio",),
    "q5.kv_cache_bytes": ("kv_cache_bytes",),
    "q5.relative_attention_cost": ("relative_attention_cost",),
    "q5.loglog_slope": ("loglog_slope",),
    "q5.measure_attention_seconds": ("measure_attention_seconds",),
}
#: Checks of values the student writes down (no function to call).
VALUES = {"q5.entries_2", "q5.entries_1000", "q5.table_ratio", "q5.token_multipliers",
          "q5.attention_multipliers", "q5.crossover_length", "q5.layer_ratio"}
SYMBOLIC = {"q5.crossover_length", "q5.layer_ratio"}
FUNCTIONS = sorted(set(ARGS) - VALUES)
CELL = {name: "test_" + name.split(".", 1)[1] for name in ARGS}
EXECUTED = {"imports", "given_attention", "given_tokenizer", "parallel_texts"}
CORE_CELLS = {CELL[n] for n in list(ARGS)[:9]}


@functools.cache
def _namespace(variant: nbs.Variant | None = None) -> dict:
    """Run the imports, the given cells and every solution cell (edited by ``variant``);
    cached per variant (checks only call the functions, they never change the namespace)."""
    nb = nbs.read(SOURCE)
    edits = variant.edits if variant else ()
    ns: dict = {"display": lambda *a, **k: None}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in nb.cells:
            cid = nbs.grade_id(cell)
            if cell.cell_type != "code" or not (cid in EXECUTED or nbs.is_solution_cell(cell)):
                continue
            text = cell.source
            for edit in edits:
                if edit.cell == cid:
                    assert text.count(edit.old) == 1, (variant.name, edit.old)
                    text = text.replace(edit.old, edit.new)
            exec(compile(hidden.strip_markers(text), f"<{cid}>", "exec"), ns)
    return ns


def _values(ns: dict, name: str) -> dict:
    return {arg: ns[arg] for arg in ARGS[name]}


def _verdict(ns: dict, name: str) -> str | None:
    try:
        run_check(name, **_values(ns, name))
    except CheckFailed as err:
        return str(err)
    return None


def _fails(name: str, **values) -> str:
    with pytest.raises(CheckFailed) as err:
        run_check(name, **values)
    return str(err.value)


@pytest.fixture(scope="module")
def reference() -> dict:
    return _namespace()


def test_every_check_is_listed():
    assert {c.name for c in checks_for(ASSIGNMENT)} == set(ARGS)
    cells = {nbs.grade_id(c) for c in nbs.read(SOURCE).cells
             if c.get("metadata", {}).get("nbgrader", {}).get("grade") and c.cell_type == "code"}
    assert cells == set(CELL.values())


@pytest.mark.parametrize("name", sorted(ARGS))
def test_reference_passes(reference, name, capsys):
    assert _verdict(reference, name) is None
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("variant", samples_q5.ALTERNATIVES, ids=lambda v: v.name)
def test_alternative_passes_every_check(variant):
    ns = _namespace(variant)
    failed = {name: msg for name in ARGS if (msg := _verdict(ns, name))}
    assert failed == {}


@pytest.mark.parametrize("variant", samples_q5.MISTAKES, ids=lambda v: v.name)
def test_mistake_loses_only_its_cells_and_names_label(variant, capsys):
    ns = _namespace(variant)
    verdicts = {name: _verdict(ns, name) for name in ARGS}
    lost = {CELL[name] for name, msg in verdicts.items() if msg}
    assert lost == set(variant.loses)
    messages = "\n".join(msg for msg in verdicts.values() if msg)
    for label in variant.feedback:
        assert f"【{label}】" in messages
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("name", sorted(ARGS))
@pytest.mark.parametrize("bad", [None, "16", sp.true, [1, 2]], ids=["None", "str", "sympy-bool", "list"])
def test_wrong_kind_values_fail_clearly(name, bad):
    assert _fails(name, **{arg: bad for arg in ARGS[name]}).strip()


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("returned", [None, "16", [1, 2, 3]], ids=["None", "str", "list"])
def test_functions_returning_wrong_kinds_fail_clearly(name, returned, capsys):
    message = _fails(name, **{arg: (lambda *a, **k: returned) for arg in ARGS[name]})
    assert "检查时出错" not in message
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("name", FUNCTIONS)
def test_unimplemented_functions_fail_clearly(name):
    def stub(*args, **kwargs):
        raise NotImplementedError()

    with pytest.raises(CheckFailed, match="还没有实现"):
        run_check(name, **{arg: stub for arg in ARGS[name]})


@pytest.mark.parametrize("variant", samples_q5.MISTAKES, ids=lambda v: v.name)
def test_same_seed_same_verdict(variant, monkeypatch):
    monkeypatch.setenv("AUTOGRADER_STUDENT", "student-a")
    ns = _namespace(variant)
    names = [n for n in ARGS if CELL[n] in variant.loses]
    first = {name: _verdict(ns, name) for name in names}
    assert {name: _verdict(ns, name) for name in names} == first


# ------------------------------------------------------------------ the hand steps


@pytest.mark.parametrize("value, label", [
    (2, q5.COUNT_LINEAR), (3, q5.SCORES_PAIRS), (1, q5.SCORES_PAIRS), (8, q5.RATIO_CUBIC)])
def test_entries_2_names_each_counting_mistake(value, label):
    message = _fails("q5.entries_2", entries_2=value)
    assert label.label in message and "期望" not in message


@pytest.mark.parametrize("value, label", [
    (1000, q5.COUNT_LINEAR), (500_500, q5.SCORES_PAIRS), (499_500, q5.SCORES_PAIRS),
    (999_000, q5.SCORES_PAIRS), (10**9, q5.RATIO_CUBIC)])
def test_entries_1000_names_each_counting_mistake(value, label):
    message = _fails("q5.entries_1000", entries_1000=value)
    assert label.label in message and "期望" not in message
    assert not re.search(r"(?<![\d.])1000000(?![\d])", message)


@pytest.mark.parametrize("value", [10**6, 1e6, np.int64(10**6), np.float32(1e6), sp.Integer(10**6)],
                         ids=["int", "float", "int64", "float32", "sympy"])
def test_entries_1000_accepts_any_exact_number(value):
    run_check("q5.entries_1000", entries_1000=value)


@pytest.mark.parametrize("value", [16, 16.0, np.float32(16)], ids=["16", "16.0", "float32"])
def test_table_ratio_accepts_16(value):
    run_check("q5.table_ratio", table_ratio=value)


@pytest.mark.parametrize("value", [4000 * 4001 / (1000 * 1001), 4000 * 3999 / (1000 * 999)],
                         ids=["pairs-with-self", "pairs"])
def test_table_ratio_of_counted_pairs_is_rejected_and_named(value):
    """Issue 30: counting unordered pairs gave 15.99, inside the old 1 % band."""
    assert q5.SCORES_PAIRS.label in _fails("q5.table_ratio", table_ratio=value)


@pytest.mark.parametrize("value, label", [
    (4, q5.RATIO_LINEAR), (64, q5.RATIO_CUBIC), (1 / 16, q5.RATIO_REVERSED), (0.25, q5.RATIO_REVERSED)])
def test_table_ratio_names_mistake_without_the_answer(value, label):
    message = _fails("q5.table_ratio", table_ratio=value)
    assert label.label in message
    assert not re.search(r"(?<![\d.])16(?![\d])", message), message


@pytest.mark.parametrize("value", [16 * 1.011, 16 * 0.989, np.nan, np.inf])
def test_table_ratio_tolerance_is_one_percent(value):
    _fails("q5.table_ratio", table_ratio=value)


def test_hand_messages_never_state_the_answer():
    """A misconception message says what is wrong with what came back (issue 21)."""
    for name, value, answer in (("q5.entries_2", 3, "4"), ("q5.entries_1000", 1000, "1000000"),
                                ("q5.table_ratio", 4, "16")):
        message = _fails(name, **{ARGS[name][0]: value})
        assert not re.search(rf"(?<![\d.]){answer}(?![\d])", message), message


# ------------------------------------------------------------------ functions of the core


@pytest.mark.parametrize("returned, label", [
    (lambda n: n, q5.COUNT_LINEAR),
    (lambda n: n * (n + 1) // 2, q5.SCORES_PAIRS),
    (lambda n: n * (n - 1), q5.SCORES_PAIRS),
    (lambda n: int(np.int32(n) * np.int32(n)), q5.INT32_OVERFLOW),
])
def test_score_table_entries_names_mistake(returned, label):
    with pytest.raises(CheckFailed, match=label.label):
        run_check("q5.score_table_entries", score_table_entries=returned)


def test_score_table_entries_refuses_floats():
    with pytest.raises(CheckFailed, match="浮点数"):
        run_check("q5.score_table_entries", score_table_entries=lambda n: float(n) ** 2)


def test_score_table_bytes_names_bits():
    def bits(n, dtype="float32"):
        return n * n * np.dtype(dtype).itemsize * 8

    with pytest.raises(CheckFailed, match=q5.BITS_AS_BYTES.label):
        run_check("q5.score_table_bytes", score_table_bytes=bits)


@pytest.mark.parametrize("formula, label", [
    (lambda a, b: b / a, q5.RATIO_LINEAR),
    (lambda a, b: (b / a) ** 3, q5.RATIO_CUBIC),
    (lambda a, b: (a / b) ** 2, q5.RATIO_REVERSED),
])
def test_cost_ratio_names_mistake(formula, label):
    with pytest.raises(CheckFailed, match=label.label):
        run_check("q5.cost_ratio", cost_ratio=formula)


def test_cost_ratio_hidden_inputs_are_not_the_question():
    """The feedback of cost_ratio never prints the 1000 -> 4000 answer."""
    message = _fails("q5.cost_ratio", cost_ratio=lambda a, b: b / a)
    assert "cost_ratio(1000, 4000)" not in message


@pytest.mark.parametrize("formula, label", [
    (len, q5.CHARS_AS_TOKENS),
    (lambda t: len(t.encode("utf-8")), q5.BYTES_AS_TOKENS),
    (lambda t: len(t.split()), q5.WORDS_AS_TOKENS),
])
def test_count_tokens_names_mistake(formula, label):
    with pytest.raises(CheckFailed, match=label.label):
        run_check("q5.count_tokens", count_tokens=formula)


def test_count_tokens_hides_the_hidden_texts():
    message = _fails("q5.count_tokens", count_tokens=len)
    assert "个字符）" in message
    for text, _ in q5._token_texts(q5.Context("q5.count_tokens", runner.seed_for("q5.count_tokens"))):
        if len(text) > 3:
            assert text not in message


def test_hidden_texts_cover_the_languages():
    texts = [t for t, _ in q5._token_texts(q5.Context("q5.count_tokens", seed=1))]
    assert any(all("\u4e00" <= ch <= "\u9fff" or ch in "，。：、！？（）“”" for ch in t) and t for t in texts)
    assert any(t.isascii() and t for t in texts)
    assert any(any("\u4e00" <= ch <= "\u9fff" for ch in t) and any(ch.isascii() and ch.isalpha() for ch in t)
               for t in texts)
    for text in texts[1:]:  # the three naive counts differ from the tokenizer on most texts
        tokens = q5.reference_token_count(text)
        assert tokens != len(text) or tokens != len(text.split())


def test_the_notebook_texts_are_the_banks(reference):
    """The token multipliers are graded against the bank's copy of the three texts."""
    assert reference["texts"] == q5.TEXTS


def _right_p(text: str, english: str) -> float:
    return q5.reference_token_count(text) / q5.reference_token_count(english)


def _right_cost(text: str, english: str) -> float:
    return _right_p(text, english) ** 2


def test_the_multipliers_are_graded_on_the_students_own_hidden_texts():
    """Issue 30: p_zh and attention_zh alone could be written down from the fixed texts;
    the functions are graded on texts drawn for each student (without them, a function
    that returns the notebook's number passed)."""
    fixed = q5.multipliers()
    run_check("q5.token_multipliers", p_zh=fixed["zh"], p_mixed=fixed["mixed"], token_multiplier=_right_p)
    message = _fails("q5.token_multipliers", p_zh=fixed["zh"], p_mixed=fixed["mixed"],
                     token_multiplier=lambda text, english: fixed["zh"])
    assert "隐藏" in message
    message = _fails("q5.attention_multipliers", attention_zh=fixed["zh"] ** 2,
                     attention_mixed=fixed["mixed"] ** 2, attention_multiplier=_right_p)
    assert q5.RATIO_LINEAR.label in message


def _by(count) -> dict[str, float]:
    return q5.multipliers(count)


@pytest.mark.parametrize("kind, label", [
    ("chars", q5.CHARS_AS_TOKENS), ("bytes", q5.BYTES_AS_TOKENS), ("words", q5.WORDS_AS_TOKENS),
    ("reversed", q5.RATIO_REVERSED)])
def test_token_multipliers_name_mistake(kind, label):
    p = {"chars": _by(len), "bytes": _by(lambda t: len(t.encode())), "words": _by(lambda t: len(t.split())),
         "reversed": {k: 1 / v for k, v in _by(q5.reference_token_count).items()}}[kind]
    message = _fails("q5.token_multipliers", p_zh=p["zh"], p_mixed=p["mixed"], token_multiplier=_right_p)
    assert label.label in message


@pytest.mark.parametrize("power, label", [(1, q5.RATIO_LINEAR), (3, q5.RATIO_CUBIC), (-2, q5.RATIO_REVERSED)])
def test_attention_multipliers_name_mistake(power, label):
    p = _by(q5.reference_token_count)
    message = _fails("q5.attention_multipliers", attention_zh=p["zh"] ** power,
                     attention_mixed=p["mixed"] ** power, attention_multiplier=_right_cost)
    assert label.label in message


def test_the_tokenizer_figures_of_the_notebook(reference):
    texts, count = reference["texts"], reference["count_tokens"]
    zh, en, mixed = (count(texts[k]) for k in ("zh", "en", "mixed"))
    assert zh > en and len(texts["zh"]) < len(texts["en"])      # fewer characters, more tokens
    assert en < mixed < zh                                        # mixed text lies in between
    assert len(texts["zh"].encode("utf-8")) / len(texts["en"].encode("utf-8")) < zh / en


# ------------------------------------------------------------------ the timing rule (拓展 D)


def test_measure_attention_seconds_passes_a_correct_timer_for_every_student(reference):
    """The big n is drawn per student (500-700): 20 students, the solution's own timer."""
    for seed in range(20):
        outcome = evaluate("q5.measure_attention_seconds",
                           {"measure_attention_seconds": reference["measure_attention_seconds"]},
                           seed=seed)
        assert outcome.passed, (seed, outcome.message)


def test_the_notebook_states_and_asserts_the_timing_rule_the_check_applies():
    """The prose and the visible assert use the hidden check's floor and factor (the
    visible assert had its own factor of 100, which failed correct timers under load)."""
    cells = nbs.read(SOURCE).cells
    text = "".join(c.source for c in cells if c.cell_type == "markdown")
    assert (f"至少要 {q5_ext.MIN_TIMED_SECONDS * 1e6:.0f} 微秒、并且至少是只有几个 token 时的 "
            f"{q5_ext.TIMING_FACTOR} 倍") in text
    visible = next(c.source for c in cells if nbs.grade_id(c) == CELL["q5.measure_attention_seconds"])
    rule = re.search(r"t\[1\] >= ([0-9.e-]+) and t\[1\] > (\d+) \* t\[0\]", visible)
    assert rule and (float(rule[1]), int(rule[2])) == (q5_ext.MIN_TIMED_SECONDS, q5_ext.TIMING_FACTOR)
    assert f"应至少 {q5_ext.MIN_TIMED_SECONDS * 1e6:.0f} 微秒、至少 {q5_ext.TIMING_FACTOR} 倍" in visible


# ------------------------------------------------------------------ every mistake, 200 seeds


@pytest.fixture
def cached_solutions(monkeypatch):
    """The sweeps read each student's values from this module's cached namespace (the same
    solution cells, without re-running the notebook's plots and timing run per sweep)."""
    monkeypatch.setattr(seeds, "solution_namespace",
                        lambda assignment, variant=None: SimpleNamespace(**_namespace(variant)))


@pytest.mark.filterwarnings("ignore:overflow encountered")  # the int32 student's own warning
@pytest.mark.parametrize("variant", samples_q5.MISTAKES, ids=lambda v: v.name)
def test_every_mistake_loses_its_cells_on_every_seed(variant, cached_solutions):
    """The contract's sweep: visible asserts or hidden checks, as nbgrader scores a cell.
    A visible failure here may only be in the mistake's own cells."""
    visible = set(visible_failures(ASSIGNMENT, variant))
    assert (visible or not variant.visible) and visible <= set(variant.loses), visible
    assert seeds.surviving_seeds(ASSIGNMENT, variant) == {c: [] for c in variant.loses}


#: Seeds of the hidden-only sweep: all 200, except for the timing check, whose verdict comes
#: from the clock, not the seed (each seed runs attention 6 times): 20 there; the contract's
#: sweep above covers its 200 seeds through the visible assert.
HIDDEN_SEEDS = {"test_measure_attention_seconds": range(20)}


@pytest.mark.filterwarnings("ignore:overflow encountered")
@pytest.mark.parametrize("variant", samples_q5.MISTAKES, ids=lambda v: v.name)
def test_hidden_checks_alone_see_every_mistake_on_every_seed(variant, monkeypatch, cached_solutions):
    """Stronger than the contract: with the visible asserts set aside, the hidden check of
    each lost cell still fails on every seed (a student who edits the visible asserts away
    gains nothing)."""
    monkeypatch.setattr(seeds, "visible_failures", lambda *args: {})
    left = {}
    for sweep in (set(variant.loses) - set(HIDDEN_SEEDS), set(variant.loses) & set(HIDDEN_SEEDS)):
        for cell in sweep:
            assert len(HIDDEN_SEEDS.get(cell, seeds.SEEDS)) == len(next(iter(
                [HIDDEN_SEEDS.get(c, seeds.SEEDS) for c in sweep])))
        if sweep:
            left |= seeds.surviving_seeds(ASSIGNMENT, variant, sorted(sweep),
                                          HIDDEN_SEEDS.get(next(iter(sweep)), seeds.SEEDS))
    assert left == {cell: [] for cell in variant.loses}
