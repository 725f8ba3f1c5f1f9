"""Sample students of q5: correct alternatives and named mistakes.

Each mistake is the source solution with ``edits`` applied; it must lose exactly the
cells in ``loses`` and its feedback must name ``feedback``. Host-side only: nothing
here is loaded where student code runs."""

from __future__ import annotations

from ..bank.q5 import (
    BYTES_AS_ENTRIES,
    CHARS_AS_TOKENS,
    INT32_OVERFLOW,
    KV_QUADRATIC,
    LAYER_ATTENTION_ONLY,
    LAYER_ND2,
    LAYER_NO_FFN,
    LOGLOG_LINEAR_FIT,
    RATIO_CUBIC,
    RATIO_LINEAR,
    RATIO_TABLE_ONLY,
    TIMER_EMPTY,
    WORDS_AS_TOKENS,
)
from ..variants import Edit, Variant

_LINEAR_PART = "linear_part = 4 * 2 * n * d**2 + 2 * (2 * n * d * 4 * d)"
_TOKENS = "    return len(cl100k.encode(text))"
_KV = "    return 2 * int(n) * int(n_layers) * int(d_model) * np.dtype(dtype).itemsize"

ALTERNATIVES = [
    Variant("itemsize_table_lstsq_floats", "字节数查表、一行公式、浮点系数的 SymPy、lstsq 拟合斜率（正确的另一种写法）",
            edits=(
                Edit("table_impl", "    return n * n * np.dtype(dtype).itemsize",
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
            )),
    Variant("numpy_ints_timeit_cov", "NumPy int64、timeit 计时、协方差公式求斜率、sp.solve 解比值（正确的另一种写法）",
            edits=(
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
            )),
]

MISTAKES = [
    Variant("ratio_linear", "cost_ratio 返回 n_to / n_from（线性思维）",
            edits=(Edit("ratio_impl", "    return (n_to / n_from) ** 2", "    return n_to / n_from"),),
            loses=frozenset({"test_cost_ratio"}), feedback=(RATIO_LINEAR.label,)),
    Variant("ratio_cubic", "cost_ratio 返回 (n_to / n_from)³",
            edits=(Edit("ratio_impl", "    return (n_to / n_from) ** 2", "    return (n_to / n_from) ** 3"),),
            loses=frozenset({"test_cost_ratio"}), feedback=(RATIO_CUBIC.label,)),
    Variant("bytes_as_entries", "score_table_bytes 返回元素个数而不是字节数",
            edits=(Edit("table_impl", "    return n * n * np.dtype(dtype).itemsize", "    return n * n"),),
            loses=frozenset({"test_score_table_bytes"}), feedback=(BYTES_AS_ENTRIES.label,)),
    Variant("int32_overflow", "score_table_entries 用 np.int32 计算，n 很大时溢出",
            edits=(Edit("table_impl", "    return n * n\n", "    n = np.int32(n)\n    return n * n\n"),),
            loses=frozenset({"test_score_table_entries"}), feedback=(INT32_OVERFLOW.label,)),
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
    Variant("kv_cache_quadratic", "kv_cache_bytes 按 n² 计算",
            edits=(Edit("kv_impl", "2 * int(n) * int(n_layers)", "2 * int(n) ** 2 * int(n_layers)"),),
            loses=frozenset({"test_kv_cache_bytes"}), feedback=(KV_QUADRATIC.label,)),
    Variant("chars_as_tokens", "count_tokens 返回字数 len(text)",
            edits=(Edit("tokens_impl", _TOKENS, "    return len(text)"),),
            loses=frozenset({"test_count_tokens"}), feedback=(CHARS_AS_TOKENS.label,)),
    Variant("words_as_tokens", "count_tokens 按空格切词 len(text.split())",
            edits=(Edit("tokens_impl", _TOKENS, "    return len(text.split())"),),
            loses=frozenset({"test_count_tokens"}), feedback=(WORDS_AS_TOKENS.label,)),
]
