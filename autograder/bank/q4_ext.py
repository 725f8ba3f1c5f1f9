"""q4's extensions (拓展): the SymPy proof of the core's result for all inputs, two tokens
(token 1's weight is a sigmoid of the score difference) and one decoding step against a
KV cache of t tokens, with the first causal position, the one that always degenerates.

Inputs are drawn where the behaviour is visible: scaled scores spread by
:data:`SCORE_SPREAD`, so a softmax without 1/√d_k or over the wrong axis cannot pass as
a saturated one-hot row. Messages say what is wrong with what came back.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import sympy as sp

from . import Context, FunctionRaised, check
from .lib import misconceptions as mc
from .lib import reference as ref
from .lib.compare import assert_close, fail
from .lib.symbolic import (
    as_expression,
    as_matrix,
    assert_equivalent,
    assert_matrix_equivalent,
    canonical,
    is_equivalent,
)
from .q4_hand import OUTPUT_IS_X
from .q4_match import ATOL, RTOL, diagnoser

#: Standard deviation of the scaled scores q·kᵀ/√d_k in the decoding checks: wide enough
#: that the weights are far from uniform, small enough that no row is one-hot.
SCORE_SPREAD = 1.5

DELTA_SIGN = mc.register(
    "two_token_delta_sign", "Δs 的方向弄反了",
    "你的结果在 Δs > 0（token 1 的打分更高）时反而小于 1/2：算成了 token 2 的权重。"
    "Δs = s1 − s2，token 1 的权重的分子是 e^{s1}。")
TWO_TOKEN_OVERFLOW = mc.register(
    "two_token_overflow", "两个 token 的权重数值溢出",
    "直接取 e^{Δs}：Δs = 1000 时 e^{Δs} 溢出成 inf，inf/inf 得到 NaN。像讲义的 softmax "
    "那样先减去最大值（对 [Δs, 0]），或按 Δs 的正负分别写成只对非正数取 exp 的形式。")
DECODE_DEGENERATE = mc.register(
    "decode_degenerate", "只用了新 token 自己的 Value",
    "你的输出恰是新 token 自己的 Value。新 token 的 Query 要和缓存里全部 t 个 Key 打分"
    "（讲义：每个词都和句子里每一个词，包括它自己，做匹配）：这一行有几个打分？")
CAUSAL_NO_MASK = mc.register(
    "causal_no_mask", "解码时看到了后面的 token",
    "生成位置 i 时，后面的 token 还没有生成：缓存里只有位置 1..i 的 K、V（包括它自己），"
    "不能用整句的 K、V。")
CACHE_WITHOUT_SELF = mc.register(
    "cache_without_self", "缓存里漏了当前 token 自己",
    "讲义说每个词去和句子里每一个词（包括它自己）匹配：位置 i 的缓存是位置 1..i，"
    "要先把 k_i、v_i 放进缓存，再用 q_i 打分。")

S = sp.Symbol("s")
DELTA = sp.Symbol("delta")
_X_NAMES = ("x1", "x2")
_W_NAMES = {w: tuple(f"{w}{i}{j}" for i in (1, 2) for j in (1, 2)) for w in ("q", "k", "v")}
SYMBOLS = {name: sp.Symbol(name) for name in
           (*_X_NAMES, *_W_NAMES["q"], *_W_NAMES["k"], *_W_NAMES["v"])}


# ------------------------------------------------------------------ 拓展 A: SymPy


@check("q4.softmax_symbolic", "一个符号打分 s 的 softmax 化简为 1（SymPy）")
def softmax_symbolic(ctx: Context, *, softmax_single_symbolic) -> None:
    value = softmax_single_symbolic
    if isinstance(value, sp.MatrixBase) and value.shape == (1, 1):
        value = value[0, 0]
    expr = as_expression(value, "softmax_single_symbolic")
    renamed = expr.xreplace({v: S for v in expr.free_symbols if v.name == "s"})
    if renamed == S:
        fail("softmax_single_symbolic 等于打分 s 本身，不对。\n可能的原因："
             f"{mc.CATALOG['raw_scores'].describe()}")
    if renamed == sp.exp(S):
        fail("softmax_single_symbolic 等于 exp(s)，不对。\n可能的原因："
             f"{mc.CATALOG['exp_without_normalising'].describe()}")
    assert_equivalent(expr, sp.Integer(1), "softmax_single_symbolic", symbols={"s": S})


def _residual_hint(mat: sp.Matrix) -> str | None:
    x = sp.Matrix([[SYMBOLS[n] for n in _X_NAMES]])
    W = {w: sp.Matrix(2, 2, [SYMBOLS[n] for n in _W_NAMES[w]]) for w in _W_NAMES}
    s = (x * W["q"] * (x * W["k"]).T)[0, 0] / sp.sqrt(2)
    wrong = [(OUTPUT_IS_X.describe(), x - x * W["v"]),
             (mc.CATALOG["q_as_v"].describe(), x * W["q"] - x * W["v"]),
             (mc.CATALOG["raw_scores"].describe(), s * x * W["v"] - x * W["v"])]
    for text, expected in wrong:
        if mat.shape == expected.shape and all(
                sp.expand(a - b) == 0 for a, b in zip(mat, expected)):
            return text
    return None


@check("q4.residual_symbolic", "符号验证：输出 − x·W_v 化简为零矩阵（SymPy）")
def residual_symbolic(ctx: Context, *, symbolic_single_token_residual) -> None:
    what = "symbolic_single_token_residual"
    mat = canonical(as_matrix(symbolic_single_token_residual, what), SYMBOLS)
    if mat.shape in ((1, 2), (2, 1)):
        mat = mat.reshape(1, 2)
        hint = _residual_hint(mat)
        if hint:
            fail(f"{what} 化简后不是零矩阵。\n可能的原因：{hint}")
    assert_matrix_equivalent(mat, sp.zeros(1, 2), what, symbols=SYMBOLS)


# ------------------------------------------------------------------ 拓展 B: two tokens


def _sigmoid(d: np.ndarray) -> np.ndarray:
    """σ(d) = 1/(1 + e^{−d}) without overflow for any float64 d."""
    d = np.asarray(d, dtype=np.float64)
    e = np.exp(-np.abs(d))
    return np.where(d >= 0, 1 / (1 + e), e / (1 + e))


def _two_token_diag(delta: np.ndarray) -> Callable[[np.ndarray], str | None]:
    with np.errstate(all="ignore"):
        naive = np.exp(delta) / (np.exp(delta) + 1)
        pairs = [("two_token_delta_sign", _sigmoid(-delta)), ("exp_without_normalising", np.exp(delta)),
                 ("raw_scores", delta)]

    def diagnose(arr: np.ndarray) -> str | None:
        if arr.shape == delta.shape and np.isnan(arr).any() and np.isnan(naive).any():
            return TWO_TOKEN_OVERFLOW.describe()
        return diagnoser(pairs)(arr)

    return diagnose


@check("q4.two_token_weight", "two_token_weight：两个 token 时 token 1 的权重是 σ(Δs)")
def two_token_weight(ctx: Context, *, two_token_weight) -> None:
    size = int(ctx.rng.integers(5, 12))
    cases = [
        ("随机的 Δs，形状 (k,)", ctx.rng.normal(0.0, 3.0, size=size)),
        ("随机的 Δs，形状 (2, 3)", ctx.rng.normal(0.0, 3.0, size=(2, 3))),
        ("Δs = ±1000 及附近", np.array([-1000.0, -700.0, -40.0, 40.0, 700.0, 1000.0])),
    ]
    for description, delta in cases:
        what = f"two_token_weight(delta_s)（{description}）"
        got = ctx.call(two_token_weight, delta, what=what)
        assert_close(got, _sigmoid(delta), what, rtol=1e-7, atol=1e-12, diagnose=_two_token_diag(delta))


_TWO_TOKEN_NAMES = {"delta": DELTA}


@check("q4.two_token_symbolic", "两个 token 的权重化简为只含 Δs 的 σ(Δs)（SymPy）")
def two_token_symbolic(ctx: Context, *, two_token_weight_symbolic) -> None:
    what = "two_token_weight_symbolic"
    value = two_token_weight_symbolic
    if isinstance(value, sp.MatrixBase) and value.shape == (1, 1):
        value = value[0, 0]
    expr = canonical(as_expression(value, what), _TWO_TOKEN_NAMES)
    extra = {v for v in expr.free_symbols if v.name != "delta"}
    if extra:
        simpler = sp.simplify(expr)
        if any(v.name != "delta" for v in simpler.free_symbols):
            names = ", ".join(sorted(v.name for v in simpler.free_symbols if v.name != "delta"))
            fail(f"{what} 化简后还含有 {names}：期望一个只含 delta（Δs = s1 − s2）的表达式。"
                 "提示：代入 s1 = s2 + delta（.subs），分子分母里的 e^{s2} 会约掉。")
        expr = simpler
    if expr.free_symbols and is_equivalent(expr, 1 / (1 + sp.exp(DELTA)), seconds=5):
        fail(f"{what} 等于 1/(1+e^delta)，不对：delta > 0 时它小于 1/2。"
             f"\n可能的原因：{DELTA_SIGN.describe()}")
    if is_equivalent(expr, sp.exp(DELTA), seconds=5):
        fail(f"{what} 等于 e^delta，不对。"
             f"\n可能的原因：{mc.CATALOG['exp_without_normalising'].describe()}")
    assert_equivalent(expr, 1 / (1 + sp.exp(-DELTA)), what, symbols=_TWO_TOKEN_NAMES)


# ------------------------------------------------------------------ 拓展 C: KV cache


def _decode_inputs(ctx: Context, t: int, dtype: type = np.float64):
    """q (1, d_k), K_cache (t, d_k), V_cache (t, d_v); q scaled so that the scaled scores
    q·Kᵀ/√d_k spread by :data:`SCORE_SPREAD` (for t = 1: the one score has that size)."""
    d_k, d_v = ctx.dims(2, 8, 2)
    q, K, V = ctx.randn(1, d_k), ctx.randn(t, d_k), ctx.randn(t, d_v)
    scores = q @ K.T / np.sqrt(d_k)
    spread = float(np.std(scores)) if t > 1 else float(np.abs(scores).max())
    q = q * (SCORE_SPREAD / max(spread, 1e-3))
    return q.astype(dtype), K.astype(dtype), V.astype(dtype)


@check("q4.decode_step", "decode_step：一个 Query 对 t 个缓存的 Key/Value（t > 1 时不退化）")
def decode_step(ctx: Context, *, decode_step) -> None:
    cases = [_decode_inputs(ctx, int(ctx.rng.integers(2, 9))) for _ in range(3)]
    cases += [_decode_inputs(ctx, int(ctx.rng.integers(2, 9)), np.float32), _decode_inputs(ctx, 1)]
    for q, K_cache, V_cache in cases:
        t, d_k = K_cache.shape
        what = (f"decode_step(q, K_cache, V_cache)（t={t}，d_k={d_k}，d_v={V_cache.shape[1]}，"
                f"{q.dtype.name}）")
        got = ctx.call(decode_step, q, K_cache, V_cache, what=what)
        expected = ref.attention(q, K_cache, V_cache).astype(np.float64)
        variants = mc.attention_variants(q, K_cache, V_cache)
        variants.pop("q_as_v", None)
        pairs = [("decode_degenerate", np.asarray(V_cache[-1:], dtype=np.float64)),
                 *variants.items()]
        assert_close(got, expected, what, rtol=RTOL, atol=ATOL,
                     diagnose=diagnoser(pairs) if t > 1 else None)


def _causal_output(X, W_q, W_k, W_v) -> np.ndarray:
    """Causal self-attention: position i attends to positions 1..i (itself included); float64."""
    X, W_q, W_k, W_v = (np.asarray(a, dtype=np.float64) for a in (X, W_q, W_k, W_v))
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    n = X.shape[0]
    allowed = np.tril(np.ones((n, n), dtype=bool))
    scores = np.where(allowed, Q @ K.T / np.sqrt(K.shape[-1]), -np.inf)
    return ref.softmax(scores) @ V


def _kv_inputs(ctx: Context, n: int, dtype: type = np.float64):
    """X (n, d_model), W_q and W_k (d_model, d_k), W_v (d_model, d_v), sizes pairwise
    different; W_q scaled so the causal score table's allowed entries spread by
    :data:`SCORE_SPREAD`."""
    d_model, d_k, d_v = ctx.dims(2, 7, 3)
    X, W_q, W_k, W_v = (ctx.randn(n, d_model), ctx.randn(d_model, d_k), ctx.randn(d_model, d_k),
                        ctx.randn(d_model, d_v))
    scores = (X @ W_q) @ (X @ W_k).T / np.sqrt(d_k)
    allowed = scores[np.tril_indices(n)]
    spread = float(np.std(allowed)) if n > 1 else float(np.abs(allowed).max())
    W_q = W_q * (SCORE_SPREAD / max(spread, 1e-3))
    return tuple(a.astype(dtype) for a in (X, W_q, W_k, W_v))


def _kv_diag(expected: np.ndarray, X, W_q, W_k, W_v) -> Callable[[np.ndarray], str | None]:
    """Name the wrong causal outputs: all of X in the cache, each position only itself,
    softmax over the cache axis, one row short, position 1 wrong."""
    n, d_v = expected.shape
    V = np.asarray(X, dtype=np.float64) @ np.asarray(W_v, dtype=np.float64)
    no_mask = diagnoser([
        ("causal_no_mask", ref.self_attention(X, W_q, W_k, W_v)[0].astype(np.float64)),
        ("decode_degenerate", V),
        ("softmax_query_axis", np.cumsum(V, axis=0)),
        ("no_scaling", _causal_output(X, W_q * np.sqrt(W_k.shape[-1]), W_k, W_v)),
    ])

    def diagnose(arr: np.ndarray) -> str | None:
        found = no_mask(arr) if n > 1 else None
        if found:
            return found
        if arr.shape == (n - 1, d_v):
            return f"少了一行。{CACHE_WITHOUT_SELF.describe()}"
        if arr.shape == expected.shape and not np.allclose(arr[0], expected[0], rtol=RTOL, atol=ATOL):
            return ("位置 1 的输出不对：它的缓存里只有位置 1 自己（t = 1）。"
                    "回到必做部分想一想，这时的输出是什么。")
        return None

    return diagnose


@check("q4.kv_cache_decode", "kv_cache_decode：按因果顺序逐步解码，位置 1 只能看它自己")
def kv_cache_decode(ctx: Context, *, kv_cache_decode) -> None:
    cases = [_kv_inputs(ctx, int(ctx.rng.integers(3, 7))) for _ in range(2)]
    cases += [_kv_inputs(ctx, int(ctx.rng.integers(3, 7)), np.float32), _kv_inputs(ctx, 1)]
    for X, W_q, W_k, W_v in cases:
        n, d_v = X.shape[0], W_v.shape[1]
        what = f"kv_cache_decode(X, W_q, W_k, W_v)（n={n}，d_k={W_q.shape[1]}，d_v={d_v}，{X.dtype.name}）"
        try:
            got = ctx.call(kv_cache_decode, X, W_q, W_k, W_v, what=what)
        except FunctionRaised as err:
            fail(f"{err}\n如果是在位置 1 出的错（缓存为空）：{CACHE_WITHOUT_SELF.describe()}")
        expected = _causal_output(X, W_q, W_k, W_v)
        diagnose = _kv_diag(expected, X, W_q, W_k, W_v)
        assert_close(got, expected, what, rtol=RTOL, atol=ATOL, diagnose=diagnose)
