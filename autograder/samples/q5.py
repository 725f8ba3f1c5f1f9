"""Sample students of q5: correct alternatives and named mistakes.

Each mistake is the source solution with ``edits`` applied; it must lose exactly the
cells in ``loses`` and its feedback must name ``feedback``. Host-side only: nothing
here is loaded where student code runs. The first mistakes are the core's (the hand
steps, the functions, the tokens), then the 拓展's.
"""

from __future__ import annotations

from ..bank.q5 import (
    BYTES_AS_ENTRIES,
    BYTES_AS_TOKENS,
    CHARS_AS_TOKENS,
    COUNT_LINEAR,
    INT32_OVERFLOW,
    RATIO_CUBIC,
    RATIO_LINEAR,
    RATIO_REVERSED,
    SCORES_PAIRS,
    WORDS_AS_TOKENS,
)
from ..bank.q5_ext import (
    KV_QUADRATIC,
    LAYER_ATTENTION_ONLY,
    LAYER_ND2,
    LAYER_NO_FFN,
    LOGLOG_LINEAR_FIT,
    RATIO_TABLE_ONLY,
    TIMER_EMPTY,
)
from .variants import Edit, Variant

_LINEAR_PART = "linear_part = 4 * 2 * n * d**2 + 2 * (2 * n * d * 4 * d)"
_TOKENS = "    return len(cl100k.encode(text))"
_KV = "    return 2 * int(n) * int(n_layers) * int(d_model) * np.dtype(dtype).itemsize"
_HAND = ("entries_2 = 2 * 2                         # score(1,1)、score(1,2)、score(2,1)、score(2,2)\n"
         "entries_1000 = 1000 * 1000\n"
         "entries_4000 = 4000 * 4000\n"
         "table_ratio = entries_4000 / entries_1000")
_P = ('p_zh = count_tokens(texts["zh"]) / en_tokens\n'
      'p_mixed = count_tokens(texts["mixed"]) / en_tokens')
_ATTENTION = "attention_zh = p_zh ** 2\nattention_mixed = p_mixed ** 2"


def _hand(entries_2: str, entries_1000: str, entries_4000: str, table_ratio: str) -> Edit:
    return Edit("hand_counts", _HAND, f"entries_2 = {entries_2}\nentries_1000 = {entries_1000}\n"
                                      f"entries_4000 = {entries_4000}\ntable_ratio = {table_ratio}")


ALTERNATIVES = [
    Variant("itemsize_table_lstsq_floats",
            "手算写成浮点数、字节数查表、一行公式、浮点系数的 SymPy、lstsq 拟合斜率、token 倍数用 cost_ratio 平方"
            "（正确的另一种写法）",
            edits=(
                _hand("4.0", "1e6", "1.6e7", "(4000 / 1000) ** 2"),
                Edit("bytes_impl", "    return n * n * np.dtype(dtype).itemsize",
                     "    table = {'float16': 2, 'float32': 4, 'float64': 8}\n"
                     "    return table[np.dtype(dtype).name] * n ** 2"),
                Edit("flops_impl", "    return projections + scores + weighted_sum + feed_forward",
                     "    return 2 * n * d * (12 * d + 2 * n)"),
                Edit("crossover_impl", _LINEAR_PART, "linear_part = 24.0 * n * d**2"),
                Edit("crossover_impl", "layer_ratio = sp.simplify(layer_total.subs(n, 4000) / layer_total.subs(n, 1000))",
                     "layer_ratio = layer_total.subs(n, 4000) / layer_total.subs(n, 1000)"),
                Edit("slope_impl", "    slope, _ = np.polyfit(np.log(ns), np.log(costs), 1)\n"
                     "    return float(slope)",
                     "    x = np.log10(np.asarray(ns, dtype=float))\n"
                     "    y = np.log10(np.asarray(costs, dtype=float))\n"
                     "    A = np.stack([x, np.ones_like(x)], axis=1)\n"
                     "    coef, *_ = np.linalg.lstsq(A, y, rcond=None)\n"
                     "    return coef[0]"),
                Edit("kv_impl", _KV,
                     "    per_value = {'float16': 2, 'float32': 4, 'float64': 8}[dtype]\n"
                     "    keys = values = n * n_layers * d_model * per_value\n"
                     "    return keys + values"),
                Edit("tokens_impl", _TOKENS, "    return len(cl100k.encode_ordinary(text))"),
                Edit("multipliers_impl", _ATTENTION,
                     'attention_zh = cost_ratio(en_tokens, count_tokens(texts["zh"]))\n'
                     'attention_mixed = cost_ratio(en_tokens, count_tokens(texts["mixed"]))'),
            )),
    Variant("numpy_ints_timeit_cov",
            "手算写成加法与求和、NumPy int64、timeit 计时、协方差公式求斜率、sp.solve 解比值、"
            "token 数存进字典（正确的另一种写法）",
            edits=(
                _hand("2 + 2", "sum(1000 for query in range(1000))", "4000 * 4000", "entries_4000 / entries_1000"),
                Edit("table_impl", "    return n * n\n", "    return np.int64(n) ** 2\n"),
                Edit("ratio_impl", "    return (n_to / n_from) ** 2", "    return n_to**2 / n_from**2"),
                Edit("flops_impl", "    n, d = int(n), int(d)", "    n, d = np.int64(n), np.int64(d)"),
                Edit("crossover_impl", "crossover_length = sp.solve(sp.Eq(quadratic_part, linear_part), n)[0]",
                     "crossover_length = sp.solve(quadratic_part / linear_part - 1, n)[0]"),
                Edit("slope_impl", "    slope, _ = np.polyfit(np.log(ns), np.log(costs), 1)\n"
                     "    return float(slope)",
                     "    x, y = np.log(ns), np.log(costs)\n"
                     "    return np.cov(x, y)[0, 1] / np.var(x, ddof=1)"),
                Edit("measure_impl", "        best = np.inf\n"
                     "        for _ in range(repeats):\n"
                     "            start = time.perf_counter()\n"
                     "            attention(Q, K, V)\n"
                     "            best = min(best, time.perf_counter() - start)\n"
                     "        times.append(best)",
                     "        timer = timeit.Timer(lambda: attention(Q, K, V))\n"
                     "        times.append(min(timer.repeat(repeat=repeats, number=1)))"),
                Edit("measure_impl", "    times = []", "    import timeit\n    times = []"),
                Edit("kv_impl", _KV, "    return np.int64(2) * n * n_layers * d_model * np.dtype(dtype).itemsize"),
                Edit("tokens_impl", _TOKENS, "    return len(cl100k.encode(text, disallowed_special=()))"),
                Edit("multipliers_impl", 'en_tokens = count_tokens(texts["en"])\n' + _P + "\n" + _ATTENTION,
                     "counts = {name: count_tokens(text) for name, text in texts.items()}\n"
                     'p_zh, p_mixed = (np.float32(counts[k]) / np.float32(counts["en"]) for k in ("zh", "mixed"))\n'
                     "attention_zh, attention_mixed = p_zh * p_zh, p_mixed * p_mixed"),
            )),
]

#: The core's named mistakes: each hand step, each function, the tokens.
_CORE_MISTAKES = [
    Variant("hand_count_pairs", "手算时只数无序的位置对 n(n+1)/2（倍数约 15.99）",
            edits=(_hand("2 * 3 // 2", "1000 * 1001 // 2", "4000 * 4001 // 2", "entries_4000 / entries_1000"),),
            loses=frozenset({"test_entries_2", "test_entries_1000", "test_table_ratio"}),
            feedback=(SCORES_PAIRS.label,), visible=False),
    Variant("hand_count_linear", "手算时以为一个 token 一个分数（三步都错）",
            edits=(_hand("2", "1000", "4000", "entries_4000 / entries_1000"),),
            loses=frozenset({"test_entries_2", "test_entries_1000", "test_table_ratio"}),
            feedback=(COUNT_LINEAR.label, RATIO_LINEAR.label)),
    Variant("hand_ratio_linear", "手算的分数个数对，倍数却照搬 token 数的 4 倍",
            edits=(_hand("2 * 2", "1000 * 1000", "4000 * 4000", "4000 / 1000"),),
            loses=frozenset({"test_table_ratio"}), feedback=(RATIO_LINEAR.label,)),
    Variant("hand_ratio_reversed", "手算的倍数写成了 原来的 / 新的",
            edits=(_hand("2 * 2", "1000 * 1000", "4000 * 4000", "entries_1000 / entries_4000"),),
            loses=frozenset({"test_table_ratio"}), feedback=(RATIO_REVERSED.label,)),
    Variant("ratio_linear", "cost_ratio 返回 n_to / n_from（线性思维）",
            edits=(Edit("ratio_impl", "    return (n_to / n_from) ** 2", "    return n_to / n_from"),),
            loses=frozenset({"test_cost_ratio"}), feedback=(RATIO_LINEAR.label,)),
    Variant("ratio_cubic", "cost_ratio 返回 (n_to / n_from)³",
            edits=(Edit("ratio_impl", "    return (n_to / n_from) ** 2", "    return (n_to / n_from) ** 3"),),
            loses=frozenset({"test_cost_ratio"}), feedback=(RATIO_CUBIC.label,)),
    Variant("entries_pairs", "score_table_entries 只数无序的位置对 n(n+1)/2",
            edits=(Edit("table_impl", "    return n * n\n", "    return n * (n + 1) // 2\n"),),
            loses=frozenset({"test_score_table_entries"}), feedback=(SCORES_PAIRS.label,)),
    Variant("int32_overflow", "score_table_entries 用 np.int32 计算，n 很大时溢出",
            edits=(Edit("table_impl", "    return n * n\n", "    n = np.int32(n)\n    return n * n\n"),),
            loses=frozenset({"test_score_table_entries"}), feedback=(INT32_OVERFLOW.label,)),
    Variant("bytes_as_entries", "score_table_bytes 返回元素个数而不是字节数",
            edits=(Edit("bytes_impl", "    return n * n * np.dtype(dtype).itemsize", "    return n * n"),),
            loses=frozenset({"test_score_table_bytes"}), feedback=(BYTES_AS_ENTRIES.label,)),
    Variant("chars_as_tokens", "count_tokens 返回字数 len(text)（token 倍数和打分表的倍数跟着错）",
            edits=(Edit("tokens_impl", _TOKENS, "    return len(text)"),),
            loses=frozenset({"test_count_tokens", "test_token_multipliers", "test_attention_multipliers"}),
            feedback=(CHARS_AS_TOKENS.label,)),
    Variant("bytes_as_tokens", "count_tokens 返回 UTF-8 字节数（token 倍数和打分表的倍数跟着错）",
            edits=(Edit("tokens_impl", _TOKENS, "    return len(text.encode('utf-8'))"),),
            loses=frozenset({"test_count_tokens", "test_token_multipliers", "test_attention_multipliers"}),
            feedback=(BYTES_AS_TOKENS.label,)),
    Variant("words_as_tokens", "count_tokens 按空格切词 len(text.split())（token 倍数和打分表的倍数跟着错）",
            edits=(Edit("tokens_impl", _TOKENS, "    return len(text.split())"),),
            loses=frozenset({"test_count_tokens", "test_token_multipliers", "test_attention_multipliers"}),
            feedback=(WORDS_AS_TOKENS.label,)),
    Variant("multipliers_by_chars", "count_tokens 对了，token 倍数却按字数之比算",
            edits=(Edit("multipliers_impl", _P,
                        'p_zh = len(texts["zh"]) / len(texts["en"])\n'
                        'p_mixed = len(texts["mixed"]) / len(texts["en"])'),),
            loses=frozenset({"test_token_multipliers", "test_attention_multipliers"}),
            feedback=(CHARS_AS_TOKENS.label,)),
    Variant("multipliers_fixed", "token_multiplier、attention_multiplier 只对 texts 里的两段写出答案（返回定值）",
            edits=(Edit("multipliers_impl", "    return count_tokens(text) / count_tokens(english)",
                        '    return count_tokens(texts["zh"]) / count_tokens(texts["en"])'),
                   Edit("multipliers_impl", "    return token_multiplier(text, english) ** 2",
                        '    return (count_tokens(texts["zh"]) / count_tokens(texts["en"])) ** 2')),
            loses=frozenset({"test_token_multipliers", "test_attention_multipliers"}), visible=False),
    Variant("attention_unsquared", "打分表的倍数直接用 token 倍数（没有平方）",
            edits=(Edit("multipliers_impl", _ATTENTION, "attention_zh = p_zh\nattention_mixed = p_mixed"),
                   Edit("multipliers_impl", "    return token_multiplier(text, english) ** 2",
                        "    return count_tokens(text) / count_tokens(english)")),
            loses=frozenset({"test_attention_multipliers"}), feedback=(RATIO_LINEAR.label,)),
]

#: The 拓展's named mistakes (a whole layer, the KV cache, timing).
_EXTENSION_MISTAKES = [
    Variant("layer_missing_ffn", "layer_flops 漏算了前馈层",
            edits=(Edit("flops_impl", "    feed_forward = 2 * n * d * (4 * d) + 2 * n * (4 * d) * d",
                        "    feed_forward = 0"),),
            loses=frozenset({"test_layer_flops"}), feedback=(LAYER_NO_FFN.label,)),
    Variant("flops_n_d_squared", "layer_flops 的打分项写成 2·n·d²",
            edits=(Edit("flops_impl", "    scores = 2 * n * n * d", "    scores = 2 * n * d * d"),),
            loses=frozenset({"test_layer_flops"}), feedback=(LAYER_ND2.label,)),
    Variant("crossover_attention_only", "SymPy 模型只有 Q/K/V 投影和打分（交叉点 3d/2，倍数也跟着错）",
            edits=(Edit("crossover_impl", _LINEAR_PART, "linear_part = 3 * 2 * n * d**2"),),
            loses=frozenset({"test_crossover_length", "test_layer_ratio"}),
            feedback=(LAYER_ATTENTION_ONLY.label,)),
    Variant("layer_ratio_table_only", "以为一整层也变成 16 倍（layer_ratio = 16）",
            edits=(Edit("crossover_impl",
                        "layer_ratio = sp.simplify(layer_total.subs(n, 4000) / layer_total.subs(n, 1000))",
                        "layer_ratio = sp.Integer(16)"),),
            loses=frozenset({"test_layer_ratio"}), feedback=(RATIO_TABLE_ONLY.label,)),
    Variant("kv_cache_quadratic", "kv_cache_bytes 按 n² 计算",
            edits=(Edit("kv_impl", "2 * int(n) * int(n_layers)", "2 * int(n) ** 2 * int(n_layers)"),),
            loses=frozenset({"test_kv_cache_bytes"}), feedback=(KV_QUADRATIC.label,)),
    Variant("loglog_linear_axes", "loglog_slope 在线性坐标上拟合",
            edits=(Edit("slope_impl", "np.polyfit(np.log(ns), np.log(costs), 1)",
                        "np.polyfit(ns, costs, 1)"),),
            loses=frozenset({"test_loglog_slope"}), feedback=(LOGLOG_LINEAR_FIT.label,)),
    Variant("timer_without_call", "计时的两次读数之间没有调用 attention",
            edits=(Edit("measure_impl", "            start = time.perf_counter()\n"
                        "            attention(Q, K, V)\n",
                        "            attention(Q, K, V)\n"
                        "            start = time.perf_counter()\n"),),
            loses=frozenset({"test_measure_attention_seconds"}), feedback=(TIMER_EMPTY.label,)),
]

#: A core mistake first and last: the engine and nbgrader tests grade the first and the last
#: mistake of each assignment, and the 拓展 are ungraded practice by default (their cells
#: lose no scored points there).
MISTAKES = _CORE_MISTAKES[:-1] + _EXTENSION_MISTAKES + _CORE_MISTAKES[-1:]
