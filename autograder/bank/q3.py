"""Checks for q3_permutation: without positions, self-attention is a 集合操作.

Attention(PX) = P·Attention(X): swapping tokens only relabels the outputs, so without
positional encoding 狗咬人 and 人咬狗 give every word the same output. Precisely, the
input is treated as a *multiset*: order is lost, multiplicity is not (人咬人 ≠ 人咬).
A causal mask and lecture 8's sinusoidal encoding break the symmetry.

Every function named ``…self_attention`` returns ``(output, weights)``, as in q1.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from .. import misconceptions as mc
from .. import reference as ref
from ..compare import as_array, as_bool, as_number, assert_close, fail, fmt
from ..symbolic import as_matrix, is_equivalent
from ..testfn import TestFunction
from . import Context, check

INVERSE_P = mc.register(
    "perm_matrix_inverse", "置换矩阵建成了逆置换",
    "P @ X 得到的是 X[argsort(perm)]（逆置换），而不是 X[perm]。"
    "P 的第 i 行应只在第 perm[i] 列为 1，即 P[i, perm[i]] = 1，这样 (P @ X)[i] = X[perm[i]]。"
    "交换两个元素的置换恰好等于自己的逆，所以只用 [1, 0] 试验发现不了这个错误。")
INVARIANCE = mc.register(
    "equivariance_vs_invariance", "把等变当成了不变",
    "比较的是 f(X[perm]) 与 f(X)（这是“置换不变”），而置换等变要求 f(X[perm]) 等于 "
    "f(X)[perm]：输入换了顺序，输出跟着换同样的顺序，内容不变。")
PE_SWAPPED = mc.register(
    "pe_sin_cos_swapped", "sin/cos 交错顺序颠倒",
    "偶数列 2i 应放 sin，奇数列 2i+1 应放 cos：PE[pos, 2i] = sin(pos / 10000^(2i/d))，"
    "PE[pos, 2i+1] = cos(pos / 10000^(2i/d))。位置 0 的编码应是 [0, 1, 0, 1, …]。")
PE_EXPONENT = mc.register(
    "pe_exponent_i_over_d", "指数 2i/d 写成了 i/d",
    "频率的指数应是 2i/d（i 是第几对 sin/cos，即列号 // 2），写成 i/d 后"
    "高维的频率下降得太慢。")
PE_MISSING = mc.register(
    "pe_not_added", "没有加上位置编码",
    "结果仍然是置换等变的，和不加位置编码的自注意力一样。应先计算 X + PE(n, d_model)，"
    "再做自注意力。")
MULTISET = mc.register(
    "multiset_as_set", "把多重集合当成了集合",
    "没有位置编码时，自注意力丢掉的是顺序，不是次数：“人咬人”里“人”出现两次，"
    "softmax 的分母里就有两项 e^s，“咬”分给“人”的总权重是两个“人”的权重之和。"
    "重复的词相当于把它的打分加上 ln 2，所以“人咬人”与“人咬”的输出不同。")
BY_POSITION = mc.register(
    "compare_by_position", "按位置而不是按词对齐比较",
    "两句话里同一个词在不同的行：“狗”在“狗咬人”里是第 0 行，在“人咬狗”里是第 2 行。"
    "比较“每个词的输出”时要先把行按词对齐（例如 out_mbd[[2, 1, 0]]），"
    "按行号直接比较的是不同的词。")

X_NAMES = ("x11", "x12", "x21", "x22")
W_NAMES = tuple(f"{m}{i}{j}" for m in "qkv" for i in (1, 2) for j in (1, 2))

#: The lecture's hand example with a repeated word: 人 = x1, 咬 = x2, sentence 人咬人.
RBR_X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])


# ------------------------------------------------------------------ helpers


def _random_perm(ctx: Context, n: int, *, involution_ok: bool = True) -> np.ndarray:
    """A random non-identity permutation of ``n``; with ``involution_ok=False`` not self-inverse."""
    while True:
        perm = ctx.rng.permutation(n)
        if (perm == np.arange(n)).all():
            continue
        if not involution_ok and (perm[perm] == np.arange(n)).all():
            continue
        return perm


def _weights(ctx: Context, d_model: int, d_k: int, d_v: int):
    return ctx.randn(d_model, d_k), ctx.randn(d_model, d_k), ctx.randn(d_model, d_v)


def _pe_variants(n: int, d: int) -> dict[str, np.ndarray]:
    """Wrong encodings keyed by misconception."""
    pos = np.arange(n, dtype=np.float64)[:, None]
    pair = np.arange(d) // 2
    even = np.arange(d) % 2 == 0
    right = pos / np.power(10000.0, 2.0 * pair / d)
    half = pos / np.power(10000.0, 1.0 * pair / d)
    return {
        PE_SWAPPED.key: np.where(even, np.cos(right), np.sin(right)),
        PE_EXPONENT.key: np.where(even, np.sin(half), np.cos(half)),
    }


def _pair(result: object, what: str) -> tuple[object, object]:
    """``(output, weights)`` from a ``…self_attention`` result, or a message."""
    if isinstance(result, (tuple, list)) and len(result) == 2:
        return result[0], result[1]
    kind = type(result).__name__
    if isinstance(result, (tuple, list)):
        kind += f"（长度 {len(result)}）"
    fail(f"{what} 应返回二元组 (output, weights)，得到的是 {kind}。"
         "本课程所有作业里的 self_attention 都返回 (output, weights)（与思考题 1 相同）。")
    raise AssertionError  # unreachable


def _check_pair(result: object, X: np.ndarray, W_q, W_k, W_v, what: str) -> None:
    """Compare a student's ``(output, weights)`` with the reference self-attention of ``X``."""
    output, weights = _pair(result, what)
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    exp_out, exp_w = ref.self_attention(X, W_q, W_k, W_v)
    assert_close(weights, exp_w, f"{what} 返回的 weights", rtol=1e-6, atol=1e-8,
                 diagnose=mc.diagnoser(mc.weights_variants(Q, K, d_model=X.shape[1])))
    assert_close(output, exp_out, f"{what} 返回的 output", rtol=1e-6, atol=1e-8,
                 diagnose=mc.diagnoser(mc.attention_variants(Q, K, V, d_model=X.shape[1])))


# ------------------------------------------------------------------ own attention


@check("q3.self_attention", "self_attention：返回 (output, weights) 的自注意力")
def self_attention_values(ctx: Context, *, self_attention) -> None:
    for _ in range(2):
        n, d_model, d_k, d_v = ctx.dims(2, 7, 4)
        X = ctx.randn(n, d_model)
        W_q, W_k, W_v = _weights(ctx, d_model, d_k, d_v)
        what = f"self_attention(X, W_q, W_k, W_v)（X {X.shape}，d_k={d_k}，d_v={d_v}）"
        _check_pair(ctx.call(self_attention, X, W_q, W_k, W_v, what=what), X, W_q, W_k, W_v, what)


# ------------------------------------------------------------------ hand example


@check("q3.hand_swap", "手算例子：交换 x1 与 x2 后的输出")
def hand_swap(ctx: Context, *, swapped_outputs, swap_matches) -> None:
    original = ref.hand_example()[0]
    expected = ref.self_attention(ref.HAND_X[[1, 0]], np.eye(2), np.eye(2), 2 * np.eye(2))[0]
    arr = as_array(swapped_outputs, "swapped_outputs")

    def diagnose(a: np.ndarray) -> str | None:
        if a.shape == original.shape and np.allclose(a, original, atol=ref.LECTURE_ATOL):
            return "这是交换之前的输出：是否忘了把输入换成 [x2, x1] 再计算？"
        if a.shape == (2, *original.shape):
            return "这是 self_attention 返回的整个二元组 (output, weights)：只取第一项 output。"
        return None

    assert_close(arr, expected, "swapped_outputs", rtol=0, atol=ref.LECTURE_ATOL, diagnose=diagnose)
    if not as_bool(swap_matches, "swap_matches"):
        fail("swap_matches 应为 True：交换后新位置 1 的输出正好是原来位置 2 的输出，"
             "新位置 2 的输出正好是原来位置 1 的输出（输出只是换了标签）。")


@check("q3.multiset", "人咬人：重复的词也算数（多重集合）")
def multiset(ctx: Context, *, rbr_outputs, bites_weight_on_man, repeat_matters) -> None:
    eye = np.eye(2)
    out, weights = ref.self_attention(RBR_X, eye, eye, 2 * eye)
    Q = K = RBR_X
    assert_close(rbr_outputs, out, "rbr_outputs（“人咬人”三个位置的输出）", rtol=0, atol=1e-6,
                 diagnose=mc.diagnoser(mc.attention_variants(Q, K, 2 * RBR_X)))
    expected = float(weights[1, 0] + weights[1, 2])
    as_set = float(ref.hand_example()[1][1, 0])  # 咬's weight on 人 in 人咬
    got = as_number(bites_weight_on_man, "bites_weight_on_man")
    if not np.isclose(got, expected, rtol=0, atol=1e-6):
        cause = ""
        if np.isclose(got, as_set, atol=1e-4):
            cause = (f"\n可能的原因：{MULTISET.describe()}（{fmt(got)} 是“人咬”里“咬”给“人”的权重，"
                     "即把“人咬人”当成了集合 {人, 咬}。）")
        elif np.isclose(got, float(weights[1, 0]), atol=1e-6):
            cause = (f"\n可能的原因：{MULTISET.describe()}（{fmt(got)} 只是其中一个“人”的权重，"
                     "两个“人”的权重要加起来。）")
        fail(f"bites_weight_on_man 应是“咬”（第 1 行）分给两个“人”的权重之和，期望约 "
             f"{expected:.4f}，得到 {fmt(got)}。{cause}")
    if not as_bool(repeat_matters, "repeat_matters"):
        fail("repeat_matters 应为 True：“咬”在“人咬人”里的输出与在“人咬”里不同。"
             f"\n可能的原因：{MULTISET.describe()}")


# ------------------------------------------------------------------ permutation matrix


@check("q3.permutation_matrix", "permutation_matrix：P @ X 等于 X[perm]")
def permutation_matrix_values(ctx: Context, *, permutation_matrix) -> None:
    sizes = ctx.dims(3, 8, 3)
    for k, n in enumerate(sizes):
        perm = _random_perm(ctx, n, involution_ok=k > 0)
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


# ------------------------------------------------------------------ the checker, checked
# The functions handed to the student's checker travel as source text plus data
# (autograder.testfn.TestFunction): student code runs where no grader object exists.

_ATTENTION_SRC = '''
def f(Z):
    Z = np.asarray(Z, dtype=np.float64)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ K.T / np.sqrt(K.shape[-1])
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    return (weights / weights.sum(axis=-1, keepdims=True)) @ V
'''

_ATTENTION_PE_SRC = '''
def f(Z):
    Z = np.asarray(Z, dtype=np.float64)
    n, d = Z.shape
    angles = np.arange(n)[:, None] / np.power(10000.0, 2.0 * (np.arange(d) // 2) / d)
    Z = Z + np.where(np.arange(d) % 2 == 0, np.sin(angles), np.cos(angles))
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ K.T / np.sqrt(K.shape[-1])
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    return (weights / weights.sum(axis=-1, keepdims=True)) @ V
'''

_CAUSAL_SRC = '''
def f(Z):
    Z = np.asarray(Z, dtype=np.float64)
    Q, K, V = Z @ W_q, Z @ W_k, Z @ W_v
    scores = Q @ K.T / np.sqrt(K.shape[-1])
    scores = np.where(np.tril(np.ones(scores.shape, dtype=bool)), scores, -np.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    return (weights / weights.sum(axis=-1, keepdims=True)) @ V
'''


def attention_fn(W_q, W_k, W_v) -> TestFunction:
    """Self-attention output without positions, as a function of the input rows."""
    return TestFunction(_ATTENTION_SRC, "自注意力（无位置编码）", data=dict(W_q=W_q, W_k=W_k, W_v=W_v))


def attention_pe_fn(W_q, W_k, W_v) -> TestFunction:
    """Self-attention output of ``Z + PE``."""
    return TestFunction(_ATTENTION_PE_SRC, "加了位置编码的自注意力",
                        data=dict(W_q=W_q, W_k=W_k, W_v=W_v))


def causal_fn(W_q, W_k, W_v) -> TestFunction:
    """Causal-masked self-attention output: position i sees positions 0..i only."""
    return TestFunction(_CAUSAL_SRC, "因果掩码（只看前面位置）的自注意力",
                        data=dict(W_q=W_q, W_k=W_k, W_v=W_v))


TANH = TestFunction("def f(Z):\n    return np.tanh(Z)\n", "逐元素映射 np.tanh")
CUMSUM = TestFunction("def f(Z):\n    return np.cumsum(Z, axis=0)\n",
                      "沿序列方向的累加 np.cumsum(X, axis=0)")
SORT = TestFunction("def f(Z):\n    return np.sort(Z, axis=0)\n",
                    "沿序列方向排序 np.sort(X, axis=0)（置换不变，但不等变）")


def noisy_tanh_fn(n: int) -> TestFunction:
    """tanh plus a position-dependent bump of 1e-3 per position: equivariant only up to atol."""
    return TestFunction("def f(Z):\n    return np.tanh(Z) + bump\n",
                        "tanh 加上随位置变化的 1e-3 扰动",
                        data={"bump": 1e-3 * np.arange(n, dtype=np.float64)[:, None]})


@check("q3.is_permutation_equivariant", "is_permutation_equivariant：判断 f 是否置换等变")
def equivariance_checker(ctx: Context, *, is_permutation_equivariant) -> None:
    n, d_model, d_k, d_v = ctx.dims(4, 7, 4)
    W_q, W_k, W_v = _weights(ctx, d_model, d_k, d_v)
    X = ctx.randn(n, d_model)
    cases = [
        (attention_fn(W_q, W_k, W_v), None, True),
        (TANH, None, True),
        (CUMSUM, "identity", True),
        (CUMSUM, None, False),
        (SORT, None, False),
        (attention_pe_fn(W_q, W_k, W_v), None, False),
        (causal_fn(W_q, W_k, W_v), None, False),
    ]
    for f, kind, expected in cases:
        perm = np.arange(n) if kind == "identity" else _random_perm(ctx, n, involution_ok=False)
        label = f.label if kind is None else f"恒等置换下的 {f.label}"
        what = f"is_permutation_equivariant(f, X, perm)，f 为{label}"
        got = as_bool(ctx.call(is_permutation_equivariant, f, X, perm, what=what), what)
        if got != expected:
            invariant = bool(np.allclose(f(X[perm]), f(X), atol=1e-8))
            cause = f"\n可能的原因：{INVARIANCE.describe()}" if got == invariant else ""
            fail(f"{what}：期望 {fmt(expected)}，得到 {fmt(got)}。{cause}")
    # atol is honoured: a position-dependent error of 1e-3 is visible, unless atol is large.
    noisy = noisy_tanh_fn(n)
    perm = _random_perm(ctx, n)
    what = f"is_permutation_equivariant(f, X, perm)，f = {noisy.label}"
    if as_bool(ctx.call(is_permutation_equivariant, noisy, X, perm, what=what), what):
        fail(f"{what}：默认 atol=1e-8 时应返回 False（差约 1e-3，远大于容差）。")
    what_big = what + "，atol=0.1"
    if not as_bool(ctx.call(is_permutation_equivariant, noisy, X, perm, what=what_big, atol=0.1),
                   what_big):
        fail(f"{what_big}：应返回 True（差约 1e-3，小于给定的 atol）。请使用参数 atol 作为容差。")


# ------------------------------------------------------------------ positional encoding


@check("q3.positional_encoding", "sinusoidal_positional_encoding：第 8 讲的正弦位置编码")
def positional_encoding(ctx: Context, *, sinusoidal_positional_encoding) -> None:
    d_even = 2 * int(ctx.rng.integers(2, 7))
    d_odd = 2 * int(ctx.rng.integers(2, 6)) + 1
    for d in (d_even, d_odd):
        n = int(ctx.rng.integers(3, 11))
        what = f"sinusoidal_positional_encoding({n}, {d})"
        got = ctx.call(sinusoidal_positional_encoding, n, d, what=what)
        assert_close(got, ref.sinusoidal_positional_encoding(n, d), what, rtol=1e-7, atol=1e-9,
                     diagnose=mc.diagnoser(_pe_variants(n, d)))


@check("q3.attention_with_positions", "self_attention_with_positions：加位置编码后的自注意力")
def attention_with_positions(ctx: Context, *, self_attention_with_positions) -> None:
    n, d_model, d_k, d_v = ctx.dims(3, 8, 4)
    d_model = max(d_model, 4)
    W_q, W_k, W_v = _weights(ctx, d_model, d_k, d_v)
    X = ctx.randn(n, d_model)
    perm = _random_perm(ctx, n)
    what = f"self_attention_with_positions(X, W_q, W_k, W_v)（X {X.shape}）"
    out, weights = _pair(ctx.call(self_attention_with_positions, X, W_q, W_k, W_v, what=what),
                         what)
    out = as_array(out, f"{what} 返回的 output")
    out_perm = as_array(_pair(ctx.call(self_attention_with_positions, X[perm], W_q, W_k, W_v,
                                       what=what), what)[0], f"{what} 返回的 output")
    if out.shape == out_perm.shape and np.allclose(out_perm, out[perm], rtol=1e-6, atol=1e-8):
        fail(f"{what}：打乱输入顺序后，输出只是跟着换了顺序（仍然置换等变）。"
             f"\n可能的原因：{PE_MISSING.describe()}")
    variants = {key: ref.self_attention(X + pe, W_q, W_k, W_v)[0]
                for key, pe in _pe_variants(n, d_model).items()}
    variants[PE_MISSING.key] = ref.self_attention(X, W_q, W_k, W_v)[0]
    Z = X + ref.sinusoidal_positional_encoding(n, d_model)
    exp_out, exp_w = ref.self_attention(Z, W_q, W_k, W_v)
    assert_close(out, exp_out, f"{what} 返回的 output", rtol=1e-6, atol=1e-8,
                 diagnose=mc.diagnoser(variants))
    assert_close(weights, exp_w, f"{what} 返回的 weights", rtol=1e-6, atol=1e-8,
                 diagnose=mc.diagnoser(mc.weights_variants(Z @ W_q, Z @ W_k, d_model=d_model)))


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
            numeric = np.array(got.evalf(20).tolist(), dtype=np.float64)
            found = mc.match(numeric, variants)
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
    perm = _random_perm(ctx, n, involution_ok=False)
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


# ------------------------------------------------------------------ 狗咬人 / 人咬狗


@check("q3.dog_bites_man", "狗咬人 / 人咬狗：有无位置编码时每个词的输出是否相同")
def dog_bites_man(ctx: Context, *, same_without_positions, same_with_positions) -> None:
    if not as_bool(same_without_positions, "same_without_positions"):
        fail("same_without_positions 应为 True：没有位置编码时，“狗”在两句话里看到的是同一组"
             "词，输出完全相同，模型分不清谁咬谁。"
             f"\n可能的原因：{BY_POSITION.describe()}")
    if as_bool(same_with_positions, "same_with_positions"):
        fail("same_with_positions 应为 False：加上位置编码后，同一个词在不同位置的输入不同，"
             "输出也就不同。")
