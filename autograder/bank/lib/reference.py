"""Reference self-attention, exactly as lecture 9 defines it.

Row-vector convention: ``X`` is ``(n, d_model)``, ``Q = X @ W_q``, ``K = X @ W_k``,
``V = X @ W_v``; ``Attention(Q, K, V) = softmax(Q Kᵀ / sqrt(d_k)) V`` with the softmax
taken over the keys (each row of weights sums to 1) and ``d_k = K.shape[-1]``.

Two twins live here: a NumPy one (stable for scores of any magnitude, float32 or
float64 in, the same dtype out) and an exact SymPy one on ``sympy.Matrix`` inputs.
The check bank calls these; students never see them.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

__all__ = [
    "softmax",
    "attention_weights",
    "attention",
    "self_attention",
    "sinusoidal_positional_encoding",
    "sym_softmax",
    "sym_attention_weights",
    "sym_attention",
    "sym_self_attention",
    "HAND_X",
    "LECTURE_ATOL",
    "hand_example",
]


def _float_array(a: object) -> np.ndarray:
    """Return ``a`` as a float array, keeping float32/float64 and promoting the rest."""
    arr = np.asarray(a)
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    return arr


def softmax(z: object, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis``; finite for inputs of any magnitude."""
    z = _float_array(z)
    # Subtracting the max leaves softmax unchanged and keeps exp() at most 1.
    shifted = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


def attention_weights(Q: object, K: object) -> np.ndarray:
    """``softmax(Q Kᵀ / sqrt(d_k))`` over the keys: shape ``(n_q, n_k)``."""
    Q, K = _float_array(Q), _float_array(K)
    d_k = K.shape[-1]
    scores = Q @ K.T / np.sqrt(np.asarray(d_k, dtype=np.result_type(Q, K)))
    return softmax(scores, axis=-1)


def attention(Q: object, K: object, V: object) -> np.ndarray:
    """Scaled dot-product attention output: shape ``(n_q, d_v)``."""
    return attention_weights(Q, K) @ _float_array(V)


def self_attention(
    X: object, W_q: object, W_k: object, W_v: object
) -> tuple[np.ndarray, np.ndarray]:
    """Self-attention of the rows of ``X``: returns ``(output, weights)``."""
    X = _float_array(X)
    Q, K, V = X @ _float_array(W_q), X @ _float_array(W_k), X @ _float_array(W_v)
    weights = attention_weights(Q, K)
    return weights @ V, weights


def sinusoidal_positional_encoding(n: int, d: int) -> np.ndarray:
    """Lecture 8's encoding: ``PE[p, 2i] = sin(p / 10000^(2i/d))``, ``PE[p, 2i+1] = cos(...)``."""
    pos = np.arange(n, dtype=np.float64)[:, None]
    pair = np.arange(d) // 2  # column j belongs to frequency pair i = j // 2
    angles = pos / np.power(10000.0, 2.0 * pair / d)
    return np.where(np.arange(d) % 2 == 0, np.sin(angles), np.cos(angles))


# ---------------------------------------------------------------- exact SymPy twin


def _sym_matrix(a: object) -> sp.Matrix:
    return a if isinstance(a, sp.MatrixBase) else sp.Matrix(a)


def sym_softmax(z: object) -> sp.Matrix:
    """Exact softmax of each row of a SymPy matrix (a 1-D list counts as one row)."""
    if not isinstance(z, sp.MatrixBase):
        z = sp.Matrix(z) if np.ndim(z) == 2 else sp.Matrix([list(np.ravel(z))])
    rows = []
    for i in range(z.rows):
        exps = [sp.exp(v) for v in z.row(i)]
        total = sp.Add(*exps)
        rows.append([e / total for e in exps])
    return sp.Matrix(rows)


def sym_attention_weights(Q: object, K: object) -> sp.Matrix:
    """Exact ``softmax(Q Kᵀ / sqrt(d_k))`` over the keys."""
    Q, K = _sym_matrix(Q), _sym_matrix(K)
    return sym_softmax(Q * K.T / sp.sqrt(K.cols))


def sym_attention(Q: object, K: object, V: object) -> sp.Matrix:
    """Exact attention output ``weights · V``."""
    return sym_attention_weights(Q, K) * _sym_matrix(V)


def sym_self_attention(
    X: object, W_q: object, W_k: object, W_v: object
) -> tuple[sp.Matrix, sp.Matrix]:
    """Exact self-attention of the rows of ``X``: returns ``(output, weights)``."""
    X = _sym_matrix(X)
    Q, K, V = X * _sym_matrix(W_q), X * _sym_matrix(W_k), X * _sym_matrix(W_v)
    weights = sym_attention_weights(Q, K)
    return weights * V, weights


# ---------------------------------------------------------------- the lecture's example

#: The lecture prints its hand example to 3 decimals: compare with it to this tolerance.
LECTURE_ATOL = 2e-3

HAND_X = np.array([[1.0, 0.0], [0.0, 1.0]])


def hand_example(
    v_scale: float = 2.0, q_scale: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """The lecture's hand example with ``W_q = q_scale·I``, ``W_k = I``, ``W_v = v_scale·I``."""
    eye = np.eye(2)
    return self_attention(HAND_X, q_scale * eye, eye, v_scale * eye)
