"""q2_dk_growth's checks on the source solution, its alternatives and its mistakes.

Checks run in-process on a lean namespace: the imports, the given softmax and every
solution cell (with a sample student's edits), without the demos, figures and the
training experiment, which no check reads. What a student sees before answering is
tested at the end of the file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import seeds
import sympy as sp
from helpers import hidden_calls, solution_namespace, visible_failures

from autograder.bank import checks_for, q2, runner
from autograder.bank.lib.compare import CheckFailed
from autograder.bank.runner import run_check
from autograder.engine.host.hidden import (
    HIDDEN_BEGIN,
    HIDDEN_END,
    SOLUTION_BEGIN,
    SOLUTION_END,
    strip_markers,
    strip_region,
)
from autograder.samples import q2 as samples_q2

A = "q2_dk_growth"
NOTEBOOK = Path(__file__).resolve().parents[2] / "source" / A / f"{A}.ipynb"
CELLS = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
CALLS = hidden_calls(A)  # grade cell -> (check name, keyword names)
CHECK_OF = {cell: name for cell, (name, _) in CALLS.items()}


def _grade_id(cell: dict) -> str:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")


def _part(cell: dict) -> str:
    return cell.get("metadata", {}).get("autograder", {}).get("part", "core")


def _source(cell: dict) -> str:
    return "".join(cell["source"])


#: Name -> grade id of the solution cell that (last) defines it, filled in by ``lean_namespace``.
DEFINED_IN: dict[str, str] = {}


def lean_namespace(assignment: str = A, variant=None) -> SimpleNamespace:
    """The student's answers without the given demos: imports, softmax and solution cells."""
    assert assignment == A
    ns: dict = {"display": lambda *args, **kwargs: None, "print": lambda *args, **kwargs: None}
    for cell in CELLS:
        gid = _grade_id(cell)
        if cell["cell_type"] != "code" or not (gid.endswith("_impl") or gid in ("imports", "softmax_given")):
            continue
        source = _source(cell)
        for edit in variant.edits if variant else ():
            if edit.cell == gid:
                assert source.count(edit.old) == 1, f"{variant.name}: edit does not match once"
                source = source.replace(edit.old, edit.new)
        before = {k: id(v) for k, v in ns.items()}
        exec(strip_markers(source), ns)  # noqa: S102 - our own notebook's solution
        if variant is None:
            DEFINED_IN.update({k: gid for k, v in ns.items() if before.get(k) != id(v)})
    return SimpleNamespace(**ns)


REFERENCE = lean_namespace()


def _values(cell: str, ns: SimpleNamespace) -> dict:
    return {k: getattr(ns, k) for k in CALLS[cell][1]}


def _grade(ns: SimpleNamespace, seed: int = 7) -> dict[str, str | None]:
    """Grade cell -> None when its check passes at ``seed``, else the message."""
    verdicts = {}
    for cell, (name, _) in CALLS.items():
        outcome = runner.evaluate(name, _values(cell, ns), seed=seed)
        assert outcome.status != "error", f"{name} broke:\n{outcome.detail}"
        verdicts[cell] = None if outcome.passed else outcome.message
    return verdicts


def _verdict(name: str, values: dict, seed: int = 7) -> str | None:
    outcome = runner.evaluate(name, values, seed=seed)
    assert outcome.status != "error", outcome.detail
    return None if outcome.passed else outcome.message


# ------------------------------------------------------------------ the contract


def _points(part: str | None = None) -> list[tuple[str, float, bool]]:
    """(grade id, points, manual) of every graded cell, optionally of one part only."""
    return [(_grade_id(c), c["metadata"]["nbgrader"]["points"], c["cell_type"] == "markdown")
            for c in CELLS if c["metadata"].get("nbgrader", {}).get("grade")
            and (part is None or _part(c) == part)]


def test_every_check_has_a_grade_cell():
    assert {name for name, _ in CALLS.values()} == {c.name for c in checks_for(A)}


def test_the_core_alone_meets_the_contract():
    auto = [p for _, p, manual in _points("core") if not manual]
    assert len(auto) >= 5 and sum(auto) >= 10
    assert any(manual for _, _, manual in _points("core"))


def test_the_core_states_its_time_and_the_extensions_are_marked_contiguous_and_timed():
    intro = CELLS[0]
    minutes = intro["metadata"]["autograder"]["minutes"]
    assert intro["metadata"]["autograder"]["part"] == "core" and minutes <= 40
    assert f"必做部分：约 {minutes} 分钟" in _source(intro)
    parts = [_part(c) for c in CELLS]
    first_ext = next(i for i, p in enumerate(parts) if p != "core")
    assert all(p != "core" for p in parts[first_ext:]), "a core cell after an extension"
    seen: list[str] = []
    for i, part in enumerate(parts[first_ext:], first_ext):
        if part in seen and parts[i - 1] != part:
            raise AssertionError(f"extension {part} is not contiguous")
        if part not in seen:
            seen.append(part)
            meta, text = CELLS[i]["metadata"]["autograder"], _source(CELLS[i])
            heading = re.match(r"## 拓展 [A-Z]：(.+)（选做，约 (\d+) 分钟）\n", text)
            assert re.fullmatch(r"ext-[a-z0-9-]+", part) and heading, text[:80]
            assert heading.group(1).replace("$", "") == meta["title"]
            assert int(heading.group(2)) == meta["minutes"]
    assert len(seen) == 4


def test_an_extension_check_never_reads_a_core_answer():
    """Graded apart from the core, an extension must not lose points for a core mistake."""
    part_of = {_grade_id(c): _part(c) for c in CELLS}
    for cell, (_name, keywords) in CALLS.items():
        if part_of[cell] == "core":
            continue
        for keyword in keywords:
            defined = DEFINED_IN[keyword]
            assert defined == "softmax_given" or part_of[defined] == part_of[cell], (cell, keyword)


# ------------------------------------------------------------------ solution, alternatives, mistakes


@pytest.fixture(scope="module")
def notebook():
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        return solution_namespace(A)




@pytest.mark.parametrize("seed", [0, 12345])
def test_reference_passes_every_check(seed):
    assert _grade(REFERENCE, seed) == dict.fromkeys(CALLS)


def test_reference_passes_run_check_quietly(capsys):
    for cell, (name, _) in CALLS.items():
        run_check(name, **_values(cell, REFERENCE))
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("variant", samples_q2.ALTERNATIVES, ids=lambda v: v.name)
def test_alternative_passes_every_check(variant):
    assert _grade(lean_namespace(A, variant)) == dict.fromkeys(CALLS)


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
        value = getattr(REFERENCE, current)
        if callable(value) and hasattr(value, "__code__"):
            todo.extend(_global_names(value.__code__))
    return cells


def _affected(cell: str, variant) -> bool:
    """Whether ``variant``'s edits can change what the check of ``cell`` sees."""
    edited = {edit.cell for edit in variant.edits}
    return any(_cells_behind(arg) & edited for arg in CALLS[cell][1])


def test_dependencies_follow_calls_between_answers():
    by_name = {v.name: v for v in samples_q2.MISTAKES}
    assert _affected("test_std", by_name["uniform_sampling"])                 # std -> samples
    assert _affected("test_score_gradient", by_name["jacobian_diagonal_only"])  # gradient -> jacobian
    assert not _affected("test_entropy", by_name["jacobian_diagonal_only"])
    assert not _affected("test_loglog_slope", by_name["shared_query"])


@pytest.mark.parametrize("variant", samples_q2.MISTAKES, ids=lambda v: v.name)
def test_mistake_fails_exactly_its_cells_and_the_student_reads_its_name(variant):
    # A check whose values the edits cannot reach gives the reference's verdict (a pass,
    # test_reference_passes_every_check), so only the others are run.
    ns = lean_namespace(A, variant)
    verdicts = {cell: _verdict(name, _values(cell, ns), seed=0) if _affected(cell, variant) else None
                for cell, (name, _) in CALLS.items()}
    assert {cell for cell, message in verdicts.items() if message} == set(variant.loses)
    for cell in variant.loses:
        for label in variant.feedback:
            assert label in verdicts[cell], (cell, verdicts[cell])
    # A failing visible assert decides its cell under nbgrader: what the student reads
    # there, or the hidden check of each other lost cell, names the misconception.
    visible = visible_failures(A, variant)
    read = [*visible.values(), *(verdicts[c] for c in variant.loses if c not in visible)]
    for label in variant.feedback:
        assert any(label in text for text in read), (label, read)


@pytest.mark.parametrize("variant", samples_q2.MISTAKES, ids=lambda v: v.name)
def test_mistake_loses_its_cells_on_every_one_of_200_seeds(variant, monkeypatch):
    monkeypatch.setattr(seeds, "solution_namespace", lean_namespace)  # demos are not graded
    assert seeds.surviving_seeds(A, variant) == dict.fromkeys(variant.loses, [])


def test_the_lean_namespace_holds_the_full_notebooks_answers(notebook):
    assert set(DEFINED_IN) <= set(vars(notebook))
    for name in ("dot_aligned_200", "scaled_aligned_200", "mean_square_2", "typical_random_200"):
        assert getattr(notebook, name) == getattr(REFERENCE, name)


#: The checks that draw hidden inputs (the hand values are fixed).
DRAWING = ["test_samples", "test_std", "test_aligned_samples", "test_independent_growth", "test_chain"]


@pytest.mark.parametrize("variant", [None, *samples_q2.MISTAKES[4:6]], ids=lambda v: v.name if v else "reference")
def test_same_seed_same_verdict(variant):
    ns = lean_namespace(A, variant)
    for cell in DRAWING if variant is None else sorted(variant.loses):
        name = CHECK_OF[cell]
        assert _verdict(name, _values(cell, ns), seed=99) == _verdict(name, _values(cell, ns), seed=99)


def _returns(value):
    return lambda *args, **kwargs: value


WRONG_KINDS = [None, "abc", _returns(None), _returns("abc")]


@pytest.mark.parametrize("cell", sorted(CALLS))
@pytest.mark.parametrize("wrong", WRONG_KINDS, ids=["None", "str", "returns_None", "returns_str"])
def test_wrong_kinds_give_a_clear_message(cell, wrong, capsys):
    values = _values(cell, REFERENCE)
    for arg in values:
        with pytest.raises(CheckFailed) as err:
            run_check(CHECK_OF[cell], **dict(values, **{arg: wrong}))
        message = str(err.value)
        assert "检查时出错" not in message and "检查时类型不符" not in message, message
        assert capsys.readouterr().err == ""


# ------------------------------------------------------------------ the hand values


@pytest.mark.parametrize("name, value, label", [
    ("q2.hand_aligned", {"dot_aligned_200": 1.0}, q2.COSINE.label),
    ("q2.hand_aligned", {"dot_aligned_200": np.sqrt(200)}, "|q| = √d_k"),
    ("q2.hand_aligned_scaled", {"scaled_aligned_200": 200.0}, q2.NO_SCALING.label),
    ("q2.hand_aligned_scaled", {"scaled_aligned_200": 1.0}, q2.DIVIDE_DK.label),
    ("q2.hand_aligned_scaled", {"scaled_aligned_200": np.sqrt(2)}, q2.ALIGNED_FLAT.label),
    ("q2.hand_mean_square", {"mean_square_2": 0}, q2.MEAN_AS_SIZE.label),
    ("q2.hand_mean_square", {"mean_square_2": 1.0}, "|q·k| 的平均"),
    ("q2.hand_typical", {"typical_random_200": 200}, q2.SQUARE_AS_SIZE.label),
    ("q2.hand_typical", {"typical_random_200": 0.0}, q2.MEAN_AS_SIZE.label),
    ("q2.hand_typical", {"typical_random_200": 100 * np.sqrt(2)}, "线性增长"),
])
def test_hand_values_name_their_misconceptions(name, value, label):
    message = _verdict(name, value)
    assert message and label in message


@pytest.mark.parametrize("value", [14.14, np.float32(np.sqrt(200)), 200 / np.sqrt(200), np.int64(14) + 0.142])
def test_hand_values_accept_two_decimals_and_any_number_type(value):
    assert _verdict("q2.hand_typical", {"typical_random_200": value}) is None
    assert _verdict("q2.hand_aligned_scaled", {"scaled_aligned_200": value}) is None
    assert _verdict("q2.hand_typical", {"typical_random_200": 14.1}) is not None  # one decimal is too coarse


# ------------------------------------------------------------------ samples and std


def test_samples_rejects_a_matrix_of_products():
    def products(d_k, n_samples, rng):
        return rng.standard_normal((n_samples, d_k)) * rng.standard_normal((n_samples, d_k))
    message = _verdict("q2.samples", {"dot_product_samples": products})
    assert message and "一维数组" in message


def test_samples_rng_catches_a_fixed_internal_seed():
    def fixed(d_k, n_samples, rng):
        own = np.random.default_rng(0)
        return np.sum(own.standard_normal((n_samples, d_k)) * own.standard_normal((n_samples, d_k)), axis=1)
    message = _verdict("q2.samples_rng", {"dot_product_samples": fixed})
    assert message and q2.RNG_UNUSED.label in message
    assert _verdict("q2.samples", {"dot_product_samples": fixed}) is None


def _shared_query(d_k, n_samples, rng):
    q = rng.standard_normal(d_k)
    return rng.standard_normal((n_samples, d_k)) @ q


def test_the_pair_test_sees_a_shared_query_where_the_moments_do_not():
    """Mean and variance alone let one shared q through on some seeds (a blind spot of
    test_chain's kind: only summaries compared); the d_k = 1 pair test sees every one."""
    n = 5000
    blind = []
    for seed in range(200):
        s = _shared_query(1, n, np.random.default_rng(seed))
        if abs(s.mean()) <= q2.Z * np.sqrt(1 / n) and abs(s.var(ddof=1) - 1) <= q2.Z * np.sqrt(8 / n):
            blind.append(s)
    assert blind, "no seed where the moments pass: the test below would prove nothing"
    for s in blind:
        with pytest.raises(CheckFailed, match=re.escape(q2.SHARED_QUERY.label)):
            q2._independent_pairs(s, "dot_product_samples(1, 5000, rng)")


def test_std_names_a_shared_query_by_the_spread_of_its_calls():
    def std(d_k, n_samples, rng, scaled=False):
        s = _shared_query(d_k, n_samples, rng)
        return float(np.std(s / np.sqrt(d_k) if scaled else s))
    message = _verdict("q2.std", {"dot_product_std": std, "dot_product_samples": _shared_query})
    assert message and q2.SHARED_QUERY.label in message


def test_aligned_samples_hints():
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


def test_aligned_samples_sees_a_shared_query_on_every_seed():
    def shared(d_k, n_samples, rng, cos_theta):
        q = rng.standard_normal(d_k)
        k = cos_theta * q + np.sqrt(1 - cos_theta**2) * rng.standard_normal((n_samples, d_k))
        return k @ q
    assert all(_verdict("q2.aligned_samples", {"aligned_dot_samples": shared}, s) for s in range(200))


def test_independent_growth_names_wrong_scaling():
    def divide_dk(d_from, d_to, scaled=False):
        return float(np.sqrt(d_from / d_to)) if scaled else float(np.sqrt(d_to / d_from))

    def ignores_flag(d_from, d_to, scaled=False):
        return float(np.sqrt(d_to / d_from))
    message = _verdict("q2.independent_growth", {"independent_growth_factor": divide_dk})
    assert message and q2.DIVIDE_DK.label in message
    message = _verdict("q2.independent_growth", {"independent_growth_factor": ignores_flag})
    assert message and q2.NO_SCALING.label in message


# ------------------------------------------------------------------ extensions A–C


@pytest.mark.parametrize("expr", [
    sp.sqrt(sp.Symbol("d_k")) * sp.Symbol("sigma_q") * sp.Symbol("sigma_k"),
    sp.Symbol("d_k") * sp.Symbol("sigma_q") * sp.Symbol("sigma_k"),
])
def test_variance_symbolic_names_std_confusion(expr):
    message = _verdict("q2.variance_symbolic", {"dot_product_variance": expr})
    assert message and q2.VARIANCE_VS_STD.label in message


def test_variance_symbolic_matches_symbols_by_name():
    d, s_q, s_k = sp.symbols("d_k sigma_q sigma_k", real=True, nonnegative=True)
    assert _verdict("q2.variance_symbolic", {"dot_product_variance": s_q**2 * d * s_k**2}) is None
    message = _verdict("q2.variance_symbolic", {"dot_product_variance": sp.Symbol("n") * s_q**2 * s_k**2})
    assert message and "未预期的符号" in message


def test_variance_symbolic_rejects_floats():
    d, s_q, s_k = sp.symbols("d_k sigma_q sigma_k")
    message = _verdict("q2.variance_symbolic", {"dot_product_variance": 1.0 * d * s_q**2 * s_k**2})
    assert message and "浮点数" in message


def test_loglog_slope_names_swapped_regression_and_needs_no_core_function():
    def swapped(x, y):
        return float(np.polyfit(np.log(y), np.log(x), 1)[0])
    message = _verdict("q2.loglog_slope", {"fit_loglog_slope": swapped})
    assert message and q2.SLOPE_SWAPPED.label in message
    assert CALLS["test_loglog_slope"][1] == ["fit_loglog_slope"]


@pytest.mark.parametrize("wrong, text", [
    (lambda p: -REFERENCE.softmax_entropy(p), "负号"),
    (lambda p: REFERENCE.softmax_entropy(p) / np.log(2), "以 2 为底"),
    (lambda p: -np.sum(np.asarray(p) * np.log(np.where(np.asarray(p) > 0, p, 1.0)), axis=0), "轴"),
])
def test_entropy_names_common_slips(wrong, text):
    message = _verdict("q2.entropy", {"softmax_entropy": wrong})
    assert message and text in message


def test_score_gradient_names_missing_term_and_sign():
    def diag_only(z, u):
        return REFERENCE.softmax(z) * np.asarray(u)

    def flipped(z, u):
        return -REFERENCE.score_gradient(z, u)
    message = _verdict("q2.score_gradient", {"score_gradient": diag_only, "softmax": REFERENCE.softmax})
    assert message and "p ⊙ u" in message
    message = _verdict("q2.score_gradient", {"score_gradient": flipped, "softmax": REFERENCE.softmax})
    assert message and q2.JAC_SIGN.label in message


def test_jacobian_names_sign_error_and_checks_against_the_given_softmax():
    def flipped(z):
        return -REFERENCE.softmax_jacobian(z)

    def broken(z, axis=-1):
        return np.exp(z)
    message = _verdict("q2.softmax_jacobian", {"softmax_jacobian": flipped, "softmax": REFERENCE.softmax})
    assert message and q2.JAC_SIGN.label in message
    message = _verdict("q2.softmax_jacobian", {"softmax_jacobian": REFERENCE.softmax_jacobian, "softmax": broken})
    assert message and "中心差分" in message


def test_messages_never_print_hidden_arrays():
    ns = lean_namespace(A, next(v for v in samples_q2.MISTAKES if v.name == "jacobian_diagonal_only"))
    message = _verdict("q2.softmax_jacobian", _values("test_softmax_jacobian", ns))
    assert message and "[" not in message.split("可能的原因")[0]


# ------------------------------------------------------------------ the chain: every trial on its own


def _chain_with(transform):
    """A chain_experiment whose arrays (or gradients) ``transform`` changes.

    Given q the scores k_j·q are i.i.d. N(0, |q|²), |q|² ~ χ²(d_k): drawn that way the
    trials cost 2·n_keys + 1 numbers each, which keeps 200-seed sweeps cheap.
    """
    def chain_experiment(d_k, n_keys, n_trials, rng, scaled=True):
        size = np.sqrt(rng.chisquare(d_k, size=(n_trials, 1)))
        z = rng.standard_normal((n_trials, n_keys)) * size / (np.sqrt(d_k) if scaled else 1.0)
        u = rng.standard_normal((n_trials, n_keys))
        p = np.exp(z - z.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        g = p * (u - np.sum(p * u, axis=-1, keepdims=True))
        out = {"max_weight": p.max(axis=-1), "entropy": -np.sum(p * np.log(np.where(p > 0, p, 1.0)), axis=-1),
               "grad_norm": np.linalg.norm(g, axis=-1)}
        return transform(out, p, u)
    return chain_experiment


def test_the_vectorised_chain_passes():
    assert _verdict("q2.chain", {"chain_experiment": _chain_with(lambda out, p, u: out)}) is None


@pytest.mark.parametrize("key", ["max_weight", "entropy", "grad_norm"])
def test_chain_sees_a_statistic_from_another_trial(key):
    def shuffled(out, p, u):
        out[key] = np.roll(out[key], 1)
        return out
    message = _verdict("q2.chain", {"chain_experiment": _chain_with(shuffled)})
    assert message and q2.CHAIN_UNPAIRED.label in message


@pytest.mark.parametrize("formula, label, seeds", [
    (lambda p, u: p * (1 - p) * u, q2.JAC_DIAGONAL.label, 200),  # passed on 16 of 200 seeds before
    (lambda p, u: u, q2.GRAD_NO_SOFTMAX.label, 50),
])
def test_chain_sees_a_wrong_gradient_formula_on_every_seed(formula, label, seeds):
    def wrong(out, p, u):
        out["grad_norm"] = np.linalg.norm(formula(p, u), axis=-1)
        return out
    func = _chain_with(wrong)
    messages = [_verdict("q2.chain", {"chain_experiment": func}, seed) for seed in range(seeds)]
    assert all(messages) and all(label in m for m in messages)


def test_chain_names_ignored_flag_when_always_scaled():
    def always_scaled(d_k, n_keys, n_trials, rng, scaled=True):
        return REFERENCE.chain_experiment(d_k, n_keys, n_trials, rng, scaled=True)
    message = _verdict("q2.chain", {"chain_experiment": always_scaled})
    assert message and "scaled=False" in message


def test_chain_explains_a_missing_key_and_a_bad_shape():
    def missing(d_k, n_keys, n_trials, rng, scaled=True):
        out = REFERENCE.chain_experiment(d_k, n_keys, n_trials, rng, scaled=scaled)
        del out["entropy"]
        return out

    def means(d_k, n_keys, n_trials, rng, scaled=True):
        out = REFERENCE.chain_experiment(d_k, n_keys, n_trials, rng, scaled=scaled)
        return {key: float(np.mean(value)) for key, value in out.items()}
    message = _verdict("q2.chain", {"chain_experiment": missing})
    assert message and "'entropy'" in message and "缺少" in message
    message = _verdict("q2.chain", {"chain_experiment": means})
    assert message and "每次试验一个数" in message


# ------------------------------------------------------------------ claims of the prose, measured


def test_the_softmax_table_shows_what_the_core_answer_says(notebook):
    """§5: unscaled reading A sharpens with d_k, scaled it barely moves; reading B's aligned
    key keeps almost all the weight after scaling at d_k = 200."""
    sharp = notebook.sharpness
    assert sharp[200, False][0] - sharp[2, False][0] > 0.5
    assert abs(sharp[200, True][0] - sharp[2, True][0]) < 0.1
    assert sharp[200, True][1] > 0.999 and sharp[2, True][1] < 0.3


def test_the_training_experiment_supports_its_model_answer(notebook):
    ns = notebook
    steps = {(d, s, lr): ns.steps_to(ns.curves[d, s, lr]) for d in ns.TRAIN_DIMS for s in (False, True)
             for lr in ns.TRAIN_LRS}
    for d in ns.TRAIN_DIMS:
        unscaled = {lr: steps[d, False, lr] for lr in ns.TRAIN_LRS if steps[d, False, lr] is not None}
        scaled = [steps[d, True, lr] for lr in ns.TRAIN_LRS if steps[d, True, lr] is not None]
        assert min(unscaled, key=unscaled.get) == 1.0                 # "不缩放时最好的学习率是 1"
        assert min(unscaled.values()) >= 3 * min(scaled)              # "要多用几倍的步数"
        assert all(steps[d, False, lr] is None for lr in ns.TRAIN_LRS if lr >= 10)  # "降不到 0.05"
        assert all(steps[d, True, lr] is not None for lr in ns.TRAIN_LRS if lr >= 1)
        raw, fixed = ns.init_grad[d, False], ns.init_grad[d, True]
        assert raw.mean() > 2 * fixed.mean()                          # "平均值反而更大"
        assert ns.top_share(raw) > 1.5 * ns.top_share(fixed)          # "集中在少数例子上"
    assert np.median(ns.init_grad[256, False]) < np.median(ns.init_grad[256, True]) / 10
    again = ns.train(64, False, 1.0, ns.batches)
    assert np.array_equal(again, ns.curves[64, False, 1.0]), "the experiment is deterministic"


# ------------------------------------------------------------------ no answer before it is asked


#: Phrases that state a growth factor: "变成原来的 10 倍", "2 倍", "×100" ...
FACTOR = re.compile(r"变成原来的\s*[\d√.]+\s*倍|\d+\s*倍|×\s*\d+")


def visible_text(cell: dict) -> str:
    """What a student sees of a cell in the release: no solution, no hidden tests."""
    text = strip_region(_source(cell), HIDDEN_BEGIN, HIDDEN_END)
    return strip_region(text, SOLUTION_BEGIN, SOLUTION_END)


def factors_stated_before_asked(cells: list[dict]) -> list[tuple[str, str]]:
    """(cell, phrase) for every growth factor the core states before its written answer
    asks for them (the written answer's own model answer is not visible in the release)."""
    found = []
    for cell in cells:
        if _grade_id(cell) == "written_growth":
            break
        for phrase in FACTOR.findall(visible_text(cell)):
            found.append((_grade_id(cell) or cell.get("id", ""), phrase))
    return found


def test_no_growth_factor_is_stated_before_the_question_asks_it():
    assert factors_stated_before_asked(CELLS) == []


def test_the_scan_sees_the_old_notebooks_leaks():
    """The notebook before this rework stated ×10 / ×100 in md_fix_summary and "2 倍 / 4 倍"
    in visible assert messages; the scan finds them (a test that cannot fail proves nothing)."""
    old = [
        {"cell_type": "markdown", "metadata": {"nbgrader": {"grade_id": "md_fix_summary"}},
         "source": ["| 读法 A | 变成原来的 10 倍 | 不变 |\n| 读法 B | 变成原来的 100 倍 | 变成原来的 10 倍 |"]},
        {"cell_type": "code", "metadata": {"nbgrader": {"grade_id": "test_independent_growth"}},
         "source": ['assert np.isclose(f, 2.0), "应变成原来的 2 倍"\n### BEGIN HIDDEN TESTS\n### END HIDDEN TESTS']},
        {"cell_type": "markdown", "metadata": {"nbgrader": {"grade_id": "written_growth"}}, "source": ["×10"]},
    ]
    assert [cell for cell, _ in factors_stated_before_asked(old)] == ["md_fix_summary"] * 3 + [
        "test_independent_growth"]


def test_no_locked_cell_contains_a_graded_answer():
    """A given cell may call the student's functions but never define or assign one."""
    answers = set(DEFINED_IN) - {"np", "sp", "plt", "softmax", "d_k", "sigma_q", "sigma_k"}
    for cell in CELLS:
        meta = cell["metadata"].get("nbgrader", {})
        if cell["cell_type"] != "code" or meta.get("solution"):
            continue
        source = visible_text(cell)
        for name in answers:
            assert not re.search(rf"^\s*(def\s+{name}\b|{name}\s*=)", source, re.M), (_grade_id(cell), name)


def test_std_is_the_std_of_the_students_own_samples():
    """Issue 29.2: the visible assert's consistency (dot_product_std is the std of what
    dot_product_samples draws) is decided in the host too: a right std beside a sampler
    that draws something else loses the cell without the visible assert."""
    def std(d_k, n_samples, rng, scaled=False):
        s = np.sum(rng.standard_normal((n_samples, d_k)) * rng.standard_normal((n_samples, d_k)), axis=1)
        return float(np.std(s / np.sqrt(d_k) if scaled else s))

    def halved(d_k, n_samples, rng):
        return np.sum(rng.standard_normal((n_samples, d_k)) * rng.standard_normal((n_samples, d_k)), axis=1) / 2

    assert _verdict("q2.std", {"dot_product_std": std, "dot_product_samples": halved})
    assert _verdict("q2.std", {"dot_product_std": std, "dot_product_samples": REFERENCE.dot_product_samples}) is None
