"""Fast tests of the q3_permutation checks (no kernels, no nbgrader).

The source notebook's solution cells are executed in-process to obtain the reference
student's values; mistakes and alternatives apply their edits to the same cells.
"""

from __future__ import annotations

import ast
import contextlib
import io
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from autograder import notebooks as nbs
from autograder import reference as ref
from autograder.bank import Context, checks_for, get_check, q3, run_check
from autograder.compare import CheckFailed
from autograder.samples import q3 as samples_q3
from autograder.testfn import TestFunction, define
from autograder.variants import Variant

A = "q3_permutation"
SOURCE = Path(__file__).resolve().parents[1] / "source" / A / f"{A}.ipynb"


@cache
def _notebook():
    return nbs.read(SOURCE)


@cache
def _cells() -> dict[str, tuple[str, dict[str, str]]]:
    """Grade cell id -> (check name, {check keyword: notebook variable})."""
    out = {}
    for cell in _notebook().cells:
        gid = nbs.grade_id(cell)
        if not (gid or "").startswith("test_"):
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "run_check":
                out[gid] = (node.args[0].value, {k.arg: k.value.id for k in node.keywords})
    return out


#: Locked code cells the solution cells rely on (the given causal attention).
LOCKED_CODE = ("imports", "causal_demo")


@cache
def _namespace(variant: Variant | None = None) -> dict:
    """Run the imports and every solution cell (with the variant's edits) in one namespace."""
    ns: dict = {"display": lambda *args, **kwargs: None}
    edits = variant.edits if variant else ()
    for cell in _notebook().cells:
        gid = nbs.grade_id(cell)
        if cell.cell_type != "code" or not (gid in LOCKED_CODE or nbs.is_solution_cell(cell)):
            continue
        source = cell.source
        for edit in edits:
            if edit.cell == gid:
                assert source.count(edit.old) == 1, (variant.name, edit.old)
                source = source.replace(edit.old, edit.new)
        with contextlib.redirect_stdout(io.StringIO()):
            exec(nbs.strip_markers(source), ns)
    return ns


def _values(cell: str, variant: Variant | None = None) -> tuple[str, dict]:
    name, keywords = _cells()[cell]
    ns = _namespace(variant)
    return name, {k: ns[v] for k, v in keywords.items()}


def _verdict(cell: str, variant: Variant | None = None) -> str | None:
    """``None`` when the cell's check passes, else the failure message."""
    name, values = _values(cell, variant)
    try:
        run_check(name, **values)
    except CheckFailed as err:
        return str(err)
    return None


CELLS = sorted(_cells())
NAMES = [c.name for c in checks_for(A)]


def test_every_check_has_a_grade_cell():
    assert sorted(name for name, _ in _cells().values()) == sorted(NAMES)
    assert len(CELLS) >= 5


@pytest.mark.parametrize("cell", CELLS)
def test_reference_passes(cell):
    assert _verdict(cell) is None


@pytest.mark.parametrize("variant", samples_q3.ALTERNATIVES, ids=lambda v: v.name)
@pytest.mark.parametrize("cell", CELLS)
def test_alternative_passes(cell, variant):
    assert _verdict(cell, variant) is None


@pytest.mark.parametrize("variant", samples_q3.MISTAKES, ids=lambda v: v.name)
@pytest.mark.parametrize("cell", CELLS)
def test_mistake_loses_only_its_cells(cell, variant):
    message = _verdict(cell, variant)
    if cell in variant.loses:
        assert message is not None, f"{variant.name} should fail {cell}"
        for label in variant.feedback:
            assert label in message
    else:
        assert message is None, message


def test_mistakes_cover_the_issue():
    keys = {"perm_matrix_inverse", "equivariance_vs_invariance", "pe_sin_cos_swapped",
            "pe_exponent_i_over_d", "multiset_as_set", "compare_by_position"}
    labels = {q3.mc.CATALOG[k].label for k in keys}
    assert labels <= {label for v in samples_q3.MISTAKES for label in v.feedback}
    assert len(samples_q3.ALTERNATIVES) >= 2


# ------------------------------------------------------------------ the checker is checked


def _checker(compare):
    def is_eq(f, X, perm, atol=1e-8):
        lhs, rhs = np.asarray(f(X[perm])), compare(f, X, perm)
        return bool(lhs.shape == rhs.shape and np.allclose(lhs, rhs, rtol=0, atol=atol))
    return is_eq


@pytest.mark.parametrize("wrong", [
    lambda f, X, perm: np.asarray(f(X)),  # invariance instead of equivariance
    lambda f, X, perm: np.asarray(f(X))[np.argsort(perm)],  # inverse permutation
])
def test_equivariance_checker_rejects_wrong_comparisons(wrong):
    with pytest.raises(CheckFailed):
        run_check("q3.is_permutation_equivariant", is_permutation_equivariant=_checker(wrong))


@pytest.mark.parametrize("answer", [True, False])
def test_equivariance_checker_rejects_constant_answers(answer):
    with pytest.raises(CheckFailed):
        run_check("q3.is_permutation_equivariant",
                  is_permutation_equivariant=lambda f, X, perm, atol=1e-8: answer)


def test_equivariance_checker_must_honour_atol():
    def ignores_atol(f, X, perm, atol=1e-8):
        return bool(np.allclose(f(X[perm]), np.asarray(f(X))[perm], rtol=0, atol=1e-8))
    with pytest.raises(CheckFailed, match="atol"):
        run_check("q3.is_permutation_equivariant", is_permutation_equivariant=ignores_atol)


def test_attention_with_positions_names_missing_encoding():
    ns = _namespace()
    with pytest.raises(CheckFailed, match=q3.PE_MISSING.label):
        run_check("q3.attention_with_positions",
                  self_attention_with_positions=ns["self_attention"])


# ------------------------------------------------------------------ the engine contract


_DATA = (np.ndarray, np.generic, int, float, bool, str, type(None))


def _is_data(value) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_is_data(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_data(v) for k, v in value.items())
    return isinstance(value, _DATA) or isinstance(value, (sp.Basic, sp.MatrixBase))


@pytest.mark.parametrize("cell", CELLS)
def test_checks_pass_only_data_and_test_functions(cell, monkeypatch):
    """What a check hands to student code could cross into a sandbox: data, or a
    TestFunction rebuilt there from its source and data alone (no host closure)."""
    seen = []
    real_call = Context.call

    def call(self, func, *args, what, **kwargs):
        for value in [*args, *kwargs.values()]:
            if isinstance(value, TestFunction):
                assert all(_is_data(v) for v in value.data.values()), value
                seen.append(value)
            else:
                assert _is_data(value), f"{what}: {type(value).__name__} is not data"
        # the student's function receives them through the wire (tests/conftest.py),
        # where a TestFunction is defined again from its source and data alone
        return real_call(self, func, *args, what=what, **kwargs)

    monkeypatch.setattr(Context, "call", call)
    assert _verdict(cell) is None
    if cell == "test_equivariance_checker":
        assert len(seen) == 9


def test_test_functions_compute_what_their_labels_say():
    ns = _namespace()
    rng = np.random.default_rng(7)
    Z = rng.standard_normal((5, 4))
    W_q, W_k, W_v = rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    expected = {
        "attention": ref.self_attention(Z, W_q, W_k, W_v)[0],
        "pe": ref.self_attention(Z + ref.sinusoidal_positional_encoding(5, 4), W_q, W_k, W_v)[0],
        "causal": ns["causal_self_attention"](Z, W_q, W_k, W_v)[0],
    }
    for key, make in (("attention", q3.attention_fn), ("pe", q3.attention_pe_fn),
                      ("causal", q3.causal_fn)):
        f = make(W_q, W_k, W_v)
        g = define(f.source, f.name, dict(f.data))
        assert np.allclose(g(Z), expected[key], atol=1e-12), key
    assert np.allclose(q3.SORT(Z), np.sort(Z, axis=0))
    assert np.allclose(q3.noisy_tanh_fn(5)(Z) - np.tanh(Z), 1e-3 * np.arange(5)[:, None])


def test_causal_example_in_the_notebook_breaks_equivariance():
    ns = _namespace()
    out, swapped = ns["causal_outputs"], ns["causal_swapped"]
    assert np.allclose(out, [[2, 0], [0.6605, 1.3395]], atol=1e-4)
    assert np.allclose(swapped, [[0, 2], [1.3395, 0.6605]], atol=1e-4)


# ------------------------------------------------------------------ one convention: (output, weights)


def test_self_attention_that_returns_only_the_output_is_told_so():
    ns = _namespace()
    with pytest.raises(CheckFailed, match=r"\(output, weights\)"):
        run_check("q3.self_attention",
                  self_attention=lambda *a: ns["self_attention"](*a)[0])
    with pytest.raises(CheckFailed, match=r"\(output, weights\)"):
        run_check("q3.attention_with_positions",
                  self_attention_with_positions=lambda *a: ns["self_attention_with_positions"](*a)[0])
    with pytest.raises(CheckFailed, match=r"\(output, weights\)"):
        run_check("q3.symbolic_self_attention",
                  symbolic_self_attention=lambda *a: ns["symbolic_self_attention"](*a)[0])


def test_self_attention_with_wrong_weights_fails():
    ns = _namespace()

    def wrong_weights(*a):
        out, w = ns["self_attention"](*a)
        return out, w.T
    with pytest.raises(CheckFailed, match="weights"):
        run_check("q3.self_attention", self_attention=wrong_weights)


# ------------------------------------------------------------------ 人咬人


def test_multiset_names_the_set_reading():
    ns = _namespace()
    as_set = float(ns["original_weights"][1, 0])  # 咬's weight on 人 in 人咬
    for wrong in (as_set, float(ns["rbr_weights"][1, 0])):
        with pytest.raises(CheckFailed, match=q3.MULTISET.label):
            run_check("q3.multiset", rbr_outputs=ns["rbr_outputs"], bites_weight_on_man=wrong,
                      repeat_matters=True)
    with pytest.raises(CheckFailed, match=q3.MULTISET.label):
        run_check("q3.multiset", rbr_outputs=ns["rbr_outputs"],
                  bites_weight_on_man=ns["bites_weight_on_man"], repeat_matters=False)
    with pytest.raises(CheckFailed, match="rbr_outputs"):
        run_check("q3.multiset", rbr_outputs=ns["original_outputs"],
                  bites_weight_on_man=ns["bites_weight_on_man"], repeat_matters=True)


def test_hand_swap_names_the_unswapped_outputs():
    with pytest.raises(CheckFailed, match="忘了"):
        run_check("q3.hand_swap", swapped_outputs=ref.hand_example()[0], swap_matches=True)


def test_hand_swap_names_the_whole_pair():
    pair = ref.self_attention(ref.HAND_X[[1, 0]], np.eye(2), np.eye(2), 2 * np.eye(2))
    with pytest.raises(CheckFailed, match="二元组"):
        run_check("q3.hand_swap", swapped_outputs=pair, swap_matches=True)


def test_swap_residual_refuses_a_nonzero_residual():
    ns = _namespace()
    wrong = ns["symbolic_self_attention"](ns["P2"] * ns["X_sym"], ns["W_q_sym"], ns["W_k_sym"],
                                         ns["W_v_sym"])[0] - ns["symbolic_self_attention"](
        ns["X_sym"], ns["W_q_sym"], ns["W_k_sym"], ns["W_v_sym"])[0]
    with pytest.raises(CheckFailed, match="不为零"):
        run_check("q3.symbolic_swap_residual", symbolic_swap_residual=wrong,
                  symbolic_self_attention=ns["symbolic_self_attention"])


def test_symbolic_attention_refuses_floats():
    ns = _namespace()

    def with_floats(X, W_q, W_k, W_v):
        out, weights = ns["symbolic_self_attention"](X, W_q, W_k, W_v)
        return out * 1.0, weights
    with pytest.raises(CheckFailed, match="浮点数"):
        run_check("q3.symbolic_self_attention", symbolic_self_attention=with_floats)


# ------------------------------------------------------------------ wrong kinds, quiet, seeds


@pytest.mark.parametrize("bad", [None, "abc"], ids=["None", "string"])
@pytest.mark.parametrize("cell", CELLS)
def test_wrong_kinds_give_a_clear_message(cell, bad):
    name, values = _values(cell)
    with pytest.raises(CheckFailed) as info:
        run_check(name, **{k: bad for k in values})
    message = str(info.value)
    assert message and "检查时出错" not in message and "Traceback" not in message


@pytest.mark.parametrize("variant", [None, *samples_q3.MISTAKES], ids=lambda v: v.name if v else "perfect")
def test_checks_write_nothing_to_stderr(variant, capfd):
    for cell in CELLS:
        _verdict(cell, variant)
    assert capfd.readouterr().err == ""


# the solution on every cell, each mistake on the cells it loses (where a message is at stake)
_DETERMINISM = [pytest.param(c, None, id=f"{c}-perfect") for c in CELLS] + \
    [pytest.param(c, v, id=f"{c}-{v.name}") for v in samples_q3.MISTAKES for c in CELLS if c in v.loses]


@pytest.mark.parametrize("cell, variant", _DETERMINISM)
def test_same_seed_same_verdict(cell, variant):
    name, values = _values(cell, variant)
    chk = get_check(name)

    def verdict(seed):
        try:
            chk.func(Context(name, seed=seed), **values)
        except CheckFailed as err:
            return str(err)
        return None

    assert verdict(12345) == verdict(12345)
    assert _verdict(cell, variant) == _verdict(cell, variant)


def test_swap_residual_rebuilds_the_statement_and_refuses_a_positional_attention():
    """Its own residual is zero (from the solution), but the function it came from must
    also be equivariant on 3 symbolic tokens: one that adds each row's position is not."""
    ns = _namespace()
    solution = ns["symbolic_self_attention"]
    residual = solution(ns["P2"] * ns["X_sym"], ns["W_q_sym"], ns["W_k_sym"], ns["W_v_sym"])[0] \
        - ns["P2"] * solution(ns["X_sym"], ns["W_q_sym"], ns["W_k_sym"], ns["W_v_sym"])[0]

    def positional(X, W_q, W_k, W_v):
        out, weights = solution(X, W_q, W_k, W_v)
        return out + sp.Matrix(out.rows, out.cols, lambda i, j: i * X[i, j]), weights
    run_check("q3.symbolic_swap_residual", symbolic_swap_residual=residual,
              symbolic_self_attention=solution)
    with pytest.raises(CheckFailed, match="输出不只是换了顺序"):
        run_check("q3.symbolic_swap_residual", symbolic_swap_residual=residual,
                  symbolic_self_attention=positional)
