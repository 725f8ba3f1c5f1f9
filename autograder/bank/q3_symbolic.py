"""q3's exact extension: the permutation matrix P and a SymPy proof that
Attention(PX) − P·Attention(X) = 0 for fully symbolic inputs."""

from __future__ import annotations

import numpy as np
import sympy as sp

from . import Context, check
from .lib import misconceptions as mc
from .lib import reference as ref
from .lib.compare import as_array, assert_close, fail
from .lib.symbolic import as_matrix, is_equivalent
from .q3_probes import random_perm

INVERSE_P = mc.register(
    "perm_matrix_inverse", "置换矩阵建成了逆置换",
    "P @ X 得到的是 X[argsort(perm)]（逆置换），而不是 X[perm]。"
    "P 的第 i 行应只在第 perm[i] 列为 1，即 P[i, perm[i]] = 1，这样 (P @ X)[i] = X[perm[i]]。"
    "交换两个元素的置换恰好等于自己的逆，所以只用 [1, 0] 试验发现不了这个错误。")

X_NAMES = ("x11", "x12", "x21", "x22")
W_NAMES = tuple(f"{m}{i}{j}" for m in "qkv" for i in (1, 2) for j in (1, 2))


@check("q3.permutation_matrix", "permutation_matrix：P @ X 等于 X[perm]")
def permutation_matrix_values(ctx: Context, *, permutation_matrix) -> None:
    sizes = ctx.dims(3, 8, 3)
    for k, n in enumerate(sizes):
        perm = random_perm(ctx.rng, n, involution=None if k > 0 else False)
        arg = [int(p) for p in perm] if k == 1 else perm  # a plain list is a permutation too
        what = f"permutation_matrix(perm)（n={n}）"
        P = as_array(ctx.call(permutation_matrix, arg, what=what), what)
        if P.shape != (n, n):
            fail(f"{what} 的形状不对：期望 {(n, n)}，得到 {P.shape}。")
        X = ctx.randn(n, int(ctx.rng.integers(2, 5)))
        if not np.allclose(P @ X, X[perm], atol=1e-12):
            cause = ""
            if np.allclose(P @ X, X[np.argsort(perm)], atol=1e-12):
                cause = f"\n可能的原因：{INVERSE_P.describe()}"
            elif np.allclose(X.T @ P, X[perm].T, atol=1e-12) or np.allclose(P.T @ X, X[perm]):
                cause = "\n可能的原因：行列颠倒了，得到的是所需矩阵的转置。"
            fail(f"{what}：P @ X 与 X[perm] 不一致（P 应把 X 的第 perm[i] 行放到第 i 行）。{cause}")
        if not np.allclose(P @ P.T, np.eye(n), atol=1e-12):
            fail(f"{what}：P 不是正交矩阵（P @ P.T 应等于单位矩阵）。置换矩阵每行每列恰有一个 1。")
    n = sizes[0]
    what = f"permutation_matrix(恒等置换)（n={n}）"
    ident = as_array(ctx.call(permutation_matrix, np.arange(n), what=what), what)
    assert_close(ident, np.eye(n), what + "（应为单位矩阵）", rtol=0, atol=1e-12)


# ------------------------------------------------------------------ SymPy


def _rational_matrix(ctx: Context, rows: int, cols: int) -> sp.Matrix:
    nums = ctx.rng.integers(-3, 4, size=(rows, cols))
    dens = ctx.rng.integers(1, 3, size=(rows, cols))
    return sp.Matrix(rows, cols, lambda i, j: sp.Rational(int(nums[i, j]), int(dens[i, j])))


def _sym_pair(value: object, what: str) -> tuple[sp.Matrix, sp.Matrix]:
    """``(output, weights)`` as exact SymPy matrices, or a message."""
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        kind = "一个矩阵" if isinstance(value, sp.MatrixBase) else type(value).__name__
        fail(f"{what} 应返回二元组 (output, weights)（两个 sp.Matrix），得到的是 {kind}。"
             "与数值版的 self_attention 一样，本作业所有 …self_attention 函数都返回 (output, weights)。")
    return (as_matrix(value[0], f"{what} 返回的 output", exact=True),
            as_matrix(value[1], f"{what} 返回的 weights", exact=True))


def _exact_compare(got: sp.Matrix, expected: sp.Matrix, what: str, variants) -> None:
    if got.shape != expected.shape:
        fail(f"{what} 的形状不对：期望 {expected.shape}，得到 {got.shape}。")
    if got.free_symbols:
        names = ", ".join(sorted(s.name for s in got.free_symbols))
        fail(f"{what}：输入全是有理数，结果却含有符号 {names}。")
    for index, (g, w) in enumerate(zip(got, expected)):
        diff = complex(sp.N(g - w, 40))
        if abs(diff) > 1e-25 * (1 + abs(complex(sp.N(w, 20)))):
            row, col = divmod(index, expected.cols)
            try:
                numeric = np.array(got.evalf(20).tolist(), dtype=np.float64)
            except (TypeError, ValueError):  # a complex or symbolic entry names no variant
                numeric = None
            found = mc.match(numeric, variants) if numeric is not None else None
            cause = f"\n可能的原因：{found}" if found else ""
            fail(f"{what} 的元素 ({row}, {col}) 不对：期望约 {complex(sp.N(w)).real:.6g}，"
                 f"得到约 {complex(sp.N(g)).real:.6g}。{cause}")


@check("q3.symbolic_self_attention", "symbolic_self_attention：SymPy 精确自注意力")
def symbolic_self_attention_values(ctx: Context, *, symbolic_self_attention) -> None:
    n, d_model = (int(v) for v in ctx.rng.integers(2, 4, size=2))
    d_k, d_v = int(ctx.rng.integers(1, 5)), int(ctx.rng.integers(1, 4))
    X = _rational_matrix(ctx, n, d_model)
    W_q, W_k, W_v = (_rational_matrix(ctx, d_model, c) for c in (d_k, d_k, d_v))
    what = f"symbolic_self_attention(X, W_q, W_k, W_v)（X {n}×{d_model}，d_k={d_k}，d_v={d_v}）"
    got_out, got_w = _sym_pair(ctx.call(symbolic_self_attention, X, W_q, W_k, W_v, what=what), what)
    exp_out, exp_w = ref.sym_self_attention(X, W_q, W_k, W_v)
    Q, K, V = (np.array(m.tolist(), dtype=np.float64) for m in (X * W_q, X * W_k, X * W_v))
    _exact_compare(got_w, exp_w, f"{what} 返回的 weights", mc.weights_variants(Q, K, d_model=d_model))
    _exact_compare(got_out, exp_out, f"{what} 返回的 output",
                   mc.attention_variants(Q, K, V, d_model=d_model))


@check("q3.symbolic_swap_residual", "symbolic_swap_residual：Attention(PX) − P·Attention(X) = 0")
def symbolic_swap_residual(ctx: Context, *, symbolic_swap_residual, symbolic_self_attention) -> None:
    what = "symbolic_swap_residual"
    R = as_matrix(symbolic_swap_residual, what, exact=True)
    if R.shape != (2, 2):
        fail(f"{what} 的形状不对：期望 (2, 2)，得到 {R.shape}。")
    allowed = set(X_NAMES) | set(W_NAMES)
    extra = sorted(s.name for s in R.free_symbols if s.name not in allowed)
    if extra:
        fail(f"{what} 含有未预期的符号 {', '.join(extra)}；请用题目给出的符号 x11…x22、"
             "q11…q22、k11…k22、v11…v22 构造。")
    for index, entry in enumerate(R):
        if not is_equivalent(entry, sp.Integer(0), seconds=1.0):
            row, col = divmod(index, 2)
            fail(f"{what} 的元素 ({row}, {col}) 化简后不为零。应计算 "
                 "symbolic_self_attention(P·X, …)[0] − P·symbolic_self_attention(X, …)[0]："
                 "P 乘在输出的左边（给输出换行），而不是与 f(X) 直接比较。")
    # It must come from a real symbolic attention: rebuild the statement for 3 symbolic
    # tokens. The weights are exact rationals (fully symbolic ones make each output entry
    # a 10 000-node expression for the same verdict).
    n, d = 3, 2
    Xs = sp.Matrix(n, d, lambda i, j: sp.Symbol(f"t{i + 1}{j + 1}"))
    Ws = [_rational_matrix(ctx, d, d) for _ in range(3)]
    perm = random_perm(ctx.rng, n, involution=False)
    P = sp.Matrix(n, n, lambda i, j: 1 if int(perm[i]) == j else 0)
    f_what = "symbolic_self_attention（输入为 3×2 的全符号矩阵）"
    plain = _sym_pair(ctx.call(symbolic_self_attention, Xs, *Ws, what=f_what), f_what)[0]
    swapped = _sym_pair(ctx.call(symbolic_self_attention, P * Xs, *Ws, what=f_what), f_what)[0]
    if plain.shape != (n, d) or swapped.shape != (n, d):
        fail(f"{f_what} 的输出形状应为 {(n, d)}，得到 {plain.shape}。")
    missing = sorted(s.name for s in Xs if s not in plain.free_symbols)
    if missing:
        fail(f"{f_what} 的输出不含输入的符号 {', '.join(missing)}：函数应对符号输入做精确计算，"
             "不能把输入换成数值。")
    # P·f(X) reorders the rows of f(X): taking them in that order costs no arithmetic on
    # the large entries, and an entry built exactly like its counterpart needs no proof
    moved = plain.extract([int(i) for i in perm], list(range(d)))
    for got, want in zip(swapped, moved):
        if got != want and not is_equivalent(got - want, sp.Integer(0), seconds=1.0):
            fail(f"{f_what}：打乱 3 个 token 的顺序后，输出不只是换了顺序"
                 "（Attention(PX) ≠ P·Attention(X)）。请检查 symbolic_self_attention 是否"
                 "对每一行独立地做 softmax。")


