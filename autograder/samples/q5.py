"""Sample students of q5: correct alternatives and named mistakes.

Each mistake is the source solution with ``edits`` applied; it must lose exactly the
cells in ``loses`` and its feedback must name ``feedback``. Host-side only: nothing
here is loaded where student code runs."""

from __future__ import annotations

from ..bank.q5 import (
    BYTES_AS_ENTRIES,
    FLOPS_ND2,
    INT32_OVERFLOW,
    LOGLOG_LINEAR_FIT,
    RATIO_CUBIC,
    RATIO_LINEAR,
    UTF8_AS_CHARS,
)
from ..variants import Edit, Variant

ALTERNATIVES = [
    Variant("itemsize_table_lstsq_loop", "字节数查表、lstsq 拟合斜率、循环数 UTF-8 字节（正确的另一种写法）",
            edits=(
                Edit("table_impl", "    return n * n * np.dtype(dtype).itemsize",
                     "    table = {'float16': 2, 'float32': 4, 'float64': 8}\n"
                     "    return table[np.dtype(dtype).name] * n ** 2"),
                Edit("slope_impl", "    slope, _ = np.polyfit(np.log(ns), np.log(costs), 1)\n"
                     "    return float(slope)",
                     "    x = np.log10(np.asarray(ns, dtype=float))\n"
                     "    y = np.log10(np.asarray(costs, dtype=float))\n"
                     "    A = np.stack([x, np.ones_like(x)], axis=1)\n"
                     "    coef, *_ = np.linalg.lstsq(A, y, rcond=None)\n"
                     "    return coef[0]"),
                Edit("tokens_impl", "    return len(text.encode(\"utf-8\"))",
                     "    total = 0\n"
                     "    for ch in text:\n"
                     "        cp = ord(ch)\n"
                     "        total += 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4\n"
                     "    return total"),
                Edit("tokens_impl", "    return len(text)", "    return sum(1 for _ in text)"),
            )),
    Variant("numpy_ints_timeit_cov", "NumPy int64、timeit 计时、用协方差公式求斜率（正确的另一种写法）",
            edits=(
                Edit("table_impl", "    return n * n\n", "    return np.int64(n) ** 2\n"),
                Edit("ratio_impl", "    return (n_to / n_from) ** 2", "    return n_to**2 / n_from**2"),
                Edit("flops_impl", "    projections = 2 * n * d_model * d_k * 2 + 2 * n * d_model * d_v\n"
                     "    scores = 2 * n * n * d_k\n"
                     "    weighted_sum = 2 * n * n * d_v\n"
                     "    return projections + scores + weighted_sum",
                     "    n, d_model, d_k, d_v = (np.int64(v) for v in (n, d_model, d_k, d_v))\n"
                     "    return 2 * (n * d_model * (2 * d_k + d_v) + n * n * (d_k + d_v))"),
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
    Variant("flops_n_d_squared", "attention_flops 的打分项写成 2·n·d_k²",
            edits=(Edit("flops_impl", "    scores = 2 * n * n * d_k", "    scores = 2 * n * d_k * d_k"),),
            loses=frozenset({"test_attention_flops"}), feedback=(FLOPS_ND2.label,)),
    Variant("int32_overflow", "score_table_entries 用 np.int32 计算，n 很大时溢出",
            edits=(Edit("table_impl", "    return n * n\n", "    n = np.int32(n)\n    return n * n\n"),),
            loses=frozenset({"test_score_table_entries"}), feedback=(INT32_OVERFLOW.label,)),
    Variant("utf8_bytes_as_chars", "token_count_utf8_bytes 返回 len(text)",
            edits=(Edit("tokens_impl", "    return len(text.encode(\"utf-8\"))", "    return len(text)"),),
            loses=frozenset({"test_token_counts"}), feedback=(UTF8_AS_CHARS.label,)),
    Variant("loglog_linear_axes", "loglog_slope 在线性坐标上拟合",
            edits=(Edit("slope_impl", "np.polyfit(np.log(ns), np.log(costs), 1)",
                        "np.polyfit(ns, costs, 1)"),),
            loses=frozenset({"test_loglog_slope"}), feedback=(LOGLOG_LINEAR_FIT.label,)),
]
