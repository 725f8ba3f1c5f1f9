"""q1's central idea, graded on random inputs (issue 30): the same word gets a different
output in a different context (lecture 9's ⭐), and the same weights can give different
outputs (the lecture's "weights are not an explanation", lecture 31).

Both are functions the student writes with their own ``self_attention``, so a conclusion
typed in (``return True``) earns nothing: each check draws cases where the answer is
True and cases where it is False. A word's context changes nothing when the other
sentence is the same words in another order (self-attention is permutation-equivariant:
q3), or the same sentence; the outputs agree when the two W_v are the same.
"""

from __future__ import annotations

import numpy as np

from . import Context, check
from .lib import misconceptions as mc
from .lib import reference as ref
from .lib.compare import CheckFailed, as_array, as_bool, fail

CONTEXT_IGNORED = mc.register(
    "q1_context_ignored", "以为同一个词的输出与上下文无关（或总是有关）",
    "同一个词的嵌入相同，输出却由这句话里各词的 Key 现算出的权重决定：换了上下文，输出一般就变了；"
    "上下文里的词只是换了顺序（或完全相同）时，输出不变。")
WEIGHTS_EXPLAIN = mc.register(
    "q1_weights_explain", "以为权重相同输出就相同",
    "权重只由 Q、K 决定；W_v 不同，同样的权重混合的是不同的 Value，输出就不同。"
    "所以只看权重（热力图），看不出这一层拿走了什么。")


def _sentence_pair(ctx: Context, kind: str) -> tuple[np.ndarray, int, np.ndarray, int]:
    """Two sentences sharing one word: ``kind`` "other" (a different context), "shuffled"
    (the same words in another order) or "same"."""
    n, d = int(ctx.rng.integers(3, 6)), int(ctx.rng.integers(2, 5))
    A = ctx.randn(n, d)
    i = int(ctx.rng.integers(n))
    if kind == "other":
        B = ctx.randn(n + int(ctx.rng.integers(1, 3)), d) * 1.5  # another length: a real context
        j = int(ctx.rng.integers(len(B)))
        B[j] = A[i]
    elif kind == "shuffled":
        perm = ctx.rng.permutation(n)
        while (perm == np.arange(n)).all():
            perm = ctx.rng.permutation(n)
        B, j = A[perm], int(np.argsort(perm)[i])
    else:
        B, j = A.copy(), i
    return A, i, B, j


def _projections(ctx: Context, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return tuple(ctx.randn(d, d) for _ in range(3))


def own_runs(ctx: Context, self_attention, cases) -> list[tuple[tuple[np.ndarray, np.ndarray], ...]]:
    """Each case's (output, weights) pairs by the reference and, when it works, by the
    student's own ``self_attention`` (a wrong one already loses its own cells; an answer
    that follows from it is carried forward)."""
    out = []
    for args in cases:
        pair = ref.self_attention(*args)
        try:
            got = ctx.call(self_attention, *args, what="self_attention(X, W_q, W_k, W_v)")
            own = (as_array(got[0], ""), as_array(got[1], ""))
        except (CheckFailed, TypeError, IndexError, KeyError):
            own = pair
        out.append((pair, own))
    return out


def same_rows(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=0, atol=1e-6))


def own_changed(own_a: tuple, i: int, own_b: tuple, j: int, default: bool) -> bool:
    """Whether the student's own outputs of word i (sentence a) and word j (sentence b)
    differ; ``default`` when those outputs are not tables with such rows."""
    out_a, out_b = own_a[0], own_b[0]
    if out_a.ndim != 2 or out_b.ndim != 2 or i >= len(out_a) or j >= len(out_b):
        return default
    return not same_rows(out_a[i], out_b[j])


@check("q1.context_changes", "word_output_changed：同一个词，换了上下文，输出变不变（随机句子）",
       context=("self_attention",))
def context_changes(ctx: Context, *, word_output_changed, apple_changed, self_attention) -> None:
    if not as_bool(apple_changed, "apple_changed"):
        fail(f"apple_changed 是 False，可“苹果”在两句里的输出不同。\n可能的原因：{CONTEXT_IGNORED.describe()}")
    kinds = ["other", "shuffled", "same", "other", "shuffled"]
    for k in ctx.rng.permutation(len(kinds)):
        A, i, B, j = _sentence_pair(ctx, kinds[k])
        W_q, W_k, W_v = _projections(ctx, A.shape[1])
        (_, own_a), (_, own_b) = own_runs(ctx, self_attention, [(A, W_q, W_k, W_v), (B, W_q, W_k, W_v)])
        expected = kinds[k] == "other"
        own_expected = own_changed(own_a, i, own_b, j, expected)
        what = (f"word_output_changed(X_a, {i}, X_b, {j}, W_q, W_k, W_v)（两句 {len(A)} 个与 {len(B)} 个词，"
                f"{'上下文不同' if expected else '上下文里的词相同' + ('，顺序不同' if kinds[k] == 'shuffled' else '')}）")
        got = as_bool(ctx.call(word_output_changed, A, i, B, j, W_q, W_k, W_v, what=what), what)
        if got not in (expected, own_expected):
            fail(f"{what} 返回了 {got}，不对。\n可能的原因：{CONTEXT_IGNORED.describe()}")


@check("q1.same_weights", "same_weights_same_output：权重相同，输出就相同吗（随机输入）",
       context=("self_attention",))
def same_weights(ctx: Context, *, same_weights_same_output, self_attention) -> None:
    cases = [True, False, False]
    for k in ctx.rng.permutation(len(cases)):
        n, d = int(ctx.rng.integers(3, 6)), int(ctx.rng.integers(2, 5))
        X = ctx.randn(n, d)
        W_q, W_k, W_v = _projections(ctx, d)
        W_v2 = W_v.copy() if cases[k] else W_v * float(ctx.rng.uniform(1.5, 3.0)) + ctx.randn(d, d)
        what = ("same_weights_same_output(X, W_q, W_k, W_v_a, W_v_b)（"
                + ("两个 W_v 相同）" if cases[k] else "两个 W_v 不同）"))
        got = ctx.call(same_weights_same_output, X, W_q, W_k, W_v, W_v2, what=what)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            fail(f"{what} 应返回二元组 (weights_same, outputs_same)，得到的是 {type(got).__name__}。")
        w_same, o_same = as_bool(got[0], f"{what} 的 weights_same"), as_bool(got[1], f"{what} 的 outputs_same")
        (_, own_a), (_, own_b) = own_runs(ctx, self_attention, [(X, W_q, W_k, W_v), (X, W_q, W_k, W_v2)])
        if (w_same, o_same) == (same_rows(own_a[1], own_b[1]), same_rows(own_a[0], own_b[0])):
            continue  # what the student's own self_attention gives (right or wrong: its own cells)
        if not w_same:
            fail(f"{what} 说两次的权重不同。\n可能的原因：{mc.CATALOG['weights_depend_on_v'].describe()}")
        if o_same != cases[k]:
            fail(f"{what} 说两次的输出{'相同' if o_same else '不同'}，不对。"
                 + ("" if cases[k] else f"\n可能的原因：{WEIGHTS_EXPLAIN.describe()}"))
