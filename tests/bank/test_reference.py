"""The reference attention against the lecture, a naive loop, and its own properties."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from autograder.bank.lib import reference as ref

LECTURE_ATOL = ref.LECTURE_ATOL


def naive_attention(Q: np.ndarray, K: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Lecture 9 written out with scalar loops: the independent twin of the reference."""
    n_q, n_k, d_k = Q.shape[0], K.shape[0], K.shape[1]
    out = np.zeros((n_q, V.shape[1]))
    for i in range(n_q):
        scores = [sum(Q[i, t] * K[j, t] for t in range(d_k)) / d_k ** 0.5 for j in range(n_k)]
        top = max(scores)
        exps = [np.exp(s - top) for s in scores]
        for j in range(n_k):
            out[i] += exps[j] / sum(exps) * V[j]
    return out


def test_hand_example_weights_match_lecture():
    _, weights = ref.hand_example()
    np.testing.assert_allclose(weights, [[0.670, 0.330], [0.330, 0.670]], atol=LECTURE_ATOL)


def test_hand_example_outputs_match_lecture():
    output, _ = ref.hand_example()
    np.testing.assert_allclose(output, [[1.340, 0.660], [0.660, 1.340]], atol=LECTURE_ATOL)


def test_hand_example_with_3I_scales_output_by_one_and_a_half():
    out2, w2 = ref.hand_example(v_scale=2.0)
    out3, w3 = ref.hand_example(v_scale=3.0)
    np.testing.assert_array_equal(w2, w3)
    np.testing.assert_allclose(out3, 1.5 * out2, rtol=1e-12)
    np.testing.assert_allclose(out3, [[2.009, 0.991], [0.991, 2.009]], atol=LECTURE_ATOL)


def test_sympy_twin_gives_exact_weight_11():
    X = sp.Matrix([[1, 0], [0, 1]])
    _, weights = ref.sym_self_attention(X, sp.eye(2), sp.eye(2), 2 * sp.eye(2))
    expected = sp.exp(1 / sp.sqrt(2)) / (1 + sp.exp(1 / sp.sqrt(2)))
    assert sp.simplify(weights[0, 0] - expected) == 0
    assert not any(isinstance(a, sp.Float) for a in sp.preorder_traversal(weights[0, 0]))


def test_sympy_twin_agrees_with_numpy_on_rationals():
    rng = np.random.default_rng(3)
    X = sp.Matrix(3, 2, [sp.Rational(int(v), 4) for v in rng.integers(-8, 8, 6)])
    W = [sp.Matrix(2, 2, [sp.Rational(int(v), 3) for v in rng.integers(-6, 6, 4)]) for _ in range(3)]
    exact, _ = ref.sym_self_attention(X, *W)
    numeric, _ = ref.self_attention(np.array(X, dtype=float), *(np.array(w, dtype=float) for w in W))
    np.testing.assert_allclose(np.array(exact.evalf(), dtype=float), numeric, rtol=1e-12)


@pytest.mark.parametrize("n_q, n_k, d_k, d_v", [(1, 1, 1, 1), (2, 5, 3, 4), (6, 2, 7, 1), (4, 4, 8, 8)])
def test_reference_matches_naive_loop(n_q, n_k, d_k, d_v):
    rng = np.random.default_rng(n_q * 100 + n_k * 10 + d_k)
    Q, K, V = rng.normal(size=(n_q, d_k)), rng.normal(size=(n_k, d_k)), rng.normal(size=(n_k, d_v))
    np.testing.assert_allclose(ref.attention(Q, K, V), naive_attention(Q, K, V), rtol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_weights_sum_to_one_per_query(seed):
    rng = np.random.default_rng(seed)
    Q, K = rng.normal(size=(3, 4)), rng.normal(size=(6, 4))
    weights = ref.attention_weights(Q, K)
    assert weights.shape == (3, 6)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-12)
    assert (weights > 0).all()


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_is_shift_invariant(axis):
    z = np.random.default_rng(1).normal(size=(3, 4))
    np.testing.assert_allclose(ref.softmax(z + 123.0, axis), ref.softmax(z, axis), rtol=1e-12)


def test_self_attention_is_permutation_equivariant():
    rng = np.random.default_rng(7)
    X, Wq, Wk, Wv = rng.normal(size=(5, 3)), *(rng.normal(size=(3, 2)) for _ in range(3))
    perm = rng.permutation(5)
    out, _ = ref.self_attention(X, Wq, Wk, Wv)
    out_perm, _ = ref.self_attention(X[perm], Wq, Wk, Wv)
    np.testing.assert_allclose(out_perm, out[perm], rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_is_kept(dtype):
    rng = np.random.default_rng(0)
    Q, K, V = (rng.normal(size=(3, 2)).astype(dtype) for _ in range(3))
    assert ref.attention(Q, K, V).dtype == dtype
    assert ref.softmax(Q).dtype == dtype


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_huge_scores_stay_finite(dtype):
    Q = np.array([[1e4, -1e4], [3e3, 1e4]], dtype=dtype)
    out = ref.attention(Q, Q, Q)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(ref.attention_weights(Q, Q).sum(axis=1), 1.0, rtol=1e-6)


def test_single_token_attention_returns_v():
    x, V = np.array([[0.3, -2.0]]), np.array([[5.0, 6.0, 7.0]])
    np.testing.assert_array_equal(ref.attention_weights(x * 1e6, x), [[1.0]])
    np.testing.assert_allclose(ref.attention(x, x, V), V)


def test_positional_encoding_follows_the_formula():
    pe = ref.sinusoidal_positional_encoding(4, 5)
    assert pe.shape == (4, 5)
    for pos in range(4):
        for j in range(5):
            angle = pos / 10000 ** (2 * (j // 2) / 5)
            assert pe[pos, j] == pytest.approx(np.sin(angle) if j % 2 == 0 else np.cos(angle))


# ---------------------------------------------------------------- property tests

finite = st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 5), st.integers(1, 6)), elements=finite),
       st.floats(-50, 50))
def test_softmax_rows_sum_to_one_and_ignore_shifts(z, shift):
    p = ref.softmax(z)
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(ref.softmax(z + shift), p, rtol=1e-9, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(1, 4), st.integers(1, 4), st.integers(0, 10**6))
def test_attention_matches_naive_loop_on_any_shape(n_q, n_k, d_k, d_v, seed):
    rng = np.random.default_rng(seed)
    Q, K, V = rng.normal(size=(n_q, d_k)), rng.normal(size=(n_k, d_k)), rng.normal(size=(n_k, d_v))
    np.testing.assert_allclose(ref.attention(Q, K, V), naive_attention(Q, K, V), rtol=1e-10, atol=1e-12)
