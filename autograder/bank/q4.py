"""Checks for q4_single_token: n = 1, where attention degenerates to the linear map x·W_v,
and the contrasts where it does not (two tokens: a sigmoid of the score difference; one
decoding step against a KV cache of t > 1 tokens), with the first causal position, which
always does."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import sympy as sp

from .. import misconceptions as mc
from .. import reference as ref
from ..compare import CheckFailed, as_array, assert_close, fail, fmt
from ..symbolic import (
    as_expression,
    as_matrix,
    assert_equivalent,
    assert_matrix_equivalent,
    canonical,
    is_equivalent,
)
from . import Context, check

#: Tolerances: the output is a plain matrix product, but float32 arithmetic is allowed.
RTOL, ATOL = 1e-5, 1e-5

OUTPUT_IS_X = mc.register(
    "output_is_x", "忘了乘 W_v（输出 = x）",
    "单个 token 时权重恰为 1，输出 = 1·V = x·W_v。V 是输入经过 W_v 变换后的“内容”，"
    "不是输入 x 本身：V = x·W_v 这一步不能省。")
OUTPUT_DEPENDS_ON_QK = mc.register(
    "output_depends_on_qk", "以为 n = 1 时输出依赖 W_q、W_k",
    "n = 1 时只有一个打分，softmax 作用在一个数上恒为 1，所以无论 W_q、W_k 取什么，"
    "输出都是 x·W_v。W_q、W_k 只改变那一个打分的大小，改变不了权重。")
MAP_TRANSPOSED = mc.register(
    "linear_map_transposed", "等价线性映射被转置",
    "讲义用行向量约定：output = x·M，x 形状 (1, d_model)，所以 M 的形状是 (d_model, d_v)，"
    "就是 W_v 本身，而不是 W_vᵀ。")

DELTA_SIGN = mc.register(
    "two_token_delta_sign", "Δs 的方向弄反了",
    "token 1 的权重是 e^{s1}/(e^{s1}+e^{s2}) = 1/(1+e^{−(s1−s2)}) = σ(Δs)，Δs = s1 − s2。"
    "token 1 的打分更高（Δs > 0）时，它的权重应大于 0.5；得到的是 σ(−Δs)，那是 token 2 的权重。")
TWO_TOKEN_OVERFLOW = mc.register(
    "two_token_overflow", "两个 token 的权重数值溢出",
    "直接算 e^{Δs}/(e^{Δs}+1)：Δs = 1000 时 e^{Δs} 溢出成 inf，inf/inf 得到 NaN。"
    "改写成 1/(1+e^{−Δs})（Δs ≥ 0 时）和 e^{Δs}/(1+e^{Δs})（Δs < 0 时），"
    "或像讲义的 softmax 那样，对 [Δs, 0] 先减去最大值再取 exp。")
DECODE_DEGENERATE = mc.register(
    "decode_degenerate", "以为一步解码也退化成只看自己",
    "生成时每一步只有一个新 token，但它的 Query 要和缓存里全部 t 个 Key 打分：打分表是 1×t，"
    "softmax 在 t 个数上做，权重随 q 变化。只有 t = 1（缓存里只有它自己）时才退化成 v。")
CAUSAL_NO_MASK = mc.register(
    "causal_no_mask", "解码时看到了后面的 token",
    "生成位置 i 时，后面的 token 还没有生成：缓存里只有位置 1..i 的 K、V（包括它自己），"
    "不能用整句的 K、V。因此位置 1 只能看它自己，输出恒为 x₁·W_v。")
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


# ------------------------------------------------------------------ inputs and diagnoses


def _inputs(ctx: Context, *, square: bool = False, dtype: type = np.float64):
    """x (1, d_model), W_q and W_k (d_model, d_k), W_v (d_model, d_v) of random sizes.

    Without ``square`` the three sizes are pairwise different, so x, x·W_q and x·W_v
    have different shapes and the wrong outputs can be told apart.
    """
    if square:
        d_model = d_k = d_v = ctx.dims(2, 7, 1)[0]
    else:
        d_model, d_k, d_v = ctx.dims(2, 8, 3)
    x = ctx.randn(1, d_model, dtype=dtype)
    return (x, ctx.randn(d_model, d_k, dtype=dtype), ctx.randn(d_model, d_k, dtype=dtype),
            ctx.randn(d_model, d_v, dtype=dtype))


def _score(x: np.ndarray, W_q: np.ndarray, W_k: np.ndarray) -> np.ndarray:
    """The one scaled score q·kᵀ/√d_k as a 1×1 array (float64)."""
    x, W_q, W_k = (np.asarray(a, dtype=np.float64) for a in (np.atleast_2d(x), W_q, W_k))
    return (x @ W_q) @ (x @ W_k).T / np.sqrt(W_k.shape[-1])

LECTURE_ATOL = ref.LECTURE_ATOL  # the hand example's tolerance, quoted in the prose


def _diagnoser(pairs: Sequence[tuple[str, np.ndarray]]) -> Callable[[np.ndarray], str | None]:
    """Like :func:`mc.diagnoser`, but several wrong results may share one misconception."""

    def diagnose(arr: np.ndarray) -> str | None:
        for key, wrong in pairs:
            found = mc.match(arr, {key: np.asarray(wrong, dtype=np.float64)})
            if found:
                return found
        return None

    return diagnose


def _weights_pairs(x, W_q, W_k) -> list[tuple[str, np.ndarray]]:
    s = _score(x, W_q, W_k)
    unscaled = s * np.sqrt(np.shape(W_k)[-1])
    with np.errstate(all="ignore"):
        exp_s = np.exp(s)
    return [("naive_softmax_overflow", mc.naive_softmax(s)), ("raw_scores", s), ("raw_scores", unscaled),
            ("exp_without_normalising", exp_s)]


def _output_pairs(x, W_q, W_k, W_v) -> list[tuple[str, np.ndarray]]:
    x, W_q, W_k, W_v = (np.asarray(a, dtype=np.float64) for a in (np.atleast_2d(x), W_q, W_k, W_v))
    s = _score(x, W_q, W_k)
    V = x @ W_v
    return [("output_is_x", x), ("q_as_v", x @ W_q), ("raw_scores", s @ V),
            ("raw_scores", s * np.sqrt(W_k.shape[-1]) @ V), ("k_as_v", x @ W_k),
            ("weights_instead_of_output", np.ones((1, 1))), ("transposed_output", V.T)]


def _weights_shape_hint(arr: np.ndarray) -> str | None:
    if arr.shape != (1, 1) and arr.size == 1:
        return "权重应是 1×1 的二维数组（一行对应一个 Query，一列对应一个 Key），例如 np.array([[1.0]])。"
    return None


def _first(*diagnoses: Callable[[np.ndarray], str | None]) -> Callable[[np.ndarray], str | None]:
    def diagnose(arr: np.ndarray) -> str | None:
        for d in diagnoses:
            found = d(arr)
            if found:
                return found
        return None

    return diagnose


def _shape_text(x: np.ndarray, W_q: np.ndarray, W_v: np.ndarray | None = None) -> str:
    d_v = "" if W_v is None else f"，d_v={W_v.shape[1]}"
    return f"（x {x.shape}，d_k={W_q.shape[1]}{d_v}，{x.dtype.name}）"


# ------------------------------------------------------------------ checks


#: The lecture prints the hand example to 3 decimals; compare with its precision.


def _hand_shape_hint(name: str, shape: str) -> Callable[[np.ndarray], str | None]:
    def hint(arr: np.ndarray) -> str | None:
        if arr.ndim != 2:
            return (f"{name} 应是形状 {shape} 的二维数组（打分表、权重和输出都按行排列，"
                    "一个 token 也是一行），例如用 Q @ K.T 这样的矩阵乘法得到。")
        return None

    return hint


@check("q4.hand_example", "讲义例子只留 x1：打分表、权重与输出")
def hand_example(ctx: Context, *, hand_scores, hand_weight, hand_output) -> None:
    x1, eye = np.array([[1.0, 0.0]]), np.eye(2)
    s = _score(x1, eye, eye)
    copied = ("这是讲义两个 token 时的数。只剩 x1 时没有 x2 来“分走”权重，"
              "要按三步重新算。")

    def score_hint(arr: np.ndarray) -> str | None:
        return _first(_hand_shape_hint("hand_scores", "(n, n) = (1, 1)"),
                      _diagnoser([("no_scaling", s * np.sqrt(2)), ("divide_by_dk", s / np.sqrt(2))]))(arr)

    assert_close(hand_scores, s, "hand_scores", rtol=0, atol=ref.LECTURE_ATOL, diagnose=score_hint)

    def weight_hint(arr: np.ndarray) -> str | None:
        if arr.shape == (1, 1) and abs(arr[0, 0] - 0.670) < ref.LECTURE_ATOL:
            return copied
        return _first(_hand_shape_hint("hand_weight", "(n, n) = (1, 1)"),
                      _diagnoser([("raw_scores", s), ("exp_without_normalising", np.exp(s))]))(arr)

    assert_close(hand_weight, np.ones((1, 1)), "hand_weight", rtol=0, atol=ref.LECTURE_ATOL,
                 diagnose=weight_hint)

    def output_hint(arr: np.ndarray) -> str | None:
        if arr.shape == (1, 2) and np.allclose(arr, x1, atol=ref.LECTURE_ATOL):
            return (f"得到的正是 x1 = [1, 0]。{OUTPUT_IS_X.describe()}"
                    "（本例 W_q = I，所以用 x·W_q 当输出也会得到 x1："
                    f"{mc.CATALOG['q_as_v'].describe()}）")
        if arr.shape == (1, 2) and np.allclose(arr, [[1.340, 0.660]], atol=ref.LECTURE_ATOL):
            return copied
        return _first(_hand_shape_hint("hand_output", "(n, d_v) = (1, 2)"),
                      _diagnoser([("raw_scores", s @ (2 * x1)),
                                  ("raw_scores", np.sqrt(2) * s @ (2 * x1))]))(arr)

    assert_close(hand_output, 2 * x1, "hand_output", rtol=0, atol=ref.LECTURE_ATOL, diagnose=output_hint)


@check("q4.weights", "single_token_weights：一个打分做 softmax，恒为 [[1.0]]")
def weights_values(ctx: Context, *, single_token_weights) -> None:
    cases = [_inputs(ctx) for _ in range(3)] + [_inputs(ctx, dtype=np.float32)]
    for x, W_q, W_k, _ in cases:
        what = f"single_token_weights(x, W_q, W_k){_shape_text(x, W_q)}"
        got = ctx.call(single_token_weights, x, W_q, W_k, what=what)
        assert_close(got, np.ones((1, 1)), what, rtol=1e-9, atol=1e-12,
                     diagnose=_first(_weights_shape_hint, _diagnoser(_weights_pairs(x, W_q, W_k))))


def _scaled_to(ctx: Context, magnitude: float):
    """Inputs whose one scaled score is exactly ``magnitude`` (e.g. ±1e6)."""
    x, W_q, W_k, W_v = _inputs(ctx)
    s = float(_score(x, W_q, W_k)[0, 0])
    while abs(s) < 1e-3:  # practically never: redraw rather than divide by ~0
        x, W_q, W_k, W_v = _inputs(ctx)
        s = float(_score(x, W_q, W_k)[0, 0])
    return x, W_q * (magnitude / s), W_k, W_v


@check("q4.weights_extreme", "打分量级 1e6 时权重仍为 [[1.0]]、输出是有限数")
def weights_extreme(ctx: Context, *, single_token_weights, single_token_attention) -> None:
    for magnitude in (1e6, -1e6):
        x, W_q, W_k, W_v = _scaled_to(ctx, magnitude)
        what = f"single_token_weights(x, W_q, W_k)（打分约为 {magnitude:+.0e}）"
        got = ctx.call(single_token_weights, x, W_q, W_k, what=what)
        assert_close(got, np.ones((1, 1)), what, rtol=1e-9, atol=1e-12,
                     diagnose=_first(_weights_shape_hint, _diagnoser(_weights_pairs(x, W_q, W_k))))
        what = f"single_token_attention(x, W_q, W_k, W_v)（打分约为 {magnitude:+.0e}）"
        out = as_array(ctx.call(single_token_attention, x, W_q, W_k, W_v, what=what), what)
        if not np.isfinite(out).all():
            fail(f"{what} 含有 NaN 或无穷大，而正确输出 x·W_v 全是有限数。\n可能的原因："
                 f"{mc.CATALOG['naive_softmax_overflow'].describe()}")


@check("q4.attention_output", "single_token_attention：输出等于 x·W_v（随机大小，float32）")
def attention_output(ctx: Context, *, single_token_attention) -> None:
    cases = [_inputs(ctx), _inputs(ctx), _inputs(ctx, dtype=np.float32)]
    for x, W_q, W_k, W_v in cases:
        what = f"single_token_attention(x, W_q, W_k, W_v){_shape_text(x, W_q, W_v)}"
        got = ctx.call(single_token_attention, x, W_q, W_k, W_v, what=what)
        expected = ref.self_attention(x, W_q, W_k, W_v)[0].astype(np.float64)
        assert_close(got, expected, what, rtol=RTOL, atol=ATOL,
                     diagnose=_diagnoser(_output_pairs(x, W_q, W_k, W_v)))


@check("q4.input_shapes", "x 可以是 (1, d_model) 也可以是 (d_model,)：结果形状都为二维")
def input_shapes(ctx: Context, *, single_token_weights, single_token_attention) -> None:
    x, W_q, W_k, W_v = _inputs(ctx, square=True)
    d = x.shape[1]
    flat = x.reshape(-1)
    w1 = as_array(ctx.call(single_token_weights, flat, W_q, W_k,
                           what=f"single_token_weights(x, W_q, W_k)（x 为一维，形状 ({d},)）"),
                  "single_token_weights 的结果")
    if w1.shape != (1, 1):
        fail(f"x 为一维数组（形状 ({d},)）时，single_token_weights 应返回 1×1 数组，"
             f"得到形状 {w1.shape}。提示：先把 x 变成一行，例如 np.atleast_2d(x) 或 x.reshape(1, -1)。")
    results = {}
    for label, arg in (("一维", flat), ("二维", x)):
        what = f"single_token_attention(x, W_q, W_k, W_v)（x 为{label}，形状 {arg.shape}）"
        out = as_array(ctx.call(single_token_attention, arg, W_q, W_k, W_v, what=what), what)
        if out.ndim != 2 or out.shape[0] != 1:
            fail(f"{what} 应返回形状 (1, d_v) = (1, {W_v.shape[1]}) 的二维数组，得到形状 {out.shape}。"
                 "一个 token 的输出也是一行：提示：先把 x 变成一行，例如 np.atleast_2d(x)。")
        results[label] = out
    if results["一维"].shape != results["二维"].shape or not np.allclose(
            results["一维"], results["二维"], rtol=1e-9, atol=1e-12, equal_nan=True):
        fail("同一个 token 写成一维 (d_model,) 和二维 (1, d_model) 时，single_token_attention 的结果不同"
             f"（{fmt(results['一维'])} 对 {fmt(results['二维'])}）。两种写法应得到同一个输出。")


@check("q4.qk_invariance", "换掉 W_q、W_k，单个 token 的输出完全不变")
def qk_invariance(ctx: Context, *, single_token_attention) -> None:
    x, W_q, W_k, W_v = _inputs(ctx)
    d_model, d_k = W_q.shape
    base_what = "single_token_attention(x, W_q, W_k, W_v)"
    base = as_array(ctx.call(single_token_attention, x, W_q, W_k, W_v, what=base_what), base_what)
    d_new = int(ctx.rng.choice([d for d in range(2, 9) if d != d_k]))
    changes = [
        ("W_q、W_k 换成新的随机矩阵（d_k 也变了）", ctx.randn(d_model, d_new), ctx.randn(d_model, d_new)),
        ("W_q 与 W_k 互换", W_k, W_q),
        ("W_q 换成 -2·W_q", -2 * W_q, W_k),
    ]
    for description, W_q2, W_k2 in changes:
        what = f"{description}后的 single_token_attention"
        got = as_array(ctx.call(single_token_attention, x, W_q2, W_k2, W_v, what=what), what)
        if got.shape != base.shape or not np.allclose(got, base, rtol=RTOL, atol=ATOL):
            found = (_diagnoser(_output_pairs(x, W_q2, W_k2, W_v))(got)
                     or _diagnoser(_output_pairs(x, W_q, W_k, W_v))(base)
                     or OUTPUT_DEPENDS_ON_QK.describe())
            fail(f"{description}后，输出变了（期望完全不变：n = 1 时输出只取决于 x 和 W_v）。"
                 f"\n原来 {fmt(base)}，现在 {fmt(got)}。\n可能的原因：{found}")


def _map_diag(W_q: np.ndarray, W_k: np.ndarray, W_v: np.ndarray) -> Callable[[np.ndarray], str | None]:
    pairs = [("output_is_x", np.eye(W_v.shape[0])), ("q_as_v", W_q), ("k_as_v", W_k),
             ("linear_map_transposed", W_v.T)]
    return _diagnoser(pairs)


@check("q4.linear_map", "equivalent_linear_map：等价的线性映射 M = W_v")
def linear_map(ctx: Context, *, equivalent_linear_map) -> None:
    cases = [_inputs(ctx) for _ in range(3)]
    for _, W_q, W_k, W_v in cases:
        what = (f"equivalent_linear_map(W_q, W_k, W_v)（d_model={W_q.shape[0]}，"
                f"d_k={W_q.shape[1]}，d_v={W_v.shape[1]}）")
        got = ctx.call(equivalent_linear_map, W_q, W_k, W_v, what=what)
        assert_close(got, W_v, what, rtol=RTOL, atol=ATOL, diagnose=_map_diag(W_q, W_k, W_v))


@check("q4.softmax_symbolic", "一个符号打分 s 的 softmax 化简为 1（SymPy）")
def softmax_symbolic(ctx: Context, *, softmax_single_symbolic) -> None:
    value = softmax_single_symbolic
    if isinstance(value, sp.MatrixBase) and value.shape == (1, 1):
        value = value[0, 0]
    expr = as_expression(value, "softmax_single_symbolic")
    renamed = expr.xreplace({v: S for v in expr.free_symbols if v.name == "s"})
    if renamed == S:
        fail(f"softmax_single_symbolic 等于打分 s 本身，不对：期望化简为 1。\n可能的原因："
             f"{mc.CATALOG['raw_scores'].describe()}")
    if renamed == sp.exp(S):
        fail("softmax_single_symbolic 等于 exp(s)，不对：期望化简为 1。\n可能的原因："
             f"{mc.CATALOG['exp_without_normalising'].describe()}")
    assert_equivalent(expr, sp.Integer(1), "softmax_single_symbolic", symbols={"s": S})


def _residual_hint(mat: sp.Matrix) -> str | None:
    x = sp.Matrix([[SYMBOLS[n] for n in _X_NAMES]])
    W = {w: sp.Matrix(2, 2, [SYMBOLS[n] for n in _W_NAMES[w]]) for w in _W_NAMES}
    s = (x * W["q"] * (x * W["k"]).T)[0, 0] / sp.sqrt(2)
    wrong = [("output_is_x", x - x * W["v"]), ("q_as_v", x * W["q"] - x * W["v"]),
             ("raw_scores", s * x * W["v"] - x * W["v"])]
    for key, expected in wrong:
        if mat.shape == expected.shape and all(
                sp.expand(a - b) == 0 for a, b in zip(mat, expected)):
            return mc.CATALOG[key].describe()
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


# ------------------------------------------------------------------ contrasts: n ≥ 2 does not degenerate


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
        return _diagnoser(pairs)(arr)

    return diagnose


@check("q4.two_token_weight", "two_token_weight：两个 token 时 token 1 的权重是 σ(Δs)")
def two_token_weight(ctx: Context, *, two_token_weight) -> None:
    cases = [
        ("随机的 Δs，形状 (k,)", ctx.rng.normal(0.0, 3.0, size=int(ctx.rng.integers(5, 12)))),
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
    expected = 1 / (1 + sp.exp(-DELTA))
    if expr.free_symbols and is_equivalent(expr, 1 / (1 + sp.exp(DELTA)), seconds=5):
        fail(f"{what} 等于 1/(1+e^delta)，不对：期望 σ(Δs) = 1/(1+e^(−delta))。"
             f"\n可能的原因：{DELTA_SIGN.describe()}")
    if is_equivalent(expr, sp.exp(DELTA), seconds=5):
        fail(f"{what} 等于 e^delta，不对：期望 1/(1+e^(−delta))。"
             f"\n可能的原因：{mc.CATALOG['exp_without_normalising'].describe()}")
    assert_equivalent(expr, expected, what, symbols=_TWO_TOKEN_NAMES)


def _decode_inputs(ctx: Context, t: int, dtype: type = np.float64):
    d_k, d_v = ctx.dims(2, 8, 2)
    return (2 * ctx.randn(1, d_k, dtype=dtype), ctx.randn(t, d_k, dtype=dtype),
            ctx.randn(t, d_v, dtype=dtype))


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
                     diagnose=_diagnoser(pairs) if t > 1 else None)


def _causal_output(X, W_q, W_k, W_v) -> np.ndarray:
    """Causal self-attention: position i attends to positions 1..i (itself included); float64."""
    X, W_q, W_k, W_v = (np.asarray(a, dtype=np.float64) for a in (X, W_q, W_k, W_v))
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    n = X.shape[0]
    allowed = np.tril(np.ones((n, n), dtype=bool))
    scores = np.where(allowed, Q @ K.T / np.sqrt(K.shape[-1]), -np.inf)
    return ref.softmax(scores) @ V


def _kv_inputs(ctx: Context, n: int, dtype: type = np.float64):
    d_model, d_k, d_v = ctx.dims(2, 7, 3)
    return (ctx.randn(n, d_model, dtype=dtype), 2 * ctx.randn(d_model, d_k, dtype=dtype),
            ctx.randn(d_model, d_k, dtype=dtype), ctx.randn(d_model, d_v, dtype=dtype))


def _kv_diag(expected: np.ndarray, X, W_q, W_k, W_v) -> Callable[[np.ndarray], str | None]:
    """Name the wrong causal outputs: all of X in the cache, each position only itself,
    softmax over the cache axis, one row short, position 1 wrong."""
    n, d_v = expected.shape
    V = np.asarray(X, dtype=np.float64) @ np.asarray(W_v, dtype=np.float64)
    no_mask = _diagnoser([
        ("causal_no_mask", ref.self_attention(X, W_q, W_k, W_v)[0].astype(np.float64)),
        ("decode_degenerate", V),
        ("softmax_query_axis", np.cumsum(V, axis=0)),
    ])

    def diagnose(arr: np.ndarray) -> str | None:
        found = no_mask(arr) if n > 1 else None
        if found:
            return found
        if arr.shape == (n - 1, d_v):
            return f"少了一行。{CACHE_WITHOUT_SELF.describe()}"
        if arr.shape == expected.shape and not np.allclose(arr[0], expected[0], rtol=RTOL, atol=ATOL):
            return ("位置 1 的输出不对：它的缓存里只有它自己（t = 1），权重恒为 1，"
                    "输出应恰为 x₁·W_v，与 W_q、W_k 无关。")
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
        except CheckFailed as err:
            if "运行出错" not in str(err):
                raise
            fail(f"{err}\n如果是在位置 1 出的错（缓存为空）：{CACHE_WITHOUT_SELF.describe()}")
        expected = _causal_output(X, W_q, W_k, W_v)
        diagnose = _kv_diag(expected, X, W_q, W_k, W_v)
        assert_close(got, expected, what, rtol=RTOL, atol=ATOL, diagnose=diagnose)
