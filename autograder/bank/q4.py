"""Checks for q4_single_token: n = 1, where attention degenerates to the linear map x·W_v.

The core: the lecture's hand steps with x₂ removed (:mod:`.q4_hand`), the student's code
for one token on random inputs, the code confirming the hand calculation, and the
general statement (any W_q, W_k: the same output; the output is x·M for a fixed M).
The extensions' checks are in :mod:`.q4_ext`.

Hidden inputs put the one scaled score at a magnitude between 1.5 and 4 (either sign),
so the wrong weights (the score itself, its exp, the unscaled score) are all far from
the right one; a separate case puts it at ±1e6, where a softmax without the max shift
overflows. Messages say what is wrong with what came back, not the right value (for
the weights the right value is the same on every input).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import Context, check
from . import q4_ext as _ext  # noqa: F401  (its checks register on import)
from .lib import misconceptions as mc
from .lib import reference as ref
from .lib.compare import as_array, assert_close, fail, fmt
from .lib.handsteps import TOL
from .q4_hand import OUTPUT_IS_X, V_SCALE, X1
from .q4_match import ATOL, RTOL, diagnoser

OUTPUT_DEPENDS_ON_QK = mc.register(
    "output_depends_on_qk", "以为 n = 1 时输出依赖 W_q、W_k",
    "你的输出随 W_q、W_k 变了。回到第 1 节的手算想一想：只剩一个词时，softmax 作用在几个数上？"
    "它的结果和那个打分的大小有关吗？")
MAP_TRANSPOSED = mc.register(
    "linear_map_transposed", "等价线性映射被转置",
    "你的 M 是转置过的：讲义用行向量约定，output = x·M，x 在左边、形状 (1, d_model)，"
    "所以 M 的形状是 (d_model, d_v)。")

#: The one scaled score of the value checks lies in ±[SCORE_LOW, SCORE_HIGH].
SCORE_LOW, SCORE_HIGH = 1.5, 4.0


# ------------------------------------------------------------------ inputs and diagnoses


def _score(x: np.ndarray, W_q: np.ndarray, W_k: np.ndarray) -> np.ndarray:
    """The one scaled score q·kᵀ/√d_k as a 1×1 array (float64)."""
    x, W_q, W_k = (np.asarray(a, dtype=np.float64) for a in (np.atleast_2d(x), W_q, W_k))
    return (x @ W_q) @ (x @ W_k).T / np.sqrt(W_k.shape[-1])


def _score_size(ctx: Context, sign: float | None = None) -> float:
    """A scaled score of random sign (or ``sign``) and magnitude in [SCORE_LOW, SCORE_HIGH]."""
    sign = sign if sign is not None else (1.0 if ctx.rng.random() < 0.5 else -1.0)
    return sign * float(ctx.rng.uniform(SCORE_LOW, SCORE_HIGH))


def _with_score(ctx: Context, x: np.ndarray, W_q: np.ndarray, W_k: np.ndarray,
                score: float) -> np.ndarray:
    """W_q rescaled so that the one scaled score is ``score`` (redrawn if it is ~0)."""
    s = float(_score(x, W_q, W_k)[0, 0])
    while abs(s) < 1e-3:  # practically never: redraw rather than divide by ~0
        W_q = ctx.randn(*W_q.shape)
        s = float(_score(x, W_q, W_k)[0, 0])
    return W_q * (score / s)


def _inputs(ctx: Context, *, square: bool = False, dtype: type = np.float64,
            score: float | None = None):
    """x (1, d_model), W_q and W_k (d_model, d_k), W_v (d_model, d_v) of random sizes,
    the one scaled score set to ``score`` (default: drawn by :func:`_score_size`).

    Without ``square`` the three sizes are pairwise different, so x, x·W_q and x·W_v
    have different shapes and the wrong outputs can be told apart.
    """
    if square:
        d_model = d_k = d_v = ctx.dims(2, 7, 1)[0]
    else:
        d_model, d_k, d_v = ctx.dims(2, 8, 3)
    x, W_q, W_k, W_v = (ctx.randn(1, d_model), ctx.randn(d_model, d_k), ctx.randn(d_model, d_k),
                        ctx.randn(d_model, d_v))
    W_q = _with_score(ctx, x, W_q, W_k, _score_size(ctx) if score is None else score)
    return tuple(a.astype(dtype) for a in (x, W_q, W_k, W_v))


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


def _assert_weight(got: object, what: str, diagnose: Callable[[np.ndarray], str | None]) -> None:
    """The weight of the one token, without printing the right value (it is the same on
    every input, so printing it would give the answer away)."""
    arr = as_array(got, what)

    def cause() -> str:
        found = diagnose(arr)
        return f"\n可能的原因：{found}" if found else ""

    if arr.shape != (1, 1):
        extra = ("（一行对应一个 Query，一列对应一个 Key），例如 np.array([[0.5]]) 这样的形状"
                 if arr.size == 1 else "（一行对应一个 Query，一列对应一个 Key）")
        fail(f"{what} 应返回 1×1 的二维数组{extra}，得到形状 {arr.shape}。{cause()}")
    if not np.isfinite(arr).all():
        fail(f"{what} 返回了 {fmt(arr)}，含有 NaN 或无穷大。{cause()}")
    if not np.allclose(arr, 1.0, rtol=1e-9, atol=1e-12):
        fail(f"{what} 返回了 {fmt(arr, 6)}，不对（容差 rtol=1e-9, atol=1e-12）。{cause()}")


def _shape_text(x: np.ndarray, W_q: np.ndarray, W_v: np.ndarray | None = None) -> str:
    d_v = "" if W_v is None else f"，d_v={W_v.shape[1]}"
    return f"（x {x.shape}，d_k={W_q.shape[1]}{d_v}，{x.dtype.name}）"


# ------------------------------------------------------------------ the code for one token


def _tokens(ctx: Context):
    """X of 2 or 3 tokens (the probe that the n = 1 result is computed, not written down:
    at n = 1 a function with no attention at all, no 1/√d_k or the wrong softmax axis
    gives the right value). d_k is never n nor 2, and the scaled scores are spread by about 1.5,
    so the softmax is neither uniform nor one-hot."""
    n = int(ctx.rng.integers(2, 4))
    d_model, d_k, d_v = ctx.dims(2, 8, 3)
    while d_k == n or d_k == 2:  # not the visible example's d_k = 2, not n: a hard-coded d_k shows
        d_model, d_k, d_v = ctx.dims(2, 8, 3)
    X, W_q, W_k, W_v = (ctx.randn(n, d_model), ctx.randn(d_model, d_k), ctx.randn(d_model, d_k),
                        ctx.randn(d_model, d_v))
    s = (X @ W_q) @ (X @ W_k).T / np.sqrt(d_k)
    return X, W_q * (1.5 / max(float(np.std(s)), 1e-3)), W_k, W_v


@check("q4.weights", "single_token_weights：一个 token 的注意力权重（随机大小，float32；n = 2、3 时是讲义的注意力）")
def weights_values(ctx: Context, *, single_token_weights) -> None:
    cases = [_inputs(ctx) for _ in range(3)] + [_inputs(ctx, dtype=np.float32)]
    for x, W_q, W_k, _ in cases:
        what = f"single_token_weights(x, W_q, W_k){_shape_text(x, W_q)}"
        got = ctx.call(single_token_weights, x, W_q, W_k, what=what)
        _assert_weight(got, what, diagnoser(_weights_pairs(x, W_q, W_k)))
    X, W_q, W_k, _ = _tokens(ctx)
    Q, K = X @ W_q, X @ W_k
    what = f"single_token_weights(X, W_q, W_k)（{X.shape[0]} 个 token，X {X.shape}，d_k={W_k.shape[1]}）"
    assert_close(ctx.call(single_token_weights, X, W_q, W_k, what=what), ref.attention_weights(Q, K),
                 what, rtol=1e-6, atol=1e-9, diagnose=mc.diagnoser(mc.weights_variants(Q, K)))


def _one_row(out: np.ndarray, what: str) -> None:
    """A single token's output is one row of finite numbers (its values are another
    cell's business)."""
    if out.ndim != 2 or out.shape[0] != 1 or out.size == 0 or not np.isfinite(out).all():
        fail(f"{what} 应返回一行有限数（形状 (1, d_v)），得到形状 {out.shape}"
             f"{'' if np.isfinite(out).all() else '、含 NaN 或无穷大'}的结果。")


@check("q4.weights_extreme", "打分量级 1e6 时权重与输出仍是有限数且正确")
def weights_extreme(ctx: Context, *, single_token_weights, single_token_attention) -> None:
    for magnitude in (1e6, -1e6):
        x, W_q, W_k, W_v = _inputs(ctx, score=magnitude)
        what = f"single_token_weights(x, W_q, W_k)（打分约为 {magnitude:+.0e}）"
        got = ctx.call(single_token_weights, x, W_q, W_k, what=what)
        _assert_weight(got, what, diagnoser(_weights_pairs(x, W_q, W_k)))
        what = f"single_token_attention(x, W_q, W_k, W_v)（打分约为 {magnitude:+.0e}）"
        out = as_array(ctx.call(single_token_attention, x, W_q, W_k, W_v, what=what), what)
        if not np.isfinite(out).all():
            fail(f"{what} 含有 NaN 或无穷大，而正确的输出全是有限数。\n可能的原因："
                 f"{mc.CATALOG['naive_softmax_overflow'].describe()}")
        _one_row(out, what)


@check("q4.attention_output", "single_token_attention：一个 token 的输出（随机大小，float32）")
def attention_output(ctx: Context, *, single_token_attention) -> None:
    cases = [_inputs(ctx), _inputs(ctx), _inputs(ctx, dtype=np.float32)]
    for x, W_q, W_k, W_v in cases:
        what = f"single_token_attention(x, W_q, W_k, W_v){_shape_text(x, W_q, W_v)}"
        got = ctx.call(single_token_attention, x, W_q, W_k, W_v, what=what)
        expected = ref.self_attention(x, W_q, W_k, W_v)[0].astype(np.float64)
        assert_close(got, expected, what, rtol=RTOL, atol=ATOL,
                     diagnose=diagnoser(_output_pairs(x, W_q, W_k, W_v)))
    X, W_q, W_k, W_v = _tokens(ctx)
    what = (f"single_token_attention(X, W_q, W_k, W_v)（{X.shape[0]} 个 token，X {X.shape}，"
            f"d_k={W_k.shape[1]}，d_v={W_v.shape[1]}）")
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    assert_close(ctx.call(single_token_attention, X, W_q, W_k, W_v, what=what),
                 ref.self_attention(X, W_q, W_k, W_v)[0], what, rtol=RTOL, atol=ATOL,
                 diagnose=mc.diagnoser(mc.attention_variants(Q, K, V, d_model=X.shape[1])))


@check("q4.input_shapes", "x 可以是 (1, d_model) 也可以是 (d_model,)：结果形状都为二维")
def input_shapes(ctx: Context, *, single_token_weights, single_token_attention) -> None:
    x, W_q, W_k, W_v = _inputs(ctx, square=True)
    d = x.shape[1]
    flat = x.reshape(-1)
    w1 = as_array(ctx.call(single_token_weights, flat, W_q, W_k,
                           what=f"single_token_weights(x, W_q, W_k)（x 为一维，形状 ({d},)）"),
                  "single_token_weights 的结果")
    if not np.isfinite(w1).all():
        fail(f"x 为一维数组（形状 ({d},)）时，single_token_weights 的结果含有 NaN 或无穷大。")
    if w1.shape != (1, 1):
        fail(f"x 为一维数组（形状 ({d},)）时，single_token_weights 应返回 1×1 数组，"
             f"得到形状 {w1.shape}。提示：先把 x 变成一行，例如 np.atleast_2d(x) 或 x.reshape(1, -1)。")
    results = {}
    for label, arg in (("一维", flat), ("二维", x)):
        what = f"single_token_attention(x, W_q, W_k, W_v)（x 为{label}，形状 {arg.shape}）"
        out = as_array(ctx.call(single_token_attention, arg, W_q, W_k, W_v, what=what), what)
        if not np.isfinite(out).all():  # NaN in both forms would look "the same"
            fail(f"{what} 含有 NaN 或无穷大，而输入都是不大的有限数。")
        if out.ndim != 2 or out.shape[0] != 1:
            fail(f"{what} 应返回形状 (1, d_v) = (1, {W_v.shape[1]}) 的二维数组，得到形状 {out.shape}。"
                 "一个 token 的输出也是一行：提示：先把 x 变成一行，例如 np.atleast_2d(x)。")
        results[label] = out
    if results["一维"].shape != results["二维"].shape or not np.allclose(
            results["一维"], results["二维"], rtol=1e-9, atol=1e-12, equal_nan=True):
        fail("同一个 token 写成一维 (d_model,) 和二维 (1, d_model) 时，single_token_attention 的结果不同"
             f"（{fmt(results['一维'])} 对 {fmt(results['二维'])}）。两种写法应得到同一个输出。")


# ------------------------------------------------------------------ the code confirms the hand


def _on_example(ctx: Context, single_token_weights, single_token_attention):
    """The student's two functions on the lecture's example with x₂ removed."""
    x1, eye = X1[None, :], np.eye(2)
    what_w = "single_token_weights(x1, I, I)"
    w = as_array(ctx.call(single_token_weights, x1, eye, eye, what=what_w), what_w)
    what_o = "single_token_attention(x1, I, I, 2I)"
    out = as_array(ctx.call(single_token_attention, x1, eye, eye, V_SCALE * eye, what=what_o), what_o)
    for got, exact, what, pairs in (
            (w, np.ones((1, 1)), what_w, _weights_pairs(x1, eye, eye)),
            (out, V_SCALE * x1, what_o, _output_pairs(x1, eye, eye, V_SCALE * eye))):
        if got.shape != exact.shape or not np.allclose(got, exact, rtol=0, atol=TOL):
            found = diagnoser(pairs)(got)
            fail(f"你的 {what} 在讲义例子（只剩 x1）上返回 {fmt(got)}，不对（容差 {TOL:g}）。"
                 + (f"\n可能的原因：{found}" if found else ""))
    return w, out


@check("q4.hand_example", "用代码核对一下手算：讲义例子只留 x1")
def hand_example(ctx: Context, *, single_token_weights, single_token_attention,
                 weights_1, output_1) -> None:
    w, out = _on_example(ctx, single_token_weights, single_token_attention)
    for hand, code, name in ((weights_1, w, "weights_1"), (output_1, out, "output_1")):
        arr = as_array(hand, f"手算的 {name}")
        if arr.size != code.size or not np.allclose(arr.ravel(), code.ravel(), rtol=0, atol=TOL):
            fail(f"你的代码在讲义例子上算出的结果与手算的 {name} = {fmt(arr)} 对不上（容差 {TOL:g}）："
                 "代码和手算至少有一边错了，回到第 1 节从第一步起逐步核对一下。")


# ------------------------------------------------------------------ the general statement


@check("q4.qk_invariance", "换掉 W_q、W_k，单个 token 的输出完全不变")
def qk_invariance(ctx: Context, *, single_token_attention) -> None:
    x, W_q, W_k, W_v = _inputs(ctx)
    d_model, d_k = W_q.shape
    s = float(_score(x, W_q, W_k)[0, 0])
    base_what = "single_token_attention(x, W_q, W_k, W_v)"
    base = as_array(ctx.call(single_token_attention, x, W_q, W_k, W_v, what=base_what), base_what)
    _one_row(base, base_what)  # an empty, scalar or infinite result never "changes"
    d_new = int(ctx.rng.choice([d for d in range(2, 9) if d != d_k]))
    W_k_new = ctx.randn(d_model, d_new)
    # the new score has the other sign, so a result that follows the score must move
    W_q_new = _with_score(ctx, x, ctx.randn(d_model, d_new), W_k_new, _score_size(ctx, -np.sign(s)))
    changes = [
        ("W_q、W_k 换成新的随机矩阵（d_k 也变了）", W_q_new, W_k_new),
        ("W_q 与 W_k 互换", W_k, W_q),
        ("W_q 换成 -2·W_q", -2 * W_q, W_k),
    ]
    for description, W_q2, W_k2 in changes:
        what = f"{description}后的 single_token_attention"
        got = as_array(ctx.call(single_token_attention, x, W_q2, W_k2, W_v, what=what), what)
        if got.shape != base.shape or not np.allclose(got, base, rtol=RTOL, atol=ATOL):
            found = (diagnoser(_output_pairs(x, W_q2, W_k2, W_v))(got)
                     or diagnoser(_output_pairs(x, W_q, W_k, W_v))(base)
                     or OUTPUT_DEPENDS_ON_QK.describe())
            fail(f"{description}后，输出变了：原来 {fmt(base)}，现在 {fmt(got)}。"
                 f"\n可能的原因：{found}")


def _map_diag(W_q: np.ndarray, W_k: np.ndarray, W_v: np.ndarray) -> Callable[[np.ndarray], str | None]:
    pairs = [("output_is_x", np.eye(W_v.shape[0])), ("q_as_v", W_q), ("k_as_v", W_k),
             ("linear_map_transposed", W_v.T)]
    return diagnoser(pairs)


@check("q4.linear_map", "equivalent_linear_map：与单个 token 的注意力等价的线性映射 M")
def linear_map(ctx: Context, *, equivalent_linear_map) -> None:
    cases = [_inputs(ctx) for _ in range(3)]
    for _, W_q, W_k, W_v in cases:
        what = (f"equivalent_linear_map(W_q, W_k, W_v)（d_model={W_q.shape[0]}，"
                f"d_k={W_q.shape[1]}，d_v={W_v.shape[1]}）")
        got = ctx.call(equivalent_linear_map, W_q, W_k, W_v, what=what)
        assert_close(got, W_v, what, rtol=RTOL, atol=ATOL, diagnose=_map_diag(W_q, W_k, W_v))


__all__ = ["OUTPUT_IS_X", "OUTPUT_DEPENDS_ON_QK", "MAP_TRANSPOSED"]
