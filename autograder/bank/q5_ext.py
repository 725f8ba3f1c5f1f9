"""Checks for q5_cost_scaling's 拓展 (extensions): a whole layer, timing, the KV cache, two
extreme tokenizers. Registered by importing :mod:`.q5` (which imports this module last).

The whole-layer model of 拓展 A (one multiply-add = 2 FLOPs, width d, h heads of d/h, a
feed-forward layer with 4d hidden units; softmax, biases, norms not counted):

    Q, K, V, O projections   4 · 2·n·d²  =  8·n·d²
    scores QKᵀ (all heads)       2·n²·d
    weights · V (all heads)      2·n²·d
    feed-forward layer       2 · 2·n·d·4d = 16·n·d²
    total                       24·n·d² + 4·n²·d

so the n² part overtakes the rest at n = 6d, and 1000 -> 4000 tokens multiplies a layer by
4·(6d + 4000)/(6d + 1000): between 16 (small d) and 4 (large d).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import sympy as sp

from . import Context, check
from .lib import misconceptions as mc
from .lib.compare import as_array, assert_number_close, fail, fmt
from .lib.symbolic import as_expression, canonical
from .q5 import (
    BITS_AS_BYTES,
    BYTES_AS_ENTRIES,
    RATIO_LINEAR,
    RATIO_REVERSED,
    _assert_int,
    _random_pairs,
    _ratio_hint,
)

D = sp.Symbol("d")

#: (coefficient of n·d², coefficient of n²·d) of the model and of its named mistakes.
LAYER = (24, 4)

LAYER_NO_FFN = mc.register(
    "layer_missing_ffn", "漏算了前馈层",
    "一层 Transformer 在自注意力之后还有前馈层：(n, d)×(d, 4d) 与 (n, 4d)×(4d, d) 两次矩阵乘法，"
    "共 2·2·n·d·4d = 16·n·d² FLOPs，是一层里最大的线性部分。")
LAYER_ATTENTION_ONLY = mc.register(
    "layer_attention_only", "只算了 Q/K/V 投影和打分（漏了 W_o 与前馈层）",
    "整层除了 Q、K、V 三个投影（6·n·d²）和 n² 部分（4·n²·d），还有输出投影 W_o（2·n·d²）"
    "和前馈层（16·n·d²）：线性部分共 24·n·d²。")
LAYER_NO_OUTPUT = mc.register(
    "layer_missing_output_projection", "漏算了输出投影 W_o",
    "多头注意力把各头的输出拼接后还要乘输出矩阵 W_o（(n, d)×(d, d)，2·n·d² FLOPs）；"
    "Q、K、V、O 四个投影共 8·n·d²。")
LAYER_FFN_WIDTH = mc.register(
    "layer_ffn_width_d", "前馈层的隐藏单元按 d 而不是 4d 算",
    "本题的前馈层有 4d 个隐藏单元：(n, d)×(d, 4d) 与 (n, 4d)×(4d, d)，各 2·n·d·4d = 8·n·d² FLOPs。")
LAYER_HALF = mc.register(
    "flops_multiply_add_as_one", "一次乘加只算了 1 个 FLOP",
    "本题约定一次乘加 = 2 FLOPs（一次乘法加一次加法）：(a, b)×(b, c) 是 2·a·b·c FLOPs，每一项都要乘 2。")
LAYER_ND2 = mc.register(
    "flops_n_d_squared", "打分项写成 n·d² 而不是 n²·d",
    "打分 QKᵀ 是 (n, d)×(d, n)（所有头加起来）：结果有 n² 个元素，每个要 d 次乘加，所以是 2·n²·d FLOPs；"
    "加权求和（权重 (n, n) 乘 V (n, d)）同理是 2·n²·d。n·d² 是投影（X·W）的形状，不是打分表的。")
LAYER_NO_WEIGHTED_SUM = mc.register(
    "flops_missing_weighted_sum", "漏算了加权求和 权重·V",
    "除了打分 QKᵀ（2·n²·d），加权求和 权重·V 也是 n² 量级的计算（2·n²·d）：n² 部分共 4·n²·d。")
CROSSOVER_TRIVIAL = mc.register(
    "crossover_trivial_root", "取了平凡解 n = 0",
    "n = 0 时两部分都为 0，这是平凡解；要的是 n > 0 的那个交叉点（把符号声明为 positive=True）。")
RATIO_TABLE_ONLY = mc.register(
    "layer_ratio_table_only", "以为一整层也变成 16 倍",
    "16 倍只是打分表（n² 部分）。投影和前馈层（24·n·d²）只变成 4 倍，所以一整层介于 4 倍和 16 倍之间，"
    "d 越大越接近 4 倍。")

KV_QUADRATIC = mc.register(
    "kv_cache_quadratic", "以为 KV cache 按 n² 增长",
    "KV cache 存的是每个位置的 K 向量和 V 向量：每个 token 每层 2·d_model 个数，总量按 n 线性增长；"
    "n×n 的是打分表，不是 K、V。")
KV_ONE_TENSOR = mc.register(
    "kv_cache_one_tensor", "只算了 K（或 V）一份",
    "KV cache 要同时存 K 和 V：每个 token 每层 2·d_model 个数。")
KV_NO_LAYERS = mc.register(
    "kv_cache_no_layers", "漏乘了层数",
    "每一层都有自己的 K、V，都要缓存：总字节数 = 2 · n · n_layers · d_model · 每个元素的字节数。")

LOGLOG_LINEAR_FIT = mc.register(
    "loglog_linear_axes", "在线性坐标上拟合斜率",
    "幂律 cost ≈ c·nᵖ 的指数 p 是 log(cost) 对 log(n) 的直线斜率；要先对 ns 和 costs 都取对数再拟合。")
LOGLOG_SWAPPED = mc.register(
    "loglog_swapped_axes", "坐标轴对调：拟合了 log n 对 log cost",
    "应以 log(n) 为自变量、log(cost) 为因变量拟合直线；对调后得到的是 1/p。")
LOGLOG_ONE_AXIS = mc.register(
    "loglog_one_axis", "只对一个坐标取了对数（或两个对数底数不同）",
    "ns 和 costs 都要取对数，而且用同一个底数，斜率才是指数 p。")
TIMER_EMPTY = mc.register(
    "timer_without_call", "计时区间里没有调用 attention",
    "time.perf_counter() 的两次读数之间必须正好包住 attention(Q, K, V) 这一次调用；"
    "否则测到的只是计时器本身的开销，与 n 无关。")


# ------------------------------------------------------------------ helpers


def _symbolic_in_d(value: object, what: str) -> sp.Expr:
    """``value`` as a SymPy expression whose only symbol (if any) is ``d``; floats allowed."""
    if isinstance(value, (list, tuple, set, dict)):
        fail(f"{what} 应是一个 SymPy 表达式，得到的是 {type(value).__name__}。"
             "sp.solve 返回的是解的列表：请取出其中的正解（n > 0），例如 sols[0]。")
    if value is None:
        fail(f"{what} 是 None：应是一个只含符号 d 的 SymPy 表达式。是不是忘了赋值？")
    if isinstance(value, (str, bytes)):
        fail(f"{what} 应是 SymPy 表达式，得到的是字符串：请用上面声明的符号 d 构造它，例如 5*d 或 (d + 1)/(d + 2)。")
    if isinstance(value, sp.Basic) and not isinstance(value, sp.Expr):
        fail(f"{what} 应是一个表达式（例如 5*d），得到的是 {type(value).__name__}："
             "请存 n 的值本身，不要存方程 sp.Eq(...)。")
    expr = canonical(as_expression(value, what, exact=False), {"d": D})
    extra = sorted(s.name for s in expr.free_symbols if s.name != "d")
    if extra:
        fail(f"{what} 应只含符号 d，却含有 {', '.join(extra)}。")
    return expr


def _at(expr: sp.Expr, d: int, what: str) -> float:
    try:
        value = complex(sp.N(expr.xreplace({D: sp.Integer(d)}), 30))
    except (TypeError, ValueError, ZeroDivisionError):
        fail(f"{what} 在 d = {d} 处无法求值。")
    if abs(value.imag) > 1e-12 * max(1.0, abs(value.real)) or not np.isfinite(value.real):
        fail(f"{what} 在 d = {d} 处不是有限的实数（得到 {value}）。")
    return value.real


# ------------------------------------------------------------------ a whole layer's FLOPs


def layer_model(n: int, d: int, linear: int = LAYER[0], quadratic: int = LAYER[1]) -> int:
    """linear·n·d² + quadratic·n²·d (the reference is ``layer_model(n, d)``)."""
    return linear * n * d * d + quadratic * n * n * d


#: (linear, quadratic) coefficients of each named wrong model.
_LAYER_MISTAKES: dict[tuple[int, int], mc.Misconception] = {
    (8, 4): LAYER_NO_FFN,
    (6, 4): LAYER_ATTENTION_ONLY,
    (22, 4): LAYER_NO_OUTPUT,
    (12, 4): LAYER_FFN_WIDTH,
    (12, 2): LAYER_HALF,
    (24, 2): LAYER_NO_WEIGHTED_SUM,
}


def _layer_flop_mistakes(n: int, d: int) -> dict[int, mc.Misconception]:
    wrong = {layer_model(n, d, a, b): entry for (a, b), entry in _LAYER_MISTAKES.items()}
    wrong[28 * n * d * d] = LAYER_ND2            # both n² terms written as n·d²
    wrong[26 * n * d * d + 2 * n * n * d] = LAYER_ND2
    return wrong


@check("q5.layer_flops", "layer_flops：一整层 Transformer 的 FLOPs（投影、打分、加权求和、前馈层）")
def check_layer_flops(ctx: Context, *, layer_flops) -> None:
    cases = [(1000, 512), (4000, 4096)]
    for n in [*(int(v) for v in ctx.rng.integers(2, 5_000, size=2)), 100_000,
              int(ctx.rng.integers(50_000, 2_000_000)), 1]:
        cases.append((n, int(ctx.rng.integers(2, 16_385))))
    for n, d in cases:
        what = f"layer_flops(n={n}, d={d})"
        _assert_int(ctx.call(layer_flops, n, d, what=what), layer_model(n, d), what,
                    _layer_flop_mistakes(n, d))


@check("q5.crossover_length", "crossover_length：n² 部分追上线性部分时的长度（SymPy）")
def check_crossover_length(ctx: Context, *, crossover_length) -> None:
    what = "crossover_length"
    expr = _symbolic_in_d(crossover_length, what)
    if D not in expr.free_symbols:
        value = _at(expr, 1, what)
        extra = f"\n可能的原因：{CROSSOVER_TRIVIAL.describe()}" if value == 0 else ""
        fail(f"{what} 应是 d 的表达式（交叉点随模型宽度 d 变化），得到的是常数 {fmt(value)}。{extra}")
    expected = sp.Rational(LAYER[0], LAYER[1])
    for d in (64, 512, int(ctx.rng.integers(2, 100_000))):
        got = _at(expr, d, what)
        if not np.isclose(got, float(expected * d), rtol=1e-9, atol=0):
            ratio = got / d
            hint = None
            if abs(got) < 1e-12:
                hint = CROSSOVER_TRIVIAL
            for (a, b), entry in _LAYER_MISTAKES.items():
                if hint is None and np.isclose(ratio, a / b, rtol=1e-9) and a * LAYER[1] != b * LAYER[0]:
                    hint = entry
            extra = f"\n可能的原因：{hint.describe()}" if hint else ""
            fail(f"{what} 不对：d = {d} 时两部分在 n = {float(expected * d):.6g} 处相等，"
                 f"你的表达式给出 {got:.6g}。{extra}")


def _layer_ratio(d: float, linear: int = LAYER[0], quadratic: int = LAYER[1],
                 n_from: int = 1000, n_to: int = 4000) -> float:
    return (n_to * (linear * d + quadratic * n_to)) / (n_from * (linear * d + quadratic * n_from))


@check("q5.layer_ratio", "layer_ratio：1000 → 4000 个 token 时一整层变成原来的多少倍（d 的函数）")
def check_layer_ratio(ctx: Context, *, layer_ratio) -> None:
    what = "layer_ratio"
    expr = _symbolic_in_d(layer_ratio, what)
    constant = D not in expr.free_symbols
    for d in (512, 4096, 1, int(ctx.rng.integers(2, 200_000))):
        got = _at(expr, d, what)
        expected = _layer_ratio(d)
        if np.isclose(got, expected, rtol=1e-9, atol=0):
            continue
        hint = None
        if np.isclose(got, 16, rtol=1e-9):
            hint = RATIO_TABLE_ONLY
        elif np.isclose(got, 4, rtol=1e-9):
            hint = RATIO_LINEAR
        elif np.isclose(got, 1 / expected, rtol=1e-9):
            hint = RATIO_REVERSED
        for (a, b), entry in _LAYER_MISTAKES.items():
            if hint is None and not np.isclose(_layer_ratio(d, a, b), expected, rtol=1e-9) \
                    and np.isclose(got, _layer_ratio(d, a, b), rtol=1e-9):
                hint = entry
        extra = f"\n可能的原因：{hint.describe()}" if hint else ""
        kind = "（你的答案是常数，不随 d 变化）" if constant else ""
        fail(f"{what} 不对：d = {d} 时一整层应变成原来的 {expected:.6g} 倍，得到 {got:.6g}{kind}。{extra}")


# ------------------------------------------------------------------ memory: the KV cache


@check("q5.kv_cache_bytes", "kv_cache_bytes：n 个 token 的 KV cache 占多少字节")
def check_kv_cache_bytes(ctx: Context, *, kv_cache_bytes) -> None:
    sizes = {"float16": 2, "float32": 4, "float64": 8}
    cases = [(4000, 32, 4096, "float16")]
    for dtype in ctx.rng.permutation(list(sizes)):
        n, layers = int(ctx.rng.integers(2, 300_000)), int(ctx.rng.integers(2, 97))
        cases.append((n, layers, int(ctx.rng.integers(2, 16_385)), str(dtype)))
    for n, layers, width, dtype in cases:
        what = f'kv_cache_bytes({n}, {layers}, {width}, dtype="{dtype}")'
        expected = 2 * n * layers * width * sizes[dtype]
        _assert_int(ctx.call(kv_cache_bytes, n, layers, width, what=what, dtype=dtype), expected, what,
                    {expected // sizes[dtype]: BYTES_AS_ENTRIES,  # for float16 the same as K only
                     n * expected: KV_QUADRATIC, expected // 2: KV_ONE_TENSOR,
                     expected // layers: KV_NO_LAYERS, 8 * expected: BITS_AS_BYTES})
    n, layers, width = 1, int(ctx.rng.integers(2, 97)), int(ctx.rng.integers(2, 16_385))
    what = f"kv_cache_bytes({n}, {layers}, {width})（不给 dtype，默认 float16）"
    expected = 2 * n * layers * width * 2
    _assert_int(ctx.call(kv_cache_bytes, n, layers, width, what=what), expected, what,
                {expected // 2: KV_ONE_TENSOR, expected // layers: KV_NO_LAYERS})


# ------------------------------------------------------------------ measured scaling


def _ref_slope(ns: np.ndarray, costs: np.ndarray) -> float:
    return float(np.polyfit(np.log(ns), np.log(costs), 1)[0])


def _slope_hint(ns: np.ndarray, costs: np.ndarray, p: float) -> Callable[[float], str | None]:
    def close(value: float, target: float) -> bool:
        return bool(np.isclose(value, target, rtol=1e-3, atol=0))

    def hint(value: float) -> str | None:
        if close(value, float(np.polyfit(ns, costs, 1)[0])):
            return LOGLOG_LINEAR_FIT.describe()
        if close(value, float(np.polyfit(np.log(costs), np.log(ns), 1)[0])) or close(value, 1 / p):
            return LOGLOG_SWAPPED.describe()
        one_axis = [np.polyfit(np.log(ns), costs, 1)[0], np.polyfit(ns, np.log(costs), 1)[0],
                    np.polyfit(np.log10(ns), np.log(costs), 1)[0],
                    np.polyfit(np.log(ns), np.log10(costs), 1)[0]]
        if any(close(value, float(v)) for v in one_axis):
            return LOGLOG_ONE_AXIS.describe()
        return None

    return hint


@check("q5.loglog_slope", "loglog_slope：从带噪声的数据中读出指数 1、2、3")
def check_loglog_slope(ctx: Context, *, loglog_slope) -> None:
    for p in ctx.rng.permutation([1, 2, 3]):
        p = int(p)
        count = int(ctx.rng.integers(6, 11))
        ns = np.unique(np.geomspace(8, 8 * 10 ** ctx.rng.uniform(2.5, 3.5), count).round())
        clean = float(ctx.rng.uniform(1e-9, 1e-3)) * ns ** p
        # Noise of 5 % per point: the least-squares slope's standard error is below 0.01
        # for these ranges, and even a two-point slope stays within 0.03; tolerance 0.1.
        noisy = clean * np.exp(0.05 * ctx.rng.standard_normal(ns.size))
        what = f"loglog_slope(ns, costs)（{ns.size} 个点，costs ≈ c·n^{p}，含噪声）"
        got = ctx.call(loglog_slope, ns, noisy, what=what)
        assert_number_close(got, _ref_slope(ns, noisy), what, rtol=0, atol=0.1,
                            hint=_slope_hint(ns, noisy, p))
        what = f"loglog_slope(ns, costs)（costs = c·n^{p}，无噪声，ns 与 costs 为列表）"
        got = ctx.call(loglog_slope, ns.tolist(), clean.tolist(), what=what)
        assert_number_close(got, float(p), what, rtol=0, atol=1e-6, hint=_slope_hint(ns, clean, p))


#: A correct timer's reading for n = 500-700 (d = 16) is at least this many seconds and at
#: least TIMING_FACTOR times its reading for n = 2-5. Measured here: 1-6 ms against 9-18 us
#: (ratios 55-600: the big table falls in or out of the cache with n); no plausible CPU does
#: one such call (16 MFLOP and 250 000 exps) in 50 us. A timer around nothing reads a few
#: microseconds at any n (ratios 3-35), so the floor, not the ratio, is what it fails.
MIN_TIMED_SECONDS = 5e-5
TIMING_FACTOR = 10
#: Measurements a correct timer gets before it is judged (each the best of 3 repeats).
TIMING_ATTEMPTS = 3


def _timed_plausibly(small: float, big: float) -> bool:
    return big >= MIN_TIMED_SECONDS and big >= TIMING_FACTOR * small


@check("q5.measure_attention_seconds",
       "measure_attention_seconds：每个 n 一个正的耗时，n 大时明显更慢（不评速度）")
def check_measure_attention_seconds(ctx: Context, *, measure_attention_seconds) -> None:
    for ns, d, repeats in (([4, 8, 16], 4, 1), ([2, 6], 3, 2), ([5], 2, 1)):
        rng = np.random.default_rng(int(ctx.rng.integers(2**31)))
        what = f"measure_attention_seconds(ns={ns}, d={d}, repeats={repeats}, rng)"
        got = ctx.call(measure_attention_seconds, ns, d, repeats, rng, what=what)
        arr = as_array(got, what)
        if arr.shape != (len(ns),):
            fail(f"{what} 应返回形状为 ({len(ns)},) 的数组（每个 n 一个耗时），得到的形状是 {arr.shape}。")
        bad = int(np.sum(~(np.isfinite(arr) & (arr > 0))))
        if bad:
            extra = f"\n可能的原因：{TIMER_EMPTY.describe()}" if np.all(arr == 0) else ""
            fail(f"{what} 的每个耗时都应是正的有限秒数，其中 {bad} 个不是。"
                 f"请用 time.perf_counter() 计时，并对每个 n 取 repeats 次中最短的一次。{extra}")
    ns = [int(ctx.rng.integers(2, 6)), int(ctx.rng.integers(500, 701))]
    seeds = [int(s) for s in ctx.rng.integers(2**31, size=TIMING_ATTEMPTS)]
    what = f"measure_attention_seconds(ns={ns}, d=16, repeats=3, rng)"
    for seed in seeds:  # a busy machine can blur one measurement, never all of them
        arr = as_array(ctx.call(measure_attention_seconds, ns, 16, 3, np.random.default_rng(seed),
                                what=what), what)
        if arr.shape != (2,) or not np.isfinite(arr).all() or not (arr > 0).all():
            fail(f"{what} 应返回两个正的有限秒数（形状 (2,)）。")
        if _timed_plausibly(arr[0], arr[1]) or arr[1] < MIN_TIMED_SECONDS:
            break  # below the floor is final: load only ever makes a real call slower
    if not _timed_plausibly(arr[0], arr[1]):
        # the measured times are left out: they differ from run to run, the verdict does not
        fail(f"{what}：n = {ns[1]} 的打分表是 n = {ns[0]} 的 {(ns[1] / ns[0]) ** 2:.0f} 倍，"
             f"这样一次 attention 在任何机器上都要至少 {MIN_TIMED_SECONDS * 1e6:.0f} 微秒、"
             f"至少是 n = {ns[0]} 的 {TIMING_FACTOR} 倍（实际通常是几百倍），测到的却不是这样。"
             f"\n可能的原因：{TIMER_EMPTY.describe()}")


# ------------------------------------------------------------------ two extreme tokenizers


@check("q5.relative_attention_cost", "relative_attention_cost：同一段内容分成 a 个与 b 个 token 时的注意力代价之比")
def check_relative_attention_cost(ctx: Context, *, relative_attention_cost) -> None:
    pairs = [(10, 30)] + _random_pairs(ctx, 4)
    for a, b in pairs:
        what = f"relative_attention_cost({a}, {b})"
        assert_number_close(ctx.call(relative_attention_cost, a, b, what=what), (b / a) ** 2, what,
                            rtol=1e-9, atol=0, hint=_ratio_hint(a, b))
