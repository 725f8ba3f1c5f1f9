"""q1's context task: the same "苹果" vector in two tiny sentences (lecture 9's ⭐ idea).

Sentence A is 苹果 / 公司 / 发布 ("苹果公司发布了新款"), sentence B is 咬 / 一口 / 苹果
("他咬了一口苹果"); 苹果 has the same 2-D embedding in both, W_q = W_k = W_v = I. The two
checks grade 苹果's row of weights and its output in each sentence. They are marked like
the hand steps: the exact value passes, and so does the value the student's own
``self_attention`` gives (a wrong function already loses its own cells). No random inputs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import Context, check
from .lib import misconceptions as mc
from .lib import reference as ref
from .lib.compare import CheckFailed, as_array, fail, fmt

#: Dimension 1 leans "科技/商业", dimension 2 "食物/动作"; 苹果 sits between them.
EMBEDDING: dict[str, tuple[float, float]] = {
    "苹果": (1.0, 1.0), "公司": (3.0, 0.0), "发布": (1.0, 0.0), "咬": (0.0, 3.0), "一口": (0.0, 1.0)}
#: Sentence name -> its words in order; 苹果 is row APPLE_ROW[name].
SENTENCES: dict[str, tuple[str, ...]] = {"A": ("苹果", "公司", "发布"), "B": ("咬", "一口", "苹果")}
APPLE_ROW = {name: words.index("苹果") for name, words in SENTENCES.items()}
TOL = 1e-6
Pair = tuple[np.ndarray, np.ndarray]

STATIC_EMBEDDING = mc.register(
    "q1_static_embedding", "以为“苹果”的表示与句子无关",
    "两句里“苹果”查出来的嵌入相同，但它的输出是按这句话里各词的 Key 现算出的权重，"
    "对这句话里各词的 Value 加权求和：每句要取这句自己算出的“苹果”的输出。")


def sentence(name: str) -> np.ndarray:
    """The embeddings of sentence ``name`` ("A" or "B"), one row per word."""
    return np.array([EMBEDDING[w] for w in SENTENCES[name]])


def reference(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(output, weights) of sentence ``name`` with W_q = W_k = W_v = I."""
    eye = np.eye(2)
    return ref.self_attention(sentence(name), eye, eye, eye)


def _own(ctx: Context, self_attention: object, name: str) -> Pair | None:
    """What the student's ``self_attention`` gives for sentence ``name``, if it runs."""
    eye = np.eye(2)
    what = f"self_attention(X_{name}, I, I, I)"
    try:
        result = ctx.call(self_attention, sentence(name), eye, eye, eye, what=what)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            return None
        out, weights = as_array(result[0], what), as_array(result[1], what)
    except CheckFailed:
        return None
    n = len(SENTENCES[name])
    return (out, weights) if out.shape == (n, 2) and weights.shape == (n, n) else None


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=TOL, atol=TOL))


def _row_hint(arr: np.ndarray, rows: np.ndarray, name: str) -> str:
    for i, row in enumerate(rows):
        if i != APPLE_ROW[name] and _close(arr, row):
            return (f"\n可能的原因：这是句子 {name} 里“{SENTENCES[name][i]}”那个词的结果，"
                    "题目要的是“苹果”的。")
    return ""


def _grade(got: object, what: str, name: str, pick: Callable[[np.ndarray, np.ndarray], np.ndarray],
           own: Pair | None, diagnose: Callable[[np.ndarray], str]) -> None:
    """Pass when ``got`` is ``pick(output, weights)`` of sentence ``name`` by the reference
    or by the student's own function (``own``); else say what is wrong with it."""
    expected = pick(*reference(name))
    arr = as_array(got, what)
    if arr.shape != expected.shape:
        fail(f"{what} 应是长度 {expected.shape[0]} 的数组，得到的形状是 {arr.shape}。")
    mine = None if own is None else pick(*own)
    if _close(arr, expected) or (mine is not None and _close(arr, mine)):
        return
    cause = diagnose(arr)
    if not cause:
        both = [reference(name)] + ([own] if own is not None else [])
        for out, weights in both:
            cause = cause or _row_hint(arr, out if expected.shape == (2,) else weights, name)
    fail(f"{what} = {fmt(arr)} 不对：它既不等于精确值，也不是你自己的 self_attention "
         f"在这句上算出的结果（容差 {TOL:g}）。{cause}")


def _row_of(got: object, table: object, what: str, table_name: str) -> None:
    """The visible assert's consistency, decided in the host on the student's values as
    data: the answer is one row of the student's own table (``weights_A`` …)."""
    try:
        arr, rows = as_array(got, ""), as_array(table, "")
    except CheckFailed:
        arr, rows = np.zeros(0), np.zeros((0, 0))
    if rows.ndim != 2 or not any(r.shape == arr.shape and np.allclose(arr, r) for r in rows):
        fail(f"{what} 应是你的 {table_name} 的某一行（每一行是一个词对应的结果）。")


@check("q1.apple_weights", "“苹果”在两句里对各词的权重", context=("self_attention", "weights_A", "weights_B"))
def apple_weights(ctx: Context, *, self_attention, apple_weights_A, apple_weights_B, weights_A,
                  weights_B) -> None:
    for name, got in (("A", apple_weights_A), ("B", apple_weights_B)):
        own = _own(ctx, self_attention, name)
        row = APPLE_ROW[name]
        columns = [reference(name)[1][:, row]] + ([own[1][:, row]] if own is not None else [])

        def transposed(arr, columns=columns):
            if any(_close(arr, c) for c in columns):
                return f"\n可能的原因：{mc.CATALOG['transposed_weights'].describe()}"
            return ""

        _grade(got, f"apple_weights_{name}", name, lambda out, w, row=row: w[row], own, transposed)
    _row_of(apple_weights_A, weights_A, "apple_weights_A", "weights_A")
    _row_of(apple_weights_B, weights_B, "apple_weights_B", "weights_B")


@check("q1.apple_outputs", "“苹果”在两句里的输出", context=("self_attention", "out_A", "out_B"))
def apple_outputs(ctx: Context, *, self_attention, apple_A, apple_B, out_A, out_B) -> None:
    values = {"A": apple_A, "B": apple_B}
    for name, other in (("A", "B"), ("B", "A")):
        own = _own(ctx, self_attention, name)
        row = APPLE_ROW[name]
        static = [np.array(EMBEDDING["苹果"]), reference(other)[0][APPLE_ROW[other]]]

        def diagnose(arr, static=static, other=other):
            try:
                theirs = as_array(values[other], f"apple_{other}")
            except CheckFailed:
                theirs = None
            if any(_close(arr, s) for s in static) or (theirs is not None and _close(arr, theirs)):
                return f"\n可能的原因：{STATIC_EMBEDDING.describe()}"
            return ""

        _grade(values[name], f"apple_{name}", name, lambda out, w, row=row: out[row], own, diagnose)
    _row_of(apple_A, out_A, "apple_A", "out_A")
    _row_of(apple_B, out_B, "apple_B", "out_B")
