"""q1's hand calculation: the lecture's six steps for position 1 with W_v = 3I, one check each.

The steps are the lecture's own (score, scaled score, exp, sum, weight, output). After the
first, each step is marked the way a teacher marks working on paper, "error carried
forward": a value that follows from the student's *own* previous value by the lecture's
rule passes, and so does the exact value. One slip therefore costs its own step (and the
answers that rest on it), not every step after it; and each step names its own
misconception. No check draws random inputs: the hand example is fixed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import Context, check
from .lib import misconceptions as mc
from .lib import reference as ref
from .lib.compare import as_array, fail, fmt
from .lib.handsteps import TOL, Diagnosis, cause, chain, close, earlier, judge

#: W_v = V_SCALE·I in the thinking question (the lecture's example has 2I).
V_SCALE = 3.0
#: Marks allow the lecture's rounding to 3 decimals (relative and absolute).

_X = ref.HAND_X
V_3I, V_2I = V_SCALE * _X, 2.0 * _X  # V = X·W_v; X = I here, so V = W_v
# scores [Q₁·K₁, Q₁·K₂] with Q = K = X
EXACT_SCORES, EXACT_SCALED, EXACT_EXPS, EXACT_TOTAL, EXACT_WEIGHTS, EXACT_OUTPUT = chain(
    _X @ _X[0], _X.shape[1], V_3I)

SCORE_USES_V = mc.register(
    "q1_score_uses_v", "打分用了 Value",
    "score(1, j) 是位置 1 的 Query 与位置 j 的 Key 的点积 Q₁·K_j；你的分数是 Q₁ 与 V_j 的点积。"
    "W_v 只用来算 V，不进入打分。")
EXP_OF_UNSCALED = mc.register(
    "q1_exp_of_unscaled", "对缩放前的打分取了 exp",
    "softmax 的分子是缩放之后的分数的 exp，即 e^(score/√d_k)，不是 e^score。")
SUM_ONE_TERM = mc.register(
    "q1_sum_one_term", "总和只加了一项",
    "softmax 的分母是所有位置的 exp 之和；e⁰ = 1 也是一项，不能漏掉。")
OUTPUT_OLD_V = mc.register(
    "q1_output_old_v", "输出还在用 W_v = 2I 的 V",
    "W_v 换成了 3I，V 要按 V = X·3I 重新算，再用权重对新的 V₁、V₂ 加权求和。")



def _value(got: object, what: str, shape: tuple[int, ...]) -> np.ndarray:
    arr = as_array(got, what)
    if arr.shape != shape:
        kind = "一个数" if shape == () else f"长度 {shape[0]} 的数组"
        fail(f"{what} 应是{kind}，得到的形状是 {arr.shape}。")
    if not np.isfinite(arr).all():
        fail(f"{what} 含有 NaN 或无穷大。")
    return arr


def _step(got: object, what: str, *, exact: np.ndarray, carried: np.ndarray | None,
          source: str, diagnoses: Sequence[Diagnosis] = ()) -> np.ndarray:
    """:func:`.lib.handsteps.judge` on ``got`` read as an array of ``exact``'s shape."""
    arr = _value(got, what, exact.shape)
    judge(arr, what, exact=exact, carried=carried, source=source, diagnoses=diagnoses)
    return arr


@check("q1.hand_scores", "手算第 1 步：打分 scores_1")
def hand_scores(ctx: Context, *, scores_1) -> None:
    uses_v = SCORE_USES_V.describe()
    _step(scores_1, "scores_1", exact=EXACT_SCORES, carried=None, source="",
          diagnoses=[(uses_v, V_3I @ _X[0]), (uses_v, V_2I @ _X[0]),
                     ("这是缩放之后的分数：第 1 步要的是缩放之前的点积。", EXACT_SCALED)])


@check("q1.hand_scaled", "手算第 2 步：缩放 scaled_1", context=("scores_1",))
def hand_scaled(ctx: Context, *, scores_1, scaled_1) -> None:
    prev = earlier(scores_1, (2,))
    base = EXACT_SCORES if prev is None else prev
    _step(scaled_1, "scaled_1", exact=EXACT_SCALED, source="scores_1",
          carried=None if prev is None else prev / np.sqrt(2),
          diagnoses=[(mc.CATALOG["no_scaling"].describe(), base),
                     (mc.CATALOG["divide_by_dk"].describe(), base / 2)])


@check("q1.hand_exp", "手算第 3 步：取指数 exps_1", context=("scores_1", "scaled_1"))
def hand_exp(ctx: Context, *, scores_1, scaled_1, exps_1) -> None:
    arr = _value(exps_1, "exps_1", (2,))
    if (arr <= 0).any():
        fail(f"exps_1 = {fmt(arr)} 里有不是正数的项：e 的任何次方都大于 0（e⁰ = 1）。")
    prev, scores = earlier(scaled_1, (2,)), earlier(scores_1, (2,))
    _step(arr, "exps_1", exact=EXACT_EXPS, source="scaled_1",
          carried=None if prev is None else np.exp(prev),
          diagnoses=[(EXP_OF_UNSCALED.describe(), np.exp(EXACT_SCORES if scores is None else scores))])


@check("q1.hand_sum", "手算第 4 步：求和 total_1", context=("exps_1",))
def hand_sum(ctx: Context, *, exps_1, total_1) -> None:
    prev = earlier(exps_1, (2,))
    base = EXACT_EXPS if prev is None else prev
    one_term = SUM_ONE_TERM.describe()
    _step(total_1, "total_1", exact=EXACT_TOTAL, source="exps_1",
          carried=None if prev is None else np.array(prev.sum()),
          diagnoses=[(one_term, np.array(base[0])), (one_term, np.array(base[1]))])


@check("q1.hand_weights", "手算第 5 步：权重 weights_1", context=("exps_1", "total_1"))
def hand_weights(ctx: Context, *, exps_1, total_1, weights_1) -> None:
    arr = _value(weights_1, "weights_1", (2,))
    exps, total = earlier(exps_1, (2,)), earlier(total_1, ())
    carried = None if exps is None or total is None or total == 0 else exps / total
    base = EXACT_WEIGHTS if carried is None else carried
    scaled_by_v = mc.CATALOG["weights_depend_on_v"].describe()
    diagnoses = [(scaled_by_v, 1.5 * base), (scaled_by_v, V_SCALE * base),
                 ("两个权重写反了：位置 1 对自己的权重对应第一项 exp。", base[::-1])]
    if (arr < -TOL).any() or abs(float(arr.sum()) - 1) > TOL:
        why = cause(arr, [EXACT_WEIGHTS], diagnoses)
        if not why and carried is not None and close(arr, carried):
            why = "\n它与你的 exps_1 / total_1 一致：问题出在前面的 total_1（分母应是所有项 exp 之和）。"
        fail(f"weights_1 = {fmt(arr)} 应非负、加起来等于 1（softmax 的输出），"
             f"它的和是 {float(arr.sum()):.4g}。{why}")
    _step(arr, "weights_1", exact=EXACT_WEIGHTS, carried=carried, source="exps_1 / total_1",
          diagnoses=diagnoses)


@check("q1.hand_output", "手算第 6 步：输出 output_1", context=("weights_1",))
def hand_output(ctx: Context, *, weights_1, output_1) -> None:
    prev = earlier(weights_1, (2,))
    base = EXACT_WEIGHTS if prev is None else prev
    _step(output_1, "output_1", exact=EXACT_OUTPUT, source="weights_1",
          carried=None if prev is None else prev @ V_3I,
          diagnoses=[(OUTPUT_OLD_V.describe(), base @ V_2I),
                     (mc.CATALOG["weights_instead_of_output"].describe(), base)])
