"""Checks for q1_value_scaling: W_v = 3I, and what Q/K versus V decide.

The core's hand step is in :mod:`.q1_hand`, its 苹果 context task in :mod:`.q1_apple`;
this module has the code checks (softmax, attention, the general case, the code that
confirms the hand calculation) and the extensions' checks (W_q = c·I, SymPy).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from . import Context, check, q1_apple, q1_context, q1_hand  # noqa: F401  (their checks register on import)
from .lib import misconceptions as mc
from .lib import reference as ref
from .lib.compare import (
    CheckFailed,
    as_array,
    as_bool,
    as_number,
    assert_close,
    assert_number_close,
    fail,
    fmt,
)
from .lib.symbolic import (
    as_expression,
    assert_equivalent,
    assert_matrix_equivalent,
    canonical,
    is_equivalent,
)

C = sp.Symbol("c")
W11_EXACT = sp.exp(1 / sp.sqrt(2)) / (1 + sp.exp(1 / sp.sqrt(2)))
#: Position 1's weight on itself when W_q = c·I (W_k = I): c is an inverse temperature.
W11_OF_C = 1 / (1 + sp.exp(-C / sp.sqrt(2)))

RATIO_IS_COEFFICIENT = mc.register(
    "q1_ratio_is_coefficient", "把 W_v 的新系数当成了倍数",
    "问的是新输出相对原来（W_v = 2I 时）输出的倍数，不是 W_v 的新系数 3：原来的 V 也不是 X·I。"
    "把新、旧两个 V 比一比。")
C_ON_WV = mc.register(
    "q1_c_on_wv", "把 c 乘在了 W_v 上",
    "题目要把 W_q 换成 c·I（W_k = I，W_v = 2I 不变）。W_v 不参与打分，c 乘在 W_v 上，"
    "位置 1 的权重就不随 c 变化，始终是讲义的 0.670。")
WEIGHTS_LINEAR_IN_C = mc.register(
    "q1_weights_linear_in_c", "以为权重随 c 线性变化",
    "把 W_q 换成 c·I，打分变成原来的 c 倍，但 softmax 不是线性函数，权重不会跟着变成 c 倍"
    "（c = 2 时 c·w11 已经大于 1，不可能是权重）。应把 c 乘在打分上，再做 softmax。")


def _softmax_diag(z: np.ndarray, axis: int):
    return mc.diagnoser(mc.softmax_variants(z, axis))


@check("q1.softmax", "softmax 的正确性（随机形状与 axis）")
def softmax_values(ctx: Context, *, softmax) -> None:
    for ndim in (1, 2, 3):
        shape = tuple(ctx.dims(2, 6, ndim))
        z = ctx.randn(*shape) * 3
        axes = [-1] if ndim == 1 else [-1, int(ctx.rng.integers(0, ndim - 1))]
        for axis in axes:
            got = ctx.call(softmax, z, what=f"softmax(z, axis={axis})（z 形状 {shape}）", axis=axis)
            assert_close(got, ref.softmax(z, axis), f"softmax(z, axis={axis})（z 形状 {shape}）",
                         rtol=1e-6, atol=1e-9, diagnose=_softmax_diag(z, axis))
    z = ctx.randn(3, 5)
    plain = as_array(ctx.call(softmax, z, what="softmax(z)"), "softmax(z)")
    shifted = ctx.call(softmax, z + 100.0, what="softmax(z + 100)")
    assert_close(shifted, plain, "softmax(z + 100)（平移不变性：每个元素加同一个数，结果不变）",
                 rtol=1e-6, atol=1e-9)
    z32 = ctx.randn(4, 3, dtype=np.float32)
    got32 = ctx.call(softmax, z32, what="softmax（float32 输入）")
    assert_close(got32, ref.softmax(z32), "softmax（float32 输入）", rtol=1e-4, atol=1e-6)


@check("q1.softmax_stable", "softmax 的数值稳定性（分数量级 1e4）")
def softmax_stable(ctx: Context, *, softmax) -> None:
    z = ctx.randn(3, 6) * 1e4
    z[0, 0] = 1e4
    # a row far below the whole table's maximum: subtracting that maximum (not the row's
    # own) underflows the whole row to 0/0 on every seed
    z[1] -= z[1].max() + 1e3
    got = ctx.call(softmax, z, what="softmax(z)（|z| 约 1e4）")
    assert_close(got, ref.softmax(z), "softmax(z)（|z| 约 1e4）", rtol=1e-6, atol=1e-9,
                 diagnose=_softmax_diag(z, -1))


def _qkv(ctx: Context, dtype: type = np.float64):
    # d_k is never 2 (the visible example's, so a hard-coded d_k = 2 is seen) and never
    # n_k (the lecture's n = d_k = 2, so dividing by √n_k is seen)
    n_q, = ctx.dims(2, 6, 1)
    d_k, d_v = ctx.dims(3, 7, 2)
    n_k = int(ctx.rng.choice([n for n in range(2, 7) if n != d_k]))
    return ctx.randn(n_q, d_k, dtype=dtype), ctx.randn(n_k, d_k, dtype=dtype), \
        ctx.randn(n_k, d_v, dtype=dtype)


@check("q1.attention_weights", "attention_weights：softmax(QKᵀ/√d_k)，对 Key 归一化")
def attention_weights_values(ctx: Context, *, attention_weights) -> None:
    for dtype, rtol in ((np.float64, 1e-6), (np.float32, 1e-4)):
        Q, K, _ = _qkv(ctx, dtype)
        what = f"attention_weights(Q, K)（Q {Q.shape}，K {K.shape}，{np.dtype(dtype).name}）"
        got = ctx.call(attention_weights, Q, K, what=what)
        assert_close(got, ref.attention_weights(Q, K), what, rtol=rtol, atol=1e-7,
                     diagnose=mc.diagnoser(mc.weights_variants(Q, K)))


@check("q1.attention", "attention：输出 = 权重·V（n_q≠n_k，d_k≠d_v，n=1，float32）")
def attention_values(ctx: Context, *, attention) -> None:
    cases = [_qkv(ctx), _qkv(ctx, np.float32)]
    Q, K, V = _qkv(ctx)
    cases.append((Q[:1], K[:1], V[:1]))  # one query, one key
    for Q, K, V in cases:
        what = f"attention(Q, K, V)（Q {Q.shape}，K {K.shape}，V {V.shape}）"
        got = ctx.call(attention, Q, K, V, what=what)
        rtol = 1e-4 if Q.dtype == np.float32 else 1e-6
        assert_close(got, ref.attention(Q, K, V), what, rtol=rtol, atol=1e-6,
                     diagnose=mc.diagnoser(mc.attention_variants(Q, K, V)))


#: Standard deviation of the scaled scores Q·Kᵀ/√d_k of the self-attention checks: wide
#: enough that weights are far from uniform, small enough that the softmax never becomes
#: one-hot (standard-normal X and W give scores near ±50, and then a scale by √d_model or
#: a softmax over the wrong axis changes the weights by less than 1e-16).
SCORE_SPREAD = 1.5


def _self_attention_inputs(ctx: Context, square: bool = False):
    """X, W_q, W_k, W_v with d_model, d_k, d_v all different (d_v = d_k when ``square``)
    and scaled scores spread by :data:`SCORE_SPREAD`; V is of the same size as Q and K,
    so weights computed from V are not saturated either."""
    d_k, n, d_model, d_v = ctx.dims(3, 9, 4)  # d_k ≠ 2 (the visible example's), ≠ n, ≠ d_model
    d_v = d_k if square else d_v
    X = ctx.randn(n, d_model)
    W_q, W_k, W_v = (ctx.randn(d_model, d) / np.sqrt(d_model) for d in (d_k, d_k, d_v))
    spread = float(np.std((X @ W_q) @ (X @ W_k).T / np.sqrt(d_k)))
    return X, W_q * (SCORE_SPREAD / max(spread, 1e-3)), W_k, W_v


def _unpack_pair(result: object, what: str) -> tuple[object, object]:
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        fail(f"{what} 应返回二元组 (output, weights)，得到的是 {type(result).__name__}"
             + (f"（长度 {len(result)}）" if isinstance(result, (tuple, list)) else "") + "。")
    return result[0], result[1]


@check("q1.self_attention", "self_attention：Q=XW_q，K=XW_k，V=XW_v，返回 (output, weights)")
def self_attention_values(ctx: Context, *, self_attention) -> None:
    X, W_q, W_k, W_v = _self_attention_inputs(ctx)
    what = f"self_attention(X, W_q, W_k, W_v)（X {X.shape}，d_k={W_k.shape[1]}，d_v={W_v.shape[1]}）"
    output, weights = _unpack_pair(ctx.call(self_attention, X, W_q, W_k, W_v, what=what), what)
    exp_out, exp_w = ref.self_attention(X, W_q, W_k, W_v)
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    assert_close(weights, exp_w, f"{what} 返回的 weights", rtol=1e-6, atol=1e-8,
                 diagnose=mc.diagnoser(mc.weights_variants(Q, K, d_model=X.shape[1])))
    assert_close(output, exp_out, f"{what} 返回的 output", rtol=1e-6, atol=1e-8,
                 diagnose=mc.diagnoser(mc.attention_variants(Q, K, V, d_model=X.shape[1])))


@check("q1.value_scaling", "一般情形：W_v 换成 c·W_v 时的权重与输出")
def value_scaling(ctx: Context, *, self_attention) -> None:
    for square in (True, False):  # d_v = d_k first, so weights computed from V still run
        X, W_q, W_k, W_v = _self_attention_inputs(ctx, square)
        # c away from 1: a function whose output ignores c must miss c·output by far
        c = float(ctx.rng.uniform(2.0, 4.0) if ctx.rng.random() < 0.5 else ctx.rng.uniform(0.25, 0.5))
        what = "self_attention(X, W_q, W_k, W_v)"
        out1, w1 = _unpack_pair(ctx.call(self_attention, X, W_q, W_k, W_v, what=what), what)
        what_c = f"self_attention(X, W_q, W_k, {c:.3g}·W_v)"
        out_c, w_c = _unpack_pair(ctx.call(self_attention, X, W_q, W_k, c * W_v, what=what_c), what_c)
        w1 = as_array(w1, f"{what} 的 weights")
        w_c = as_array(w_c, f"{what_c} 的 weights")
        for got, label in ((w1, f"{what} 的 weights"), (w_c, f"{what_c} 的 weights"),
                           (as_array(out1, f"{what} 的 output"), f"{what} 的 output"),
                           (as_array(out_c, f"{what_c} 的 output"), f"{what_c} 的 output")):
            if not np.isfinite(got).all():  # inf matches inf: the property would prove nothing
                fail(f"{label} 含有 NaN 或无穷大，而输入都是不大的有限数。")
        # the relation alone holds for any weights that leave V out (unscaled, wrong axis):
        # the weights it is about must be the lecture's
        Q, K = X @ W_q, X @ W_k
        assert_close(w1, ref.attention_weights(Q, K), f"{what} 的 weights", rtol=1e-6, atol=1e-8,
                     diagnose=mc.diagnoser(mc.weights_variants(Q, K, d_model=X.shape[1])))
        if w1.shape != w_c.shape or not np.allclose(w1, w_c, rtol=1e-6, atol=1e-9):
            fail(f"把 W_v 换成 {c:.3g}·W_v 后，返回的 weights 变了。\n可能的原因："
                 f"{mc.CATALOG['weights_depend_on_v'].describe()}")
        assert_close(out_c, c * as_array(out1, f"{what} 的 output"),
                     f"{what_c} 的 output（与 {c:.3g} 倍的原输出比较）", rtol=1e-6, atol=1e-9,
                     diagnose=lambda _arr: mc.CATALOG["output_not_linear_in_v"].describe())


def _hand_diag(q_scale: float = 1.0, v_scale: float = 2.0, *, weights: bool):
    Q, K, V = q_scale * ref.HAND_X, ref.HAND_X, v_scale * ref.HAND_X
    return mc.diagnoser(mc.weights_variants(Q, K) if weights else mc.attention_variants(Q, K, V))


@check("q1.hand_example", "用代码核对手算：W_v = 2I 与 W_v = 3I 的权重和输出")
def hand_example(ctx: Context, *, weights_2I, output_2I, weights_3I, output_3I,
                 weights_1, output_1) -> None:
    for v_scale, weights, output, label in ((2.0, weights_2I, output_2I, "2I"),
                                            (3.0, weights_3I, output_3I, "3I")):
        exp_out, exp_w = ref.hand_example(v_scale=v_scale)
        assert_close(weights, exp_w, f"weights_{label}", rtol=0, atol=ref.LECTURE_ATOL,
                     diagnose=_hand_diag(v_scale=v_scale, weights=True))
        assert_close(output, exp_out, f"output_{label}", rtol=0, atol=ref.LECTURE_ATOL,
                     diagnose=_hand_diag(v_scale=v_scale, weights=False))
    # the code is right on the example; now the hand calculation must agree with it
    exp_out, exp_w = ref.hand_example(v_scale=3.0)
    for hand, code, what in ((weights_1, exp_w[0], "weights_1"), (output_1, exp_out[0], "output_1")):
        arr = as_array(hand, f"手算的 {what}")
        if arr.shape != code.shape or not np.allclose(arr, code, rtol=0, atol=ref.LECTURE_ATOL):
            why = q1_hand.weights_cause(arr) if what == "weights_1" and arr.shape == (2,) else ""
            fail(f"手算的 {what} = {fmt(arr)} 与代码算出的位置 1 的结果 {fmt(code)} 不一致"
                 f"（容差 {ref.LECTURE_ATOL:g}）：回到第 1 节，从打分起逐步核对手算。{why}")


def _scale_hint(value: float) -> str | None:
    if np.isclose(value, 3.0):
        return RATIO_IS_COEFFICIENT.describe()
    if np.isclose(value, 2 / 3):
        return "方向反了：算成了原来的输出相对新输出的倍数。"
    if np.isclose(value, 1.0):
        return "倍数是 1 说明 output_3I 与 output_2I 相同：输出没有随 W_v 变化，检查加权求和用的是不是 V。"
    return None


#: The lecture's position-1 weights with W_v = 2I (given in the prose, 3 decimals).
LECTURE_WEIGHTS = np.array([0.670, 0.330])
LECTURE_OUTPUT = np.array([1.340, 0.660])


def _own(value: object, shape: tuple[int, ...]) -> np.ndarray | None:
    """The student's own hand value as data (None when it is not a finite array of ``shape``)."""
    try:
        arr = as_array(value, "")
    except CheckFailed:
        return None
    return arr if arr.shape == shape and np.isfinite(arr).all() else None


@check("q1.weights_changed", "权重会变吗：weights_changed", context=("weights_1",))
def weights_changed(ctx: Context, *, weights_changed, weights_1) -> None:
    if as_bool(weights_changed, "weights_changed"):
        fail("weights_changed 应为 False：把 W_v 换成 3I 后，Q、K 都没变，打分和权重也就不变。"
             f"\n可能的原因：{mc.CATALOG['weights_depend_on_v'].describe()}")
    own = _own(weights_1, (2,))  # the answer must agree with the student's own hand steps
    if own is None or not np.allclose(own, LECTURE_WEIGHTS, rtol=0, atol=ref.LECTURE_ATOL):
        why = "" if own is None else q1_hand.weights_cause(own)
        fail("你回答 weights_changed = False，可你手算的 weights_1 与讲义 W_v = 2I 时的 0.670 / 0.330 "
             f"不同：回答和你自己的计算对不上。回到第 1 节，从打分起逐步核对手算。{why}")


@check("q1.output_scale_factor", "输出变成原来的几倍：output_scale_factor", context=("output_1",))
def output_scale_factor(ctx: Context, *, output_scale_factor, output_1) -> None:
    value = as_number(output_scale_factor, "output_scale_factor")
    if not (np.isfinite(value) and np.isclose(value, 1.5, rtol=1e-3, atol=1e-3)):
        hint = _scale_hint(value)  # what is wrong with it, not the right value
        fail(f"output_scale_factor = {value:.6g} 不对（容差 rtol=1e-3, atol=1e-3）。"
             + (f"\n可能的原因：{hint}" if hint else ""))
    own = _own(output_1, (2,))
    ratio = None if own is None else float(np.linalg.norm(own) / np.linalg.norm(LECTURE_OUTPUT))
    if ratio is None or not np.isclose(value, ratio, rtol=3e-3):
        fail("output_scale_factor 与你手算的 output_1 对不上：它应是 output_1 相对讲义 W_v = 2I 时的"
             "输出 [1.340, 0.660] 的倍数。回到第 1 节逐步核对手算。")


@check("q1.weights_3Wq", "对照：W_q = 3I 时的权重")
def weights_3Wq(ctx: Context, *, weights_3Wq) -> None:
    _, expected = ref.hand_example(q_scale=3.0)
    got = assert_close(weights_3Wq, expected, "weights_3Wq", rtol=0, atol=ref.LECTURE_ATOL,
                       diagnose=_hand_diag(q_scale=3.0, weights=True))
    if np.allclose(got, ref.hand_example()[1], atol=ref.LECTURE_ATOL):
        fail("weights_3Wq 与 W_q = I 时的权重相同，但改变 W_q 会改变打分，权重也会变。"
             f"\n可能的原因：{mc.CATALOG['weights_depend_on_v'].describe()}")


@check("q1.w11_exact", "精确权重 w11（SymPy，无浮点数）")
def w11_exact(ctx: Context, *, w11_exact) -> None:
    assert_equivalent(w11_exact, W11_EXACT, "w11_exact", symbols={})


@check("q1.output1_symbolic", "W_v = cI 时位置 1 的精确输出（SymPy，无浮点数）")
def output1_symbolic(ctx: Context, *, output1_symbolic) -> None:
    expected = C * sp.Matrix([[W11_EXACT, 1 - W11_EXACT]])
    assert_matrix_equivalent(output1_symbolic, expected, "output1_symbolic", symbols={"c": C},
                             allow_transpose=True)


def _max_weight(c: float) -> float:
    """Position 1's largest weight in the hand example with W_q = c·I (W_k = I, W_v = 2I)."""
    return float(ref.hand_example(q_scale=c)[1][0].max())


def _sigmoid(x: float) -> float:
    return float(ref.softmax(np.array([x, 0.0]))[0])


def _temperature_hint(c: float):
    expected = _max_weight(c)
    wrong = {
        C_ON_WV.describe(): _max_weight(1.0),
        mc.CATALOG["no_scaling"].describe(): _sigmoid(c),
        mc.CATALOG["weights_depend_on_v"].describe(): _sigmoid(np.sqrt(2) * c),
        "返回的是位置 1 那一行较小的权重（对位置 2 的权重），题目要的是最大的那个。": 1 - expected,
    }

    def hint(value: float) -> str | None:
        for text, candidate in wrong.items():
            if not np.isclose(candidate, expected, rtol=1e-6) and np.isclose(value, candidate, rtol=1e-6):
                return text
        return None

    return hint


@check("q1.temperature", "position1_max_weight：W_q = c·I 时位置 1 的最大权重")
def temperature(ctx: Context, *, position1_max_weight) -> None:
    for c in (0.0, *sorted(float(v) for v in ctx.rng.uniform(0.1, 10.0, size=4))):
        what = f"position1_max_weight({c:.4g})"
        got = ctx.call(position1_max_weight, c, what=what)
        if isinstance(got, (list, tuple, np.ndarray)) and np.ndim(got) != 0:
            fail(f"{what} 应是一个数，得到的是形状为 {np.shape(got)} 的数组或列表。"
                 "请返回位置 1 那一行权重中最大的那个数（例如 float(...)）。")
        assert_number_close(got, _max_weight(c), what, rtol=1e-6, atol=1e-9,
                             hint=_temperature_hint(c))


@check("q1.w11_of_c", "W_q = cI 时的精确权重 w11（SymPy，含 c，无浮点数）")
def w11_of_c(ctx: Context, *, w11_of_c) -> None:
    symbols = {"c": C}
    expr = canonical(as_expression(w11_of_c, "w11_of_c"), symbols)
    if {s.name for s in expr.free_symbols} <= {"c"}:
        wrong = ((C * W11_EXACT, WEIGHTS_LINEAR_IN_C.describe()),
                 (1 - W11_OF_C, "这是位置 1 对位置 2 的权重 w12，题目要的是对自己的权重 w11。"),
                 (1 / (1 + sp.exp(-C)), mc.CATALOG["no_scaling"].describe()))
        for form, why in wrong:
            if is_equivalent(expr, form):
                fail(f"w11_of_c 与正确答案不等价。\n可能的原因：{why}")
    assert_equivalent(expr, W11_OF_C, "w11_of_c", symbols=symbols)
