"""q3's short context task (issue 30: the central idea beyond q1): ``output_changed`` says
whether a word's output differs between two sentences, computed with the student's own
``self_attention``, graded on random sentence pairs whose answer is drawn:

- another context, or one more copy of another word (the 人咬人 case): True;
- the same words in another order (permutation-equivariance), or every word repeated the
  same number of times (attention sees proportions, not counts): False.

A typed-in answer therefore loses the cell; the notebook computes ``repeat_matters`` with it.
"""

from __future__ import annotations

import numpy as np

from . import Context, check
from .lib import misconceptions as mc
from .lib.compare import as_bool, fail
from .q1_context import own_changed, own_runs

CONTEXT_COUNTS = mc.register(
    "q3_context_counts", "以为输出看的是次数或顺序",
    "一个词的输出由这句话里各词所占的比例决定：换了别的词、或只多了某个词的一份，输出就变；"
    "同样的词换了顺序，或每个词都重复同样的次数，输出不变。")

KINDS = {"other": True, "repeat_one": True, "shuffled": False, "repeat_all": False}


def _pair(ctx: Context, kind: str) -> tuple[np.ndarray, int, np.ndarray, int]:
    n, d = int(ctx.rng.integers(2, 5)), int(ctx.rng.integers(2, 5))
    A = ctx.randn(n, d)
    i = int(ctx.rng.integers(n))
    if kind == "other":
        B = ctx.randn(n + 1, d) * 1.5
        j = int(ctx.rng.integers(n + 1))
        B[j] = A[i]
        return A, i, B, j
    if kind == "repeat_one":
        k = int(ctx.rng.choice([m for m in range(n) if m != i]))
        return A, i, np.vstack([A, A[k:k + 1]]), i
    if kind == "shuffled":
        perm = np.roll(np.arange(n), int(ctx.rng.integers(1, n)))
        return A, i, A[perm], int(np.argsort(perm)[i])
    return A, i, np.vstack([A, A]), i + n * int(ctx.rng.integers(0, 2))


@check("q3.output_changed", "output_changed：同一个词在两句里的输出是否不同（随机句子：换词、重复、换序）",
       context=("self_attention",))
def output_changed(ctx: Context, *, output_changed, self_attention) -> None:
    kinds = list(KINDS) + ["shuffled", "repeat_one"]
    for k in ctx.rng.permutation(len(kinds)):
        kind = kinds[k]
        A, i, B, j = _pair(ctx, kind)
        W_q, W_k, W_v = (ctx.randn(A.shape[1], A.shape[1]) for _ in range(3))
        (_, own_a), (_, own_b) = own_runs(ctx, self_attention, [(A, W_q, W_k, W_v), (B, W_q, W_k, W_v)])
        own = own_changed(own_a, i, own_b, j, KINDS[kind])
        what = f"output_changed(X_a, {i}, X_b, {j}, W_q, W_k, W_v)（两句 {len(A)} 个与 {len(B)} 个词）"
        got = as_bool(ctx.call(output_changed, A, i, B, j, W_q, W_k, W_v, what=what), what)
        if got not in (KINDS[kind], own):
            fail(f"{what} 返回了 {got}，不对。\n可能的原因：{CONTEXT_COUNTS.describe()}")
