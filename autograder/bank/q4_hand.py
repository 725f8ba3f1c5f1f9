"""q4's hand calculation: the lecture's six steps for position 1 once x₂ is gone, one check each.

The thinking question removes x₂ from the lecture's example (x₁ = [1, 0], W_q = W_k = I,
W_v = 2I), so the sequence holds one token. The student follows the lecture's steps
(score, scaled score, exp, sum, weight, output); each step is marked the way a teacher
marks working on paper, "error carried forward" (as in q1): a value that follows from the
student's *own* previous value by the lecture's rule passes, and so does the exact value.
A previous value with the wrong number of entries (x₂ still in the row) is not carried:
redoing the lecture's two-token row earns nothing. No check draws random inputs.

Messages say what is wrong with what came back, never the right value: the exercises
edition shows them the moment a student checks a guess.
"""

from __future__ import annotations

import numpy as np

from . import Context, check
from .lib import misconceptions as mc
from .lib import reference as ref
from .lib.compare import as_array, fail, fmt
from .lib.handsteps import chain, earlier, judge

#: Marks allow the lecture's rounding to 3 decimals (relative and absolute).
X1 = ref.HAND_X[0]                     # the one token left: x₁ = [1, 0]
V_SCALE = 2.0                          # W_v = 2I, as in the lecture
V_ROWS = V_SCALE * ref.HAND_X          # V₁ = [2, 0], V₂ = [0, 2] (x₂'s row only for diagnoses)
D_K = X1.size                          # W_k = I: d_k = K.shape[-1] = 2

# one Key: [Q₁·K₁]
EXACT_SCORES, EXACT_SCALED, EXACT_EXPS, EXACT_TOTAL, EXACT_WEIGHTS, EXACT_OUTPUT = chain(
    np.array([X1 @ X1]), D_K, V_ROWS[:1])
# the lecture's own two-token row for position 1, to recognise x₂ left in it
TWO_SCORES, TWO_SCALED, TWO_EXPS, TWO_TOTAL, TWO_WEIGHTS, TWO_OUTPUT = chain(
    ref.HAND_X @ X1, D_K, V_ROWS)

PHANTOM_TOKEN = mc.register(
    "q4_phantom_token", "还在用已经去掉的 x₂",
    "思考题里序列只剩 x₁（n = 1）：讲义例子里和 x₂ 有关的项，score(1,2)、它的 exp、"
    "它分到的权重和它的 Value，都不存在了。")
DK_IS_N = mc.register(
    "q4_dk_is_n", "把 d_k 当成了 token 个数 n",
    "缩放用的 d_k 是 Key 向量的维数 d_k = K.shape[-1]，不是序列里 token 的个数 n；"
    "n = 1 时 √n = 1，除以它等于没有缩放。")
EXP_OF_UNSCALED = mc.register(
    "q4_exp_of_unscaled", "对缩放前的打分取了 exp",
    "softmax 的分子是缩放之后的打分的 exp，即 e^(score/√d_k)，不是 e^score。")
PHANTOM_EXP = mc.register(
    "q4_phantom_exp", "总和里多加了 e⁰ = 1",
    "总和里多了一项 1：那是讲义里 x₂ 的打分 0 取 exp 得到的 e⁰。序列里只剩 x₁ 时，"
    "这一行的 exp 一共有几项？")
OUTPUT_IS_X = mc.register(
    "output_is_x", "忘了乘 W_v（输出 = x）",
    "输出等于输入 x 本身（或它的倍数）：加权求和的对象是 Value，不是 x。"
    "V = x·W_v 这一步不能省。")



def _value(got: object, what: str, ndim: int) -> np.ndarray:
    """The student's value as a finite float array of ``ndim`` dimensions (any length:
    a row with x₂ still in it is judged by the values, with its own diagnosis)."""
    arr = as_array(got, what)
    if arr.ndim != ndim or arr.size == 0:
        kind = "一个数" if ndim == 0 else "一维数组（这一行里每个 Key 一项）"
        fail(f"{what} 应是{kind}，得到的形状是 {arr.shape}。")
    if not np.isfinite(arr).all():
        fail(f"{what} 含有 NaN 或无穷大。")
    return arr


_step = judge


@check("q4.hand_scores", "手算第 1 步：打分 scores_1")
def hand_scores(ctx: Context, *, scores_1) -> None:
    arr = _value(scores_1, "scores_1", 1)
    _step(arr, "scores_1", exact=EXACT_SCORES, carried=None, source="",
          diagnoses=[(PHANTOM_TOKEN.describe(), TWO_SCORES),
                     ("这是缩放之后的打分：第 1 步要的是缩放之前的点积。", EXACT_SCALED),
                     ("打分是 Query 与 Key 的点积 Q₁·K₁；这是 Query 与 Value 的点积。",
                      np.array([X1 @ V_ROWS[0]]))])


@check("q4.hand_scaled", "手算第 2 步：缩放 scaled_1", context=("scores_1",))
def hand_scaled(ctx: Context, *, scores_1, scaled_1) -> None:
    arr = _value(scaled_1, "scaled_1", 1)
    prev = earlier(scores_1, EXACT_SCORES.shape)
    base = EXACT_SCORES if prev is None else prev
    unscaled = f"{mc.CATALOG['no_scaling'].describe()}\n也可能是{DK_IS_N.describe()}"
    _step(arr, "scaled_1", exact=EXACT_SCALED, source="scores_1",
          carried=None if prev is None else prev / np.sqrt(D_K),
          diagnoses=[(unscaled, base), (mc.CATALOG["divide_by_dk"].describe(), base / D_K),
                     (PHANTOM_TOKEN.describe(), TWO_SCALED)])


@check("q4.hand_exp", "手算第 3 步：取指数 exps_1", context=("scores_1", "scaled_1"))
def hand_exp(ctx: Context, *, scores_1, scaled_1, exps_1) -> None:
    arr = _value(exps_1, "exps_1", 1)
    if (arr <= 0).any():
        fail(f"exps_1 = {fmt(arr)} 里有不是正数的项：e 的任何次方都大于 0（e⁰ = 1）。")
    prev, scores = earlier(scaled_1, EXACT_SCALED.shape), earlier(scores_1, EXACT_SCORES.shape)
    base = EXACT_SCALED if prev is None else prev
    _step(arr, "exps_1", exact=EXACT_EXPS, source="scaled_1",
          carried=None if prev is None else np.exp(prev),
          diagnoses=[(EXP_OF_UNSCALED.describe(), np.exp(EXACT_SCORES if scores is None else scores)),
                     ("这是先减去最大值之后的 e⁰：讲义手算这一步直接对缩放后的打分取 exp。",
                      np.exp(base - base.max())),
                     (PHANTOM_TOKEN.describe(), TWO_EXPS)])


@check("q4.hand_sum", "手算第 4 步：求和 total_1", context=("exps_1",))
def hand_sum(ctx: Context, *, exps_1, total_1) -> None:
    arr = _value(total_1, "total_1", 0)
    prev = earlier(exps_1, EXACT_EXPS.shape)
    base = EXACT_EXPS if prev is None else prev
    _step(arr, "total_1", exact=EXACT_TOTAL, source="exps_1",
          carried=None if prev is None else np.array(prev.sum()),
          diagnoses=[(PHANTOM_EXP.describe(), np.array(base.sum() + 1.0)),
                     (PHANTOM_EXP.describe(), TWO_TOTAL)])


@check("q4.hand_weights", "手算第 5 步：权重 weights_1", context=("exps_1", "total_1"))
def hand_weights(ctx: Context, *, exps_1, total_1, weights_1) -> None:
    arr = _value(weights_1, "weights_1", 1)
    exps, total = earlier(exps_1, EXACT_EXPS.shape), earlier(total_1, ())
    carried = None if exps is None or total is None or total == 0 else exps / total
    _step(arr, "weights_1", exact=EXACT_WEIGHTS, carried=carried, source="exps_1 / total_1",
          diagnoses=[(mc.CATALOG["exp_without_normalising"].describe(),
                      EXACT_EXPS if exps is None else exps),
                     (mc.CATALOG["raw_scores"].describe(), EXACT_SCALED),
                     (PHANTOM_TOKEN.describe(), TWO_WEIGHTS),
                     (PHANTOM_TOKEN.describe(), TWO_WEIGHTS[:1])])


@check("q4.hand_output", "手算第 6 步：输出 output_1", context=("weights_1",))
def hand_output(ctx: Context, *, weights_1, output_1) -> None:
    arr = _value(output_1, "output_1", 1)
    if arr.shape != EXACT_OUTPUT.shape:
        fail(f"output_1 应是长度 {EXACT_OUTPUT.size} 的数组（位置 1 的新表示，与 V 的一行同长），"
             f"得到的形状是 {arr.shape}。")
    prev = earlier(weights_1, EXACT_WEIGHTS.shape)
    base = EXACT_WEIGHTS if prev is None else prev
    _step(arr, "output_1", exact=EXACT_OUTPUT, source="weights_1",
          carried=None if prev is None else prev @ V_ROWS[:1],
          diagnoses=[(OUTPUT_IS_X.describe(), base[0] * X1),
                     (PHANTOM_TOKEN.describe(), TWO_OUTPUT),
                     (PHANTOM_TOKEN.describe(), TWO_WEIGHTS[0] * V_ROWS[0])])
