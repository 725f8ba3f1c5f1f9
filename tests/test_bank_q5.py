"""Fast tests of the q5_cost_scaling check bank (no kernels, no nbgrader).

The reference solution is the source notebook's own solution cells, run in-process;
sample students are the same cells with the bank's ``ALTERNATIVES``/``MISTAKES`` edits.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from autograder import notebooks as nbs
from autograder.bank import CheckFailed, checks_for, q5, run_check
from autograder.samples import q5 as samples_q5

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "source" / "q5_cost_scaling" / "q5_cost_scaling.ipynb"

#: check name -> the student names it receives; its grade cell is "test_" + behaviour.
ARGS = {
    "q5.score_table_entries": ("score_table_entries",),
    "q5.score_table_bytes": ("score_table_bytes",),
    "q5.cost_ratio": ("cost_ratio",),
    "q5.attention_flops": ("attention_flops",),
    "q5.crossover_length": ("crossover_length",),
    "q5.loglog_slope": ("loglog_slope",),
    "q5.measure_attention_seconds": ("measure_attention_seconds",),
    "q5.token_counts": ("token_count_chars", "token_count_utf8_bytes"),
    "q5.relative_attention_cost": ("relative_attention_cost",),
}
CELL = {name: "test_" + name.split(".", 1)[1] for name in ARGS}
EXECUTED = {"imports", "given_attention"}


def _namespace(variant: nbs.Variant | None = None) -> dict:
    """Run the imports, the given attention and every solution cell (edited by ``variant``)."""
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
            exec(compile(nbs.strip_markers(text), f"<{cid}>", "exec"), ns)
    return ns


def _values(ns: dict, name: str) -> dict:
    return {arg: ns[arg] for arg in ARGS[name]}


def _verdict(ns: dict, name: str) -> str | None:
    try:
        run_check(name, **_values(ns, name))
    except CheckFailed as err:
        return str(err)
    return None


@pytest.fixture(scope="module")
def reference() -> dict:
    return _namespace()


def test_every_check_is_listed():
    assert {c.name for c in checks_for("q5_cost_scaling")} == set(ARGS)
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
    for name, msg in verdicts.items():
        if msg:
            for label in variant.feedback:
                assert f"【{label}】" in msg, (name, msg)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("name", sorted(ARGS))
@pytest.mark.parametrize("bad", [None, "16", 3.5], ids=["None", "str", "float"])
def test_wrong_kind_values_fail_clearly(name, bad):
    with pytest.raises(CheckFailed) as err:
        run_check(name, **{arg: bad for arg in ARGS[name]})
    assert str(err.value).strip()


@pytest.mark.parametrize("name", sorted(set(ARGS) - {"q5.crossover_length"}))
@pytest.mark.parametrize("returned", [None, "16", [1, 2, 3]], ids=["None", "str", "list"])
def test_functions_returning_wrong_kinds_fail_clearly(name, returned, capsys):
    with pytest.raises(CheckFailed) as err:
        run_check(name, **{arg: (lambda *a, **k: returned) for arg in ARGS[name]})
    assert "检查时出错" not in str(err.value)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("name", sorted(set(ARGS) - {"q5.crossover_length"}))
def test_unimplemented_functions_fail_clearly(name):
    def stub(*args, **kwargs):
        raise NotImplementedError()

    with pytest.raises(CheckFailed, match="还没有实现"):
        run_check(name, **{arg: stub for arg in ARGS[name]})


@pytest.mark.parametrize("variant", samples_q5.MISTAKES, ids=lambda v: v.name)
def test_same_seed_same_verdict(variant, monkeypatch):
    monkeypatch.setenv("AUTOGRADER_STUDENT", "student-a")
    ns = _namespace(variant)
    first = {name: _verdict(ns, name) for name in ARGS}
    assert {name: _verdict(ns, name) for name in ARGS} == first


# ------------------------------------------------------------------ behaviour by behaviour


@pytest.mark.parametrize("returned, label", [
    (lambda n: n, q5.RATIO_LINEAR),
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


def _flops(n, d_model, d_k, d_v, half=False, proj=True):
    total = (4 * n * d_model * d_k + 2 * n * d_model * d_v) * proj + 2 * n * n * (d_k + d_v)
    return total // 2 if half else total


@pytest.mark.parametrize("formula, label", [
    (lambda n, dm, dk, dv: _flops(n, dm, dk, dv, half=True), q5.FLOPS_HALF),
    (lambda n, dm, dk, dv: _flops(n, dm, dk, dv, proj=False), q5.FLOPS_NO_PROJECTION),
    (lambda n, dm, dk, dv: _flops(n, dm, dk, dv) - 2 * n * n * dv, q5.FLOPS_NO_WEIGHTED_SUM),
    (lambda n, dm, dk, dv: int(np.int32(_flops(n, dm, dk, dv) % 2**32)), q5.INT32_OVERFLOW),
])
def test_attention_flops_names_mistake(formula, label):
    with pytest.raises(CheckFailed, match=label.label):
        run_check("q5.attention_flops", attention_flops=formula)


@pytest.mark.parametrize("value", [3 * sp.Symbol("d", positive=True) / 2, sp.Rational(3, 2) * sp.Symbol("d")])
def test_crossover_length_accepts_any_symbol_assumptions(value):
    run_check("q5.crossover_length", crossover_length=value)


@pytest.mark.parametrize("value, match", [
    ([sp.Rational(3, 2) * sp.Symbol("d")], "列表"),
    (1.5 * sp.Symbol("d"), "浮点数"),
    (3 * sp.Symbol("d"), q5.CROSSOVER_SCORES_ONLY.label),
    (sp.Integer(0), "平凡解"),
    (3 * sp.Symbol("n") / 2, "只含符号 d"),
])
def test_crossover_length_explains_wrong_answers(value, match):
    with pytest.raises(CheckFailed, match=match):
        run_check("q5.crossover_length", crossover_length=value)


def test_loglog_slope_two_point_estimate_passes():
    def endpoints(ns, costs):
        ns, costs = np.asarray(ns, float), np.asarray(costs, float)
        return np.log(costs[-1] / costs[0]) / np.log(ns[-1] / ns[0])

    run_check("q5.loglog_slope", loglog_slope=endpoints)


@pytest.mark.parametrize("formula, label", [
    (lambda ns, c: np.polyfit(np.log(c), np.log(ns), 1)[0], q5.LOGLOG_SWAPPED),
    (lambda ns, c: np.polyfit(np.log10(ns), np.log(c), 1)[0], q5.LOGLOG_ONE_AXIS),
])
def test_loglog_slope_names_mistake(formula, label):
    with pytest.raises(CheckFailed, match=label.label):
        run_check("q5.loglog_slope", loglog_slope=formula)


@pytest.mark.parametrize("returned", [np.zeros(3), -np.ones(3), np.ones((3, 1)), np.array([np.nan] * 3)],
                         ids=["zeros", "negative", "column", "nan"])
def test_measure_attention_seconds_shape_and_sign(returned):
    def measure(ns, d, repeats, rng):
        return np.resize(returned, (len(ns),) + returned.shape[1:])

    with pytest.raises(CheckFailed):
        run_check("q5.measure_attention_seconds", measure_attention_seconds=measure)


def test_measure_attention_seconds_ignores_speed():
    def slow_but_fine(ns, d, repeats, rng):
        return np.full(len(ns), 1e6)

    run_check("q5.measure_attention_seconds", measure_attention_seconds=slow_but_fine)


@pytest.mark.parametrize("chars, nbytes, label", [
    (len, lambda t: len(t.encode("utf-16-le")), q5.UTF16),
    (lambda t: len(t.encode("utf-8")), lambda t: len(t.encode("utf-8")), q5.CHARS_AS_BYTES),
])
def test_token_counts_names_mistake(chars, nbytes, label):
    with pytest.raises(CheckFailed, match=label.label):
        run_check("q5.token_counts", token_count_chars=chars, token_count_utf8_bytes=nbytes)


def test_token_counts_hide_the_hidden_strings(reference):
    with pytest.raises(CheckFailed) as err:
        run_check("q5.token_counts", token_count_chars=reference["token_count_chars"],
                  token_count_utf8_bytes=len)
    assert "随机混合字符串" in str(err.value) or "纯汉字" in str(err.value) or "emoji" in str(err.value)
    assert "text=" not in str(err.value)


@pytest.mark.parametrize("formula, label", [
    (lambda a, b: b / a, q5.RATIO_LINEAR),
    (lambda a, b: (b / a) ** 3, q5.RATIO_CUBIC),
])
def test_relative_attention_cost_names_mistake(formula, label):
    with pytest.raises(CheckFailed, match=label.label):
        run_check("q5.relative_attention_cost", relative_attention_cost=formula)
