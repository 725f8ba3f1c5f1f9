"""q3's extensions that break the symmetry: lecture 8's positional encoding (狗咬人 /
人咬狗), the causal mask, and the fully-masked row.

A check that builds on an earlier function of the student's (their ``self_attention``,
their encoding) accepts the reference or their own function's result, so a mistake
there costs the cell that grades it and no other.
"""

from __future__ import annotations

import numpy as np

from . import Context, check
from . import q3_hand as hand
from .lib import misconceptions as mc
from .lib import reference as ref
from .lib.compare import CheckFailed, as_array, as_bool, assert_close, fail
from .q3 import EYE, attention_inputs, own_pair, pair
from .q3_probes import random_perm

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
BY_POSITION = mc.register(
    "compare_by_position", "按位置而不是按词对齐比较",
    "两句话里同一个词在不同的行：“狗”在“狗咬人”里是第 0 行，在“人咬狗”里是第 2 行。"
    "比较“每个词的输出”时要先把行按词对齐（例如 out_mbd[[2, 1, 0]]），"
    "按行号直接比较的是不同的词。")
CAUSAL_WRONG_SIDE = mc.register(
    "q3_causal_wrong_side", "遮住了过去而不是未来",
    "因果掩码遮住的是 j > i（后面的词），位置 i 可以看见 0..i。遮成 j < i 后，每个位置看的是"
    "自己和后面的词，第一个词反而能看见整句话。")
MASK_AFTER_SOFTMAX = mc.register(
    "q3_mask_after_softmax", "在 softmax 之后才遮",
    "先做 softmax、再把未来位置的权重置 0，剩下的权重加起来就小于 1 了。掩码要在 softmax 之前"
    "作用在打分上（换成 −∞），softmax 会在看得见的位置之间重新归一化。")
FULL_ROW_NAN = mc.register(
    "q3_fully_masked_nan", "整行被遮住时得到 NaN",
    "一行里所有位置都被遮住时，打分全是 −∞：减去最大值得到 −∞ − (−∞) = NaN，e 的指数之和是 0，"
    "0/0 = NaN。题目约定这样的行权重全为 0、输出为 0 向量：要单独处理没有任何可见位置的行。")
FULL_ROW_FILL = mc.register(
    "q3_fully_masked_fill", "用一个很大的负数代替了 −∞",
    "把被遮住的打分换成 −1e9 这样的有限数时，整行都被遮住的位置打分全相同，softmax 给每个位置"
    "相同的权重：这一行反而平均地“看见”了所有被遮住的词。题目约定这样的行权重全为 0、输出为 0。")


# ------------------------------------------------------------------ positional encoding


def _pe_variants(n: int, d: int) -> dict[str, np.ndarray]:
    """Wrong encodings keyed by misconception."""
    pos = np.arange(n, dtype=np.float64)[:, None]
    pair_index = np.arange(d) // 2
    even = np.arange(d) % 2 == 0
    right = pos / np.power(10000.0, 2.0 * pair_index / d)
    half = pos / np.power(10000.0, 1.0 * pair_index / d)
    return {
        PE_SWAPPED.key: np.where(even, np.cos(right), np.sin(right)),
        PE_EXPONENT.key: np.where(even, np.sin(half), np.cos(half)),
    }


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


def _own_encoding(ctx: Context, func: object, n: int, d: int) -> np.ndarray | None:
    try:
        pe = as_array(ctx.call(func, n, d, what="sinusoidal_positional_encoding"), "")
    except CheckFailed:
        return None
    return pe if pe.shape == (n, d) and np.isfinite(pe).all() else None


@check("q3.attention_with_positions", "self_attention_with_positions：加位置编码后的自注意力",
       context=("self_attention", "sinusoidal_positional_encoding"))
def attention_with_positions(ctx: Context, *, self_attention_with_positions, self_attention,
                             sinusoidal_positional_encoding) -> None:
    X, W_q, W_k, W_v = attention_inputs(ctx, low=3)
    n, d_model = X.shape
    perm = random_perm(ctx.rng, n)
    what = f"self_attention_with_positions(X, W_q, W_k, W_v)（X {X.shape}）"
    out, weights = pair(ctx.call(self_attention_with_positions, X, W_q, W_k, W_v, what=what), what)
    out = as_array(out, f"{what} 返回的 output")
    out_perm = as_array(pair(ctx.call(self_attention_with_positions, X[perm], W_q, W_k, W_v,
                                      what=what), what)[0], f"{what} 返回的 output")
    if out.ndim != 2 or out.shape[0] != n:
        fail(f"{what} 返回的 output 应是每个位置一行（{n} 行）的矩阵，得到的形状是 {out.shape}。")
    if out.shape == out_perm.shape and np.allclose(out_perm, out[perm], rtol=1e-6, atol=1e-8):
        fail(f"{what}：打乱输入顺序后，输出只是跟着换了顺序（仍然置换等变）。"
             f"\n可能的原因：{PE_MISSING.describe()}")
    encodings = [ref.sinusoidal_positional_encoding(n, d_model)]
    mine = _own_encoding(ctx, sinusoidal_positional_encoding, n, d_model)
    encodings += [mine] if mine is not None else []
    accepted = [ref.self_attention(X + pe, W_q, W_k, W_v) for pe in encodings]
    accepted += [r for pe in encodings
                 if (r := own_pair(ctx, self_attention, X + pe, W_q, W_k, W_v, what=what))]
    weights = as_array(weights, f"{what} 返回的 weights")
    for exp_out, exp_w in accepted:
        if (exp_out.shape == out.shape and exp_w.shape == weights.shape
                and np.allclose(out, exp_out, rtol=1e-6, atol=1e-8)
                and np.allclose(weights, exp_w, rtol=1e-6, atol=1e-8)):
            return
    variants = {key: ref.self_attention(X + pe, W_q, W_k, W_v)[0]
                for key, pe in _pe_variants(n, d_model).items()}
    variants[PE_MISSING.key] = ref.self_attention(X, W_q, W_k, W_v)[0]
    assert_close(out, accepted[0][0], f"{what} 返回的 output", rtol=1e-6, atol=1e-8,
                 diagnose=mc.diagnoser(variants))
    Z = X + encodings[0]
    assert_close(weights, accepted[0][1], f"{what} 返回的 weights", rtol=1e-6, atol=1e-8,
                 diagnose=mc.diagnoser(mc.weights_variants(Z @ W_q, Z @ W_k, d_model=d_model)))


@check("q3.dog_bites_man", "狗咬人 / 人咬狗：有无位置编码时每个词的输出是否相同")
def dog_bites_man(ctx: Context, *, same_without_positions, same_with_positions) -> None:
    if not as_bool(same_without_positions, "same_without_positions"):
        fail("same_without_positions 是 False。请按词（而不是按行号）对齐两句话的输出再比较。"
             f"\n可能的原因：{BY_POSITION.describe()}")
    if as_bool(same_with_positions, "same_with_positions"):
        fail("same_with_positions 是 True。加了位置编码之后，请再按词对齐比较一次两句话的输出"
             f"（pe_out_dbm 与 pe_out_mbd）。\n可能的原因：{PE_MISSING.describe()}")


# ------------------------------------------------------------------ masks


def masked_reference(X, W_q, W_k, W_v, allowed: np.ndarray, *, fill: float | None = None,
                     after: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Attention where position i sees key j only if ``allowed[i, j]``; a row that sees
    nothing gets zero weights and a zero output. ``fill`` replaces −∞ by a finite number
    and ``after`` masks after the softmax: the two wrong ways, for diagnosis."""
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    scores = Q @ K.T / np.sqrt(K.shape[-1])
    if after:
        weights = ref.softmax(scores) * allowed
        return weights @ V, weights
    masked = np.where(allowed, scores, -np.inf if fill is None else fill)
    seen = allowed.any(axis=1, keepdims=True) | (fill is not None)
    shifted = masked - np.where(seen, masked, 0.0).max(axis=1, keepdims=True)
    e = np.where(seen, np.exp(np.where(seen, shifted, 0.0)), 0.0)
    weights = np.divide(e, e.sum(axis=1, keepdims=True), out=np.zeros_like(e),
                        where=e.sum(axis=1, keepdims=True) > 0)
    return weights @ V, weights


def _mask_variants(X, W_q, W_k, W_v, allowed, wrong_side: np.ndarray | None):
    """Wrong outputs and weights keyed by misconception."""
    outs: dict[str, np.ndarray] = {}
    weights: dict[str, np.ndarray] = {}
    cases = [(MASK_AFTER_SOFTMAX.key, {"after": True}), (FULL_ROW_FILL.key, {"fill": -1e9})]
    for key, kwargs in cases:
        outs[key], weights[key] = masked_reference(X, W_q, W_k, W_v, allowed, **kwargs)
    if wrong_side is not None:
        outs[CAUSAL_WRONG_SIDE.key], weights[CAUSAL_WRONG_SIDE.key] = \
            masked_reference(X, W_q, W_k, W_v, wrong_side)
    return outs, weights


def _check_masked(result: object, X, W_q, W_k, W_v, allowed, what: str,
                  wrong_side: np.ndarray | None = None) -> None:
    output, weights = pair(result, what)
    exp_out, exp_w = masked_reference(X, W_q, W_k, W_v, allowed)
    outs, ws = _mask_variants(X, W_q, W_k, W_v, allowed, wrong_side)
    for value, expected, variants, name in ((weights, exp_w, ws, "weights"),
                                            (output, exp_out, outs, "output")):
        arr = as_array(value, f"{what} 返回的 {name}")
        blind = ~allowed.any(axis=1)
        if arr.shape == expected.shape and blind.any() and np.isnan(arr[blind]).any() \
                and np.isfinite(arr[~blind]).all():
            fail(f"{what} 返回的 {name} 在整行都被遮住的位置是 NaN。\n可能的原因：{FULL_ROW_NAN.describe()}")
        assert_close(arr, expected, f"{what} 返回的 {name}", rtol=1e-6, atol=1e-8,
                     diagnose=mc.diagnoser(variants))


@check("q3.causal_attention", "causal_self_attention：因果掩码")
def causal_attention(ctx: Context, *, causal_self_attention) -> None:
    X, W_q, W_k, W_v = attention_inputs(ctx, low=3)
    n = X.shape[0]
    what = f"causal_self_attention(X, W_q, W_k, W_v)（X {X.shape}）"
    _check_masked(ctx.call(causal_self_attention, X, W_q, W_k, W_v, what=what), X, W_q, W_k, W_v,
                  np.tril(np.ones((n, n), dtype=bool)), what,
                  wrong_side=np.triu(np.ones((n, n), dtype=bool)))


@check("q3.causal_swap", "因果掩码下交换 x1 与 x2", context=("causal_self_attention",))
def causal_swap(ctx: Context, *, causal_outputs, causal_swapped, causal_swap_matches,
                causal_self_attention) -> None:
    args = (EYE, EYE, 2 * EYE)
    tril = np.tril(np.ones((2, 2), dtype=bool))
    for value, X, name in ((causal_outputs, hand.X_OLD, "causal_outputs"),
                           (causal_swapped, hand.X_NEW, "causal_swapped")):
        arr = as_array(value, name)
        mine = own_pair(ctx, causal_self_attention, X, *args, what=f"causal_self_attention（{name}）")
        accepted = [masked_reference(X, *args, tril)[0]] + ([mine[0]] if mine else [])
        if not any(a.shape == arr.shape and np.allclose(arr, a, rtol=0, atol=hand.ATOL)
                   for a in accepted):
            inputs = "[x₁, x₂]" if name == "causal_outputs" else "[x₂, x₁]"
            fail(f"{name} 不是 causal_self_attention 作用在 {inputs} 上得到的输出。")
    if as_bool(causal_swap_matches, "causal_swap_matches"):
        fail("causal_swap_matches 是 True。请再比较一次 causal_swapped 的第 0 行与 causal_outputs 的第 1 行"
             "（容差 2e-3）：交换之后，新的位置 1 还能看见同样的词吗？")


def _allowed(ctx: Context, n: int) -> np.ndarray:
    """A random mask (n ≥ 4) where 1 to n-3 rows see nothing and two other rows see some
    keys but not all."""
    allowed = ctx.rng.random((n, n)) < 0.55
    rows = ctx.rng.permutation(n)
    allowed[rows[: int(ctx.rng.integers(1, n - 2))]] = False
    for i in rows[-2:]:
        seen, hidden = ctx.rng.choice(n, size=2, replace=False)
        allowed[i, seen], allowed[i, hidden] = True, False
    return allowed


@check("q3.masked_attention", "masked_self_attention：整行都被遮住的位置")
def masked_attention(ctx: Context, *, masked_self_attention) -> None:
    X, W_q, W_k, W_v = attention_inputs(ctx, low=4)
    allowed = _allowed(ctx, X.shape[0])
    what = f"masked_self_attention(X, W_q, W_k, W_v, allowed)（X {X.shape}）"
    _check_masked(ctx.call(masked_self_attention, X, W_q, W_k, W_v, allowed, what=what),
                  X, W_q, W_k, W_v, allowed, what)


from . import q3_symbolic  # noqa: E402,F401  (registers the permutation matrix and SymPy checks)
