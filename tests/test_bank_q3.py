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

from autograder import notebooks as nbs
from autograder.bank import Context, checks_for, get_check, q3, run_check
from autograder.compare import CheckFailed
from autograder.samples import q3 as samples_q3
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


@cache
def _namespace(variant: Variant | None = None) -> dict:
    """Run the imports and every solution cell (with the variant's edits) in one namespace."""
    ns: dict = {"display": lambda *args, **kwargs: None}
    edits = variant.edits if variant else ()
    for cell in _notebook().cells:
        gid = nbs.grade_id(cell)
        if cell.cell_type != "code" or not (gid == "imports" or nbs.is_solution_cell(cell)):
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
            "pe_exponent_i_over_d"}
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


def test_hand_swap_names_the_unswapped_outputs():
    from autograder import reference as ref
    with pytest.raises(CheckFailed, match="忘了"):
        run_check("q3.hand_swap", swapped_outputs=ref.hand_example()[0], swap_matches=True)


def test_swap_residual_refuses_a_nonzero_residual():
    ns = _namespace()
    wrong = ns["symbolic_self_attention"](ns["P2"] * ns["X_sym"], ns["W_q_sym"], ns["W_k_sym"],
                                         ns["W_v_sym"]) - ns["symbolic_self_attention"](
        ns["X_sym"], ns["W_q_sym"], ns["W_k_sym"], ns["W_v_sym"])
    with pytest.raises(CheckFailed, match="不为零"):
        run_check("q3.symbolic_swap_residual", symbolic_swap_residual=wrong,
                  symbolic_self_attention=ns["symbolic_self_attention"])


def test_symbolic_attention_refuses_floats():
    ns = _namespace()

    def with_floats(X, W_q, W_k, W_v):
        return ns["symbolic_self_attention"](X, W_q, W_k, W_v) * 1.0
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


@pytest.mark.parametrize("variant", [None, *samples_q3.MISTAKES], ids=lambda v: v.name if v else "perfect")
@pytest.mark.parametrize("cell", CELLS)
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
