"""Checks for q5_cost_scaling: the n² score table, 1000 -> 4000 tokens, and tokenisation."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import sympy as sp

from .. import misconceptions as mc
from ..compare import as_array, assert_number_close, fail, fmt
from ..symbolic import as_expression, canonical, is_equivalent
from . import Context, check

D = sp.Symbol("d")
CROSSOVER = sp.Rational(3, 2) * D

RATIO_LINEAR = mc.register(
    "ratio_linear", "线性思维：以为代价与 token 数成正比",
    "打分表有 n×n 个元素：每个 Query 都要和每个 Key 打分。n 变成 4 倍，打分表变成 4² = 16 倍，"
    "而不是 4 倍。")
RATIO_CUBIC = mc.register(
    "ratio_cubic", "立方增长：以为代价按 n³ 增长",
    "打分表是二维的 n×n 表，元素个数按 n² 增长；n 变成 4 倍，打分表变成 16 倍，不是 4³ = 64 倍。")
RATIO_REVERSED = mc.register(
    "ratio_reversed", "比值方向反了",
    "问的是从 n_from 增长到 n_to 时代价变成原来的多少倍，应是 (n_to / n_from)²，而不是它的倒数。")
BYTES_AS_ENTRIES = mc.register(
    "bytes_as_entries", "把元素个数当成字节数",
    "打分表有 n² 个元素，每个元素占 dtype 的字节数（float16 为 2，float32 为 4，float64 为 8），"
    "字节数 = n² × 每个元素的字节数。")
BITS_AS_BYTES = mc.register(
    "bits_as_bytes", "把比特数当成字节数",
    "np.dtype(...).itemsize 已经是字节数；float32 每个元素 4 字节 = 32 比特，不要再乘 8。")
FLOPS_ND2 = mc.register(
    "flops_n_d_squared", "打分项写成 n·d² 而不是 n²·d",
    "打分 QKᵀ 是 (n, d_k) 乘 (d_k, n)：结果有 n² 个元素，每个元素要 d_k 次乘加，所以是 2·n²·d_k FLOPs；"
    "加权求和（权重 (n, n) 乘 V (n, d_v)）同理是 2·n²·d_v。n·d² 是投影（X·W）的形状，不是打分表的。")
FLOPS_HALF = mc.register(
    "flops_multiply_add_as_one", "一次乘加只算了 1 个 FLOP",
    "本题约定一次乘加 = 2 FLOPs（一次乘法加一次加法），每一项都要乘 2。")
FLOPS_NO_PROJECTION = mc.register(
    "flops_missing_projections", "漏算了 Q/K/V 投影",
    "按本题约定，Q、K、V 三个投影（2·n·d_model·d_k 两次、2·n·d_model·d_v 一次）也要计入。")
FLOPS_NO_WEIGHTED_SUM = mc.register(
    "flops_missing_weighted_sum", "漏算了加权求和 权重·V",
    "除了打分 QKᵀ（2·n²·d_k），加权求和 权重·V 也有 n² 量级的计算（2·n²·d_v）。")
INT32_OVERFLOW = mc.register(
    "int32_overflow", "int32 溢出",
    "结果超过了 int32 的上限 2³¹−1 ≈ 2.1×10⁹ 后回绕成了错误的数（n = 100000 时 n² = 10¹⁰）。"
    "请用 Python 的 int 计算（例如 int(n) * int(n)），不要转成 np.int32。")
CROSSOVER_SCORES_ONLY = mc.register(
    "crossover_scores_only", "交叉点只算了打分项",
    "n² 项包括打分（2·n²·d）和加权求和（2·n²·d）两项，共 4·n²·d；投影项共 6·n·d²。")
LOGLOG_LINEAR_FIT = mc.register(
    "loglog_linear_axes", "在线性坐标上拟合斜率",
    "幂律 cost ≈ c·nᵖ 的指数 p 是 log(cost) 对 log(n) 的直线斜率；要先对 ns 和 costs 都取对数再拟合。")
LOGLOG_SWAPPED = mc.register(
    "loglog_swapped_axes", "坐标轴对调：拟合了 log n 对 log cost",
    "应以 log(n) 为自变量、log(cost) 为因变量拟合直线；对调后得到的是 1/p。")
LOGLOG_ONE_AXIS = mc.register(
    "loglog_one_axis", "只对一个坐标取了对数（或两个对数底数不同）",
    "ns 和 costs 都要取对数，而且用同一个底数，斜率才是指数 p。")
UTF8_AS_CHARS = mc.register(
    "utf8_bytes_as_chars", "把字符数当成 UTF-8 字节数",
    "len(text) 数的是字符（Unicode 码位）。UTF-8 中 ASCII 占 1 字节，汉字占 3 字节，emoji 占 4 字节；"
    "字节数要数 text.encode('utf-8') 的长度。")
CHARS_AS_BYTES = mc.register(
    "chars_as_utf8_bytes", "把 UTF-8 字节数当成字符数",
    "字符数是 Unicode 码位的个数 len(text)；一个汉字是 1 个字符，但在 UTF-8 中占 3 字节。")
UTF16 = mc.register(
    "utf16_units", "用了 UTF-16 而不是 UTF-8",
    "题目问的是 UTF-8 字节数（字节级分词的 token 数），应数 text.encode('utf-8') 的长度。")


# ------------------------------------------------------------------ helpers


def _as_int(value: object, what: str) -> int:
    """``value`` as an exact Python int; floats, strings, None and arrays are refused."""
    if value is None:
        fail(f"{what} 返回了 None：应返回一个整数。是不是忘了 return？")
    if isinstance(value, (bool, np.bool_)):
        fail(f"{what} 应返回整数，得到的是布尔值 {value}。")
    if isinstance(value, (str, bytes)):
        fail(f"{what} 应返回整数，得到的是字符串 {fmt(value)}。")
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        fail(f"{what} 应返回精确的整数（int），得到的是浮点数 {float(value):.6g}。"
             "很大的 n 下浮点数会丢失精度；请用整数运算（例如 n * n，不要写 n ** 2.0）。")
    fail(f"{what} 应返回一个整数，得到的是 {type(value).__name__}：{fmt(value)}。")
    return 0  # unreachable


def _wrap32(x: int) -> int:
    return ((x + 2**31) % 2**32) - 2**31


def _assert_int(got: object, expected: int, what: str,
                wrong: dict[int, mc.Misconception] | None = None) -> int:
    value = _as_int(got, what)
    if value != expected:
        found = None
        if expected != _wrap32(expected) and value == _wrap32(expected):
            found = INT32_OVERFLOW
        for candidate, entry in (wrong or {}).items():
            if found is None and candidate != expected and value == candidate:
                found = entry
        extra = f"\n可能的原因：{found.describe()}" if found else ""
        fail(f"{what} 不对：期望 {expected}，得到 {value}。{extra}")
    return value


def _ratio_hint(a: float, b: float) -> Callable[[float], str | None]:
    candidates = [(b / a, RATIO_LINEAR), ((b / a) ** 3, RATIO_CUBIC), ((a / b) ** 2, RATIO_REVERSED),
                  (a / b, RATIO_REVERSED)]

    def hint(value: float) -> str | None:
        for candidate, entry in candidates:
            if np.isclose(value, candidate, rtol=1e-9, atol=0):
                return entry.describe()
        return None

    return hint


def _random_pairs(ctx: Context, count: int) -> list[tuple[int, int]]:
    pairs = [(1000, 4000)]
    while len(pairs) < count:
        a, b = (int(v) for v in ctx.rng.integers(1, 200_000, size=2))
        if a != b:
            pairs.append((a, b))
    return pairs


# ------------------------------------------------------------------ the score table


@check("q5.score_table_entries", "score_table_entries：打分表有 n² 个元素（含 n = 1 与很大的 n）")
def check_score_table_entries(ctx: Context, *, score_table_entries) -> None:
    large = [int(v) for v in ctx.rng.integers(46_341, 3_000_000, size=3)]
    small = [int(v) for v in ctx.rng.integers(2, 5_000, size=3)]
    for n in [1, *small, 100_000, *large]:
        what = f"score_table_entries({n})"
        _assert_int(ctx.call(score_table_entries, n, what=what), n * n, what,
                    {n: RATIO_LINEAR, n**3: RATIO_CUBIC})


@check("q5.score_table_bytes", "score_table_bytes：n² 个元素 × 每个元素的字节数（float16/32/64）")
def check_score_table_bytes(ctx: Context, *, score_table_bytes) -> None:
    sizes = {"float16": 2, "float32": 4, "float64": 8}
    ns = [1, *(int(v) for v in ctx.rng.integers(2, 300_000, size=3))]
    for n in ns:
        for dtype in ctx.rng.permutation(list(sizes)):
            dtype = str(dtype)
            what = f'score_table_bytes({n}, dtype="{dtype}")'
            expected = n * n * sizes[dtype]
            _assert_int(ctx.call(score_table_bytes, n, what=what, dtype=dtype), expected, what,
                        {n * n: BYTES_AS_ENTRIES, 8 * expected: BITS_AS_BYTES})
    n = ns[-1]
    what = f"score_table_bytes({n})（不给 dtype，默认 float32）"
    _assert_int(ctx.call(score_table_bytes, n, what=what), n * n * 4, what,
                {n * n: BYTES_AS_ENTRIES, 32 * n * n: BITS_AS_BYTES})


@check("q5.cost_ratio", "cost_ratio：打分表规模之比 (n_to / n_from)²")
def check_cost_ratio(ctx: Context, *, cost_ratio) -> None:
    for a, b in _random_pairs(ctx, 6):
        what = f"cost_ratio({a}, {b})"
        assert_number_close(ctx.call(cost_ratio, a, b, what=what), (b / a) ** 2, what,
                            rtol=1e-9, atol=0, hint=_ratio_hint(a, b))


# ------------------------------------------------------------------ the FLOP model


def _flops(n: int, d_model: int, d_k: int, d_v: int, *, score: str = "n2d",
           projections: bool = True, weighted_sum: bool = True, factor: int = 2) -> int:
    proj = n * d_model * (2 * d_k + d_v) if projections else 0
    if score == "n2d":
        quad = n * n * d_k + (n * n * d_v if weighted_sum else 0)
    else:  # n·d² instead of n²·d
        quad = n * d_k * d_k + (n * d_v * d_v if weighted_sum else 0)
    return factor * (proj + quad)


def _flop_mistakes(n: int, d_model: int, d_k: int, d_v: int) -> dict[int, mc.Misconception]:
    args = (n, d_model, d_k, d_v)
    return {
        _flops(*args, score="nd2"): FLOPS_ND2,
        _flops(*args, score="nd2", weighted_sum=False): FLOPS_ND2,
        _flops(*args) - 2 * n * n * d_k + 2 * n * d_k * d_k: FLOPS_ND2,
        _flops(*args, factor=1): FLOPS_HALF,
        _flops(*args, projections=False): FLOPS_NO_PROJECTION,
        _flops(*args, projections=False, weighted_sum=False): FLOPS_NO_PROJECTION,
        _flops(*args, weighted_sum=False): FLOPS_NO_WEIGHTED_SUM,
    }


@check("q5.attention_flops", "attention_flops：投影 + 打分 2·n²·d_k + 加权求和 2·n²·d_v")
def check_attention_flops(ctx: Context, *, attention_flops) -> None:
    cases = [(1000, 512, 64, 64), (4000, 512, 64, 64)]
    for n in [1, *(int(v) for v in ctx.rng.integers(2, 5_000, size=2)), 100_000,
              int(ctx.rng.integers(50_000, 2_000_000))]:
        d_model, d_k, d_v = ctx.dims(2, 1024, 3)
        cases.append((n, d_model, d_k, d_v))
    for args in cases:
        what = "attention_flops(n={}, d_model={}, d_k={}, d_v={})".format(*args)
        _assert_int(ctx.call(attention_flops, *args, what=what), _flops(*args), what,
                    _flop_mistakes(*args))


@check("q5.crossover_length", "crossover_length：n² 项与投影项相等时 n = 3d/2（SymPy）")
def check_crossover_length(ctx: Context, *, crossover_length) -> None:
    what = "crossover_length"
    if isinstance(crossover_length, (list, tuple, set, dict)):
        fail(f"{what} 应是一个 SymPy 表达式，得到的是 {type(crossover_length).__name__}。"
             "sp.solve 返回的是解的列表：请取出其中的正解（n > 0），例如 sols[0]。")
    expr = canonical(as_expression(crossover_length, what), {"d": D})
    extra = sorted(s.name for s in expr.free_symbols if s.name != "d")
    if extra:
        fail(f"{what} 应只含符号 d（d_model = d_k = d_v = d），却含有 {', '.join(extra)}。")
    if is_equivalent(expr, CROSSOVER):
        return
    if expr == 0:
        hint = "n = 0 是平凡解（两边都为 0），要的是 n > 0 的那个交叉点。"
    elif is_equivalent(expr, 3 * D):
        hint = CROSSOVER_SCORES_ONLY.describe()
    else:
        hint = ""
    point = sp.Integer(64)
    try:
        got = f"{float(expr.subs(D, point)):.6g}"
    except (TypeError, ValueError):
        got = str(expr)
    fail(f"{what} 与正确答案不等价：d = 64 时期望 n = {float(CROSSOVER.subs(D, point)):.6g}，得到 {got}。"
         + (f"\n可能的原因：{hint}" if hint else ""))


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


@check("q5.measure_attention_seconds", "measure_attention_seconds：每个 n 一个正的耗时（不评速度）")
def check_measure_attention_seconds(ctx: Context, *, measure_attention_seconds) -> None:
    for ns, d, repeats in (([4, 8, 16], 4, 1), ([2, 6], 3, 2), ([5], 2, 1)):
        rng = np.random.default_rng(int(ctx.rng.integers(2**31)))
        what = f"measure_attention_seconds(ns={ns}, d={d}, repeats={repeats}, rng)"
        got = ctx.call(measure_attention_seconds, ns, d, repeats, rng, what=what)
        arr = as_array(got, what)
        if arr.shape != (len(ns),):
            fail(f"{what} 应返回形状为 ({len(ns)},) 的数组（每个 n 一个耗时），得到的形状是 {arr.shape}。")
        if not np.isfinite(arr).all() or not (arr > 0).all():
            fail(f"{what} 的每个耗时都应是正的有限秒数，得到 {fmt(arr)}。"
                 "请用 time.perf_counter() 计时，并对每个 n 取 repeats 次中最短的一次。")


# ------------------------------------------------------------------ tokenisation

_ASCII = [chr(c) for c in range(0x20, 0x7F)]
_TWO_BYTE = list("éüßñçαβγδλπΩжЯ")
_EMOJI = [chr(c) for c in (*range(0x1F600, 0x1F650), 0x1F680, 0x1F916, 0x1F389, 0x1F30F)]


def _random_text(ctx: Context, length: int) -> str:
    pools = [_ASCII, None, _EMOJI, _TWO_BYTE]
    chars = []
    for kind in ctx.rng.choice(4, size=length, p=[0.4, 0.4, 0.1, 0.1]):
        if pools[kind] is None:
            chars.append(chr(int(ctx.rng.integers(0x4E00, 0x9FA6))))  # CJK unified ideographs
        else:
            chars.append(str(ctx.rng.choice(pools[kind])))
    return "".join(chars)


def _texts(ctx: Context) -> list[tuple[str, str]]:
    """(text, description) pairs; descriptions summarise, never print the hidden strings."""
    out = [("", "空字符串"), ("attention", "纯 ASCII"), ("注意力机制", "纯汉字"), ("😀", "一个 emoji")]
    for _ in range(4):
        text = _random_text(ctx, int(ctx.rng.integers(5, 40)))
        out.append((text, f"随机混合字符串（{len(text)} 个字符）"))
    return out


@check("q5.token_counts", "token_count_chars 与 token_count_utf8_bytes：字符数与 UTF-8 字节数")
def check_token_counts(ctx: Context, *, token_count_chars, token_count_utf8_bytes) -> None:
    for text, desc in _texts(ctx):
        chars, nbytes = len(text), len(text.encode("utf-8"))
        what = f"token_count_chars(text)（{desc}）"
        _assert_int(ctx.call(token_count_chars, text, what=what), chars, what,
                    {nbytes: CHARS_AS_BYTES})
        what = f"token_count_utf8_bytes(text)（{desc}）"
        _assert_int(ctx.call(token_count_utf8_bytes, text, what=what), nbytes, what,
                    {chars: UTF8_AS_CHARS, len(text.encode("utf-16-le")): UTF16,
                     len(text.encode("utf-16")): UTF16})


@check("q5.relative_attention_cost", "relative_attention_cost：注意力代价之比 (b/a)²")
def check_relative_attention_cost(ctx: Context, *, relative_attention_cost) -> None:
    pairs = [(10, 30)] + _random_pairs(ctx, 5)[1:]
    for a, b in pairs:
        what = f"relative_attention_cost({a}, {b})"
        assert_number_close(ctx.call(relative_attention_cost, a, b, what=what), (b / a) ** 2, what,
                            rtol=1e-9, atol=0, hint=_ratio_hint(a, b))
