"""Each catalogued mistake, made on purpose, is recognised by name."""

from __future__ import annotations

import numpy as np
import pytest

from autograder.bank.lib import misconceptions as mc
from autograder.bank.lib import reference as ref
from autograder.bank.lib.compare import CheckFailed, assert_close


def _inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    n_q, n_k, d_model, d_k, d_v = 3, 5, 6, 4, 2
    X = rng.normal(size=(n_k, d_model))
    Q = rng.normal(size=(n_q, d_k)) * 2
    return X, Q, X @ rng.normal(size=(d_model, d_k)), X @ rng.normal(size=(d_model, d_v))


def _softmax(z, axis=-1):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _naive_softmax(z, axis=-1):
    with np.errstate(all="ignore"):
        e = np.exp(z)
        return e / e.sum(axis=axis, keepdims=True)


# Each wrong implementation written the way a student would write it.
WRONG_ATTENTION = {
    "no_scaling": lambda Q, K, V, dm: _softmax(Q @ K.T) @ V,
    "divide_by_dk": lambda Q, K, V, dm: _softmax(Q @ K.T / K.shape[1]) @ V,
    "scale_sqrt_dmodel": lambda Q, K, V, dm: _softmax(Q @ K.T / np.sqrt(dm)) @ V,
    "scale_sqrt_dv": lambda Q, K, V, dm: _softmax(Q @ K.T / np.sqrt(V.shape[1])) @ V,
    "softmax_query_axis": lambda Q, K, V, dm: _softmax(Q @ K.T / np.sqrt(K.shape[1]), axis=0) @ V,
    "raw_scores": lambda Q, K, V, dm: (Q @ K.T / np.sqrt(K.shape[1])) @ V,
    "weights_instead_of_output": lambda Q, K, V, dm: _softmax(Q @ K.T / np.sqrt(K.shape[1])),
    "k_as_v": lambda Q, K, V, dm: _softmax(Q @ K.T / np.sqrt(K.shape[1])) @ K,
    "transposed_output": lambda Q, K, V, dm: (_softmax(Q @ K.T / np.sqrt(K.shape[1])) @ V).T,
}


@pytest.mark.parametrize("key", sorted(WRONG_ATTENTION))
def test_wrong_attention_is_named(key):
    X, Q, K, V = _inputs()
    wrong = WRONG_ATTENTION[key](Q, K, V, X.shape[1])
    found = mc.match(wrong, mc.attention_variants(Q, K, V, d_model=X.shape[1]))
    assert found == mc.CATALOG[key].describe()


def test_q_used_as_v_is_named():
    rng = np.random.default_rng(2)
    Q, K, V = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 5))
    wrong = _softmax(Q @ K.T / np.sqrt(3)) @ Q
    assert mc.match(wrong, mc.attention_variants(Q, K, V)) == mc.CATALOG["q_as_v"].describe()


def test_naive_softmax_overflow_is_named():
    _, Q, K, V = _inputs()
    Q = Q * 1e3  # scores of magnitude ~1e4
    wrong = _naive_softmax(Q @ K.T / np.sqrt(K.shape[1])) @ V
    assert not np.isfinite(wrong).all()
    found = mc.match(wrong, mc.attention_variants(Q, K, V))
    assert found == mc.CATALOG["naive_softmax_overflow"].describe()


@pytest.mark.parametrize("key, wrong", [
    ("global_normalisation", lambda z: np.exp(z) / np.exp(z).sum()),
    ("exp_without_normalising", np.exp),
    ("softmax_query_axis", lambda z: _softmax(z, axis=0)),
])
def test_wrong_softmax_is_named(key, wrong):
    z = np.random.default_rng(4).normal(size=(3, 4))
    assert mc.match(wrong(z), mc.softmax_variants(z)) == mc.CATALOG[key].describe()


def test_correct_result_matches_no_misconception_with_different_values():
    _, Q, K, V = _inputs()
    assert mc.match(ref.attention(Q, K, V) + 0.5, mc.attention_variants(Q, K, V)) is None


def test_assert_close_names_the_misconception_in_its_message():
    _, Q, K, V = _inputs()
    with pytest.raises(CheckFailed, match="缺少 1/√d_k 缩放"):
        assert_close(WRONG_ATTENTION["no_scaling"](Q, K, V, 6), ref.attention(Q, K, V), "attention",
                     diagnose=mc.diagnoser(mc.attention_variants(Q, K, V)))


def test_transposed_output_is_reported_as_a_shape_problem_with_its_name():
    _, Q, K, V = _inputs()
    with pytest.raises(CheckFailed, match="形状不对.*\n.*输出被转置"):
        assert_close(ref.attention(Q, K, V).T, ref.attention(Q, K, V), "attention",
                     diagnose=mc.diagnoser(mc.attention_variants(Q, K, V)))


def test_register_refuses_a_conflicting_redefinition():
    mc.register("test_only_entry", "测试", "说明")
    assert mc.register("test_only_entry", "测试", "说明").label == "测试"
    with pytest.raises(ValueError):
        mc.register("test_only_entry", "别的", "说明")
