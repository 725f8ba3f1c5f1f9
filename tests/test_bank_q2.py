"""Fast tests of the q2_dk_growth check bank (no kernels, no nbgrader).

The reference solution is the source notebook's own solution code, exec'd with the
solution markers stripped; sample students are the same code with their edits.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from autograder.bank import CheckFailed, Context, checks_for, get_check, q2, run_check
from autograder.notebooks import strip_markers
from autograder.samples import q2 as samples_q2

NOTEBOOK = Path(__file__).resolve().parent.parent / "source" / "q2_dk_growth" / "q2_dk_growth.ipynb"
CELLS = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]


def _grade_id(cell: dict) -> str:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")


def _calls() -> dict[str, tuple[str, list[str]]]:
    """Check name -> (grade cell id, names passed to it), read from the hidden tests."""
    calls = {}
    for cell in CELLS:
        found = re.search(r'run_check\("(q2\.\w+)", (.*)\)', "".join(cell["source"]))
        if found:
            calls[found.group(1)] = (_grade_id(cell), re.findall(r"(\w+)=\w+", found.group(2)))
    return calls


CALLS = _calls()
CHECKS = sorted(CALLS)
CELL_OF = {name: cell for name, (cell, _) in CALLS.items()}


#: Name -> grade id of the cell that (last) defines it, filled in by ``_namespace``.
DEFINED_IN: dict[str, str] = {}


def _namespace(variant=None) -> dict:
    """The student's namespace: imports, the given softmax, and every solution cell."""
    ns: dict = {"display": lambda *args, **kwargs: None, "print": lambda *args, **kwargs: None}
    for cell in CELLS:
        gid = _grade_id(cell)
        if cell["cell_type"] != "code" or not (gid.endswith("_impl") or gid in ("imports", "softmax_given")):
            continue
        source = "".join(cell["source"])
        for edit in variant.edits if variant else ():
            if edit.cell == gid:
                assert source.count(edit.old) == 1, f"{variant.name}: edit does not match once"
                source = source.replace(edit.old, edit.new)
        before = {k: id(v) for k, v in ns.items()}
        exec(strip_markers(source), ns)  # noqa: S102 - our own notebook's solution
        if variant is None:
            DEFINED_IN.update({k: gid for k, v in ns.items() if before.get(k) != id(v)})
    return ns


REFERENCE = _namespace()


def _global_names(code) -> set[str]:
    """Global names a code object (and the comprehensions inside it) looks up."""
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _global_names(const)
    return names


def _cells_behind(name: str) -> set[str]:
    """Solution cells whose code can change what the value ``name`` is or does."""
    seen, todo, cells = set(), [name], set()
    while todo:
        current = todo.pop()
        if current in seen or current not in DEFINED_IN:
            continue
        seen.add(current)
        cells.add(DEFINED_IN[current])
        value = REFERENCE.get(current)
        if callable(value) and hasattr(value, "__code__"):
            todo.extend(_global_names(value.__code__))
    return cells


def _affected(check: str, variant) -> bool:
    """Whether ``variant``'s edits can change what ``check`` sees (else its verdict is the reference's)."""
    edited = {edit.cell for edit in variant.edits}
    return any(_cells_behind(arg) & edited for arg in CALLS[check][1])


def _values(name: str, ns: dict) -> dict:
    return {arg: ns[arg] for arg in CALLS[name][1]}


def _verdict(name: str, ns: dict, seed: int = 7) -> str | None:
    """None when the check passes at ``seed``, else its message."""
    try:
        get_check(name).func(Context(name, seed), **_values(name, ns))
    except CheckFailed as err:
        return str(err)
    return None


@cache
def _reference_verdict(name: str) -> str | None:
    return _verdict(name, REFERENCE)


def test_every_check_has_a_grade_cell_and_enough_points() -> None:
    assert {c.name for c in checks_for("q2_dk_growth")} == set(CHECKS)
    points = [c["metadata"]["nbgrader"]["points"] for c in CELLS
              if c["metadata"].get("nbgrader", {}).get("grade") and c["cell_type"] == "code"]
    assert len(points) >= 5 and sum(points) >= 10
    assert any(_grade_id(c).startswith("written_") for c in CELLS)


@pytest.mark.parametrize("name", CHECKS)
@pytest.mark.parametrize("seed", [0, 12345])
def test_reference_passes(name: str, seed: int) -> None:
    assert _verdict(name, REFERENCE, seed) is None


@pytest.mark.parametrize("name", CHECKS)
def test_reference_passes_run_check_quietly(name: str, capsys: pytest.CaptureFixture) -> None:
    run_check(name, **_values(name, REFERENCE))
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("variant", samples_q2.ALTERNATIVES, ids=lambda v: v.name)
def test_alternative_passes(variant) -> None:
    ns = _namespace(variant)
    assert {name: _verdict(name, ns) for name in CHECKS} == dict.fromkeys(CHECKS)


@pytest.mark.parametrize("variant", samples_q2.MISTAKES, ids=lambda v: v.name)
def test_mistake_fails_its_cells_and_names_its_misconception(variant) -> None:
    # Checks are deterministic given the seed, so a check whose values (and what they call)
    # the mistake does not touch gives the reference's verdict: only the others are run.
    ns = _namespace(variant)
    verdicts = {name: _verdict(name, ns) if _affected(name, variant) else _reference_verdict(name)
                for name in CHECKS}
    lost = {CELL_OF[name] for name, message in verdicts.items() if message}
    assert lost == set(variant.loses)
    for name, message in verdicts.items():
        if message:
            for label in variant.feedback:
                assert label in message, f"{name}: {message}"


SOME_MISTAKES = [v for v in samples_q2.MISTAKES if v.name in ("divide_by_dk", "rng_not_used")]


@pytest.mark.parametrize("variant", [None, *SOME_MISTAKES], ids=lambda v: v.name if v else "reference")
def test_same_seed_same_verdict(variant) -> None:
    ns = _namespace(variant)
    for name in CHECKS if variant is None else [n for n in CHECKS if CELL_OF[n] in variant.loses]:
        assert _verdict(name, ns, seed=99) == _verdict(name, ns, seed=99)


def test_dependencies_follow_calls_between_answers() -> None:
    by_name = {v.name: v for v in samples_q2.MISTAKES}
    assert _affected("q2.chain", by_name["jacobian_diagonal_only"])  # chain -> score_gradient -> jacobian
    assert _affected("q2.loglog_slope", by_name["uniform_sampling"])  # loglog -> std -> samples
    assert not _affected("q2.entropy", by_name["jacobian_diagonal_only"])
    assert _affected("q2.variance_symbolic", by_name["variance_as_std"])


def _returns(value):
    return lambda *args, **kwargs: value


WRONG_KINDS = [None, "abc", _returns(None), _returns("abc")]


@pytest.mark.parametrize("name", CHECKS)
@pytest.mark.parametrize("wrong", WRONG_KINDS, ids=["None", "str", "returns_None", "returns_str"])
def test_wrong_kinds_give_a_clear_message(name: str, wrong, capsys: pytest.CaptureFixture) -> None:
    values = _values(name, REFERENCE)
    for arg in values:
        bad = dict(values, **{arg: wrong})
        with pytest.raises(CheckFailed) as err:
            run_check(name, **bad)
        message = str(err.value)
        assert "检查时出错" not in message and "检查时类型不符" not in message, message
        assert capsys.readouterr().err == ""


def test_samples_rejects_a_matrix_of_products() -> None:
    def products(d_k, n_samples, rng):
        return rng.standard_normal((n_samples, d_k)) * rng.standard_normal((n_samples, d_k))
    message = _verdict("q2.samples", {"dot_product_samples": products})
    assert message and "一维数组" in message


def test_samples_rng_catches_a_fixed_internal_seed() -> None:
    def fixed(d_k, n_samples, rng):
        own = np.random.default_rng(0)
        return np.sum(own.standard_normal((n_samples, d_k)) * own.standard_normal((n_samples, d_k)), axis=1)
    message = _verdict("q2.samples_rng", {"dot_product_samples": fixed})
    assert message and q2.RNG_UNUSED.label in message
    assert _verdict("q2.samples", {"dot_product_samples": fixed}) is None


@pytest.mark.parametrize("expr, label", [
    (sp.sqrt(sp.Symbol("d_k")) * sp.Symbol("sigma_q") * sp.Symbol("sigma_k"), q2.VARIANCE_VS_STD.label),
    (sp.Symbol("d_k") * sp.Symbol("sigma_q") * sp.Symbol("sigma_k"), q2.VARIANCE_VS_STD.label),
])
def test_variance_symbolic_names_std_confusion(expr, label) -> None:
    message = _verdict("q2.variance_symbolic", {"dot_product_variance": expr})
    assert message and label in message


def test_variance_symbolic_matches_symbols_by_name() -> None:
    d, s_q, s_k = sp.symbols("d_k sigma_q sigma_k", real=True, nonnegative=True)
    assert _verdict("q2.variance_symbolic", {"dot_product_variance": s_q**2 * d * s_k**2}) is None
    other = sp.Symbol("n") * s_q**2 * s_k**2
    message = _verdict("q2.variance_symbolic", {"dot_product_variance": other})
    assert message and "未预期的符号" in message


def test_variance_symbolic_rejects_floats() -> None:
    d, s_q, s_k = sp.symbols("d_k sigma_q sigma_k")
    message = _verdict("q2.variance_symbolic", {"dot_product_variance": 1.0 * d * s_q**2 * s_k**2})
    assert message and "浮点数" in message


def test_loglog_slope_names_swapped_regression() -> None:
    def swapped(x, y):
        return float(np.polyfit(np.log(y), np.log(x), 1)[0])
    ns = dict(REFERENCE, fit_loglog_slope=swapped)
    message = _verdict("q2.loglog_slope", ns)
    assert message and q2.SLOPE_SWAPPED.label in message


def test_chain_names_ignored_flag_when_always_scaled() -> None:
    def always_scaled(d_k, n_keys, n_trials, rng, scaled=True):
        return REFERENCE["chain_experiment"](d_k, n_keys, n_trials, rng, scaled=True)
    message = _verdict("q2.chain", dict(REFERENCE, chain_experiment=always_scaled))
    assert message and "scaled=False" in message


def test_chain_explains_a_missing_key_and_a_bad_shape() -> None:
    def missing(d_k, n_keys, n_trials, rng, scaled=True):
        out = REFERENCE["chain_experiment"](d_k, n_keys, n_trials, rng, scaled=scaled)
        del out["entropy"]
        return out

    def means(d_k, n_keys, n_trials, rng, scaled=True):
        out = REFERENCE["chain_experiment"](d_k, n_keys, n_trials, rng, scaled=scaled)
        return {key: float(np.mean(value)) for key, value in out.items()}
    message = _verdict("q2.chain", {"chain_experiment": missing})
    assert message and "'entropy'" in message and "缺少" in message
    message = _verdict("q2.chain", {"chain_experiment": means})
    assert message and "每次试验一个数" in message


def test_chain_catches_entropy_from_another_trial() -> None:
    def shuffled(d_k, n_keys, n_trials, rng, scaled=True):
        out = REFERENCE["chain_experiment"](d_k, n_keys, n_trials, rng, scaled=scaled)
        out["entropy"] = np.roll(out["entropy"], 1)
        return out
    message = _verdict("q2.chain", {"chain_experiment": shuffled})
    assert message and "对不上" in message


@pytest.mark.parametrize("wrong, text", [
    (lambda p: -REFERENCE["softmax_entropy"](p), "负号"),
    (lambda p: REFERENCE["softmax_entropy"](p) / np.log(2), "以 2 为底"),
    (lambda p: -np.sum(np.asarray(p) * np.log(np.where(np.asarray(p) > 0, p, 1.0)), axis=0), "轴"),
])
def test_entropy_names_common_slips(wrong, text) -> None:
    message = _verdict("q2.entropy", {"softmax_entropy": wrong})
    assert message and text in message


def test_aligned_samples_hints() -> None:
    def same(d_k, n_samples, rng, cos_theta):
        q = rng.standard_normal((n_samples, d_k))
        return np.sum(q * q, axis=1)

    def no_noise(d_k, n_samples, rng, cos_theta):
        q = rng.standard_normal((n_samples, d_k))
        return np.sum(q * cos_theta * q, axis=1)
    message = _verdict("q2.aligned_samples", {"aligned_dot_samples": same})
    assert message and "k = q" in message
    message = _verdict("q2.aligned_samples", {"aligned_dot_samples": no_noise})
    assert message and "√(1 − cos_theta²)·r" in message


def test_independent_growth_names_wrong_scaling() -> None:
    def divide_dk(d_from, d_to, scaled=False):
        return float(np.sqrt(d_from / d_to)) if scaled else float(np.sqrt(d_to / d_from))

    def ignores_flag(d_from, d_to, scaled=False):
        return float(np.sqrt(d_to / d_from))
    message = _verdict("q2.independent_growth", {"independent_growth_factor": divide_dk})
    assert message and q2.DIVIDE_DK.label in message
    message = _verdict("q2.independent_growth", {"independent_growth_factor": ignores_flag})
    assert message and q2.NO_SCALING.label in message


def test_score_gradient_names_missing_term_and_sign() -> None:
    def diag_only(z, u):
        p = REFERENCE["softmax"](z)
        return p * np.asarray(u)

    def flipped(z, u):
        return -REFERENCE["score_gradient"](z, u)
    message = _verdict("q2.score_gradient", dict(REFERENCE, score_gradient=diag_only))
    assert message and "p ⊙ u" in message
    message = _verdict("q2.score_gradient", dict(REFERENCE, score_gradient=flipped))
    assert message and q2.JAC_SIGN.label in message


def test_jacobian_names_sign_error() -> None:
    def flipped(z):
        return -REFERENCE["softmax_jacobian"](z)
    message = _verdict("q2.softmax_jacobian", dict(REFERENCE, softmax_jacobian=flipped))
    assert message and q2.JAC_SIGN.label in message


def test_jacobian_against_a_broken_softmax_fails() -> None:
    def broken(z, axis=-1):
        return np.exp(z)
    message = _verdict("q2.softmax_jacobian", dict(REFERENCE, softmax=broken))
    assert message and "中心差分" in message


def test_messages_never_print_hidden_arrays() -> None:
    ns = _namespace(next(v for v in samples_q2.MISTAKES if v.name == "jacobian_diagonal_only"))
    message = _verdict("q2.softmax_jacobian", ns)
    assert message and "[" not in message.split("可能的原因")[0]
