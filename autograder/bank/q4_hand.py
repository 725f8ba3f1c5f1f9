"""q4's hand calculation: position 1 once x₂ is gone, two graded steps that are new.

The thinking question removes x₂ from the lecture's example (x₁ = [1, 0], W_q = W_k = I,
W_v = 2I), so the sequence holds one token. Its score, scaled score and exp are the
lecture's own numbers (1, 0.707, 2.028), and so is its total (2.028), so grading them
would grade copying (issue 30). The steps that are new are the weight and the output:
the student writes ``exps_1`` and ``total_1`` (the working the weight rests on) with
``weights_1`` in one cell, and ``output_1`` in the next. Each is marked the way a
teacher marks working on paper, "error carried forward" (as in q1): the exact value
passes, and so does the lecture's rule applied to the student's *own* previous values,
provided those are well-formed (``exps_1`` one positive entry per Key of the one-token
row and ``total_1`` their sum; ``weights_1`` one weight). A row with x₂ still in it is
not carried: redoing the lecture's two-token row earns nothing. No check draws random
inputs.

Messages say what is wrong with what came back, never the right value: the exercises
edition shows them the moment a student checks a guess.
"""

from __future__ import annotations

import numpy as np

from . import Context, check
from .lib import misconceptions as mc
from .lib import reference as ref
from .lib.compare import as_array, fail
from .lib.handsteps import chain, close, earlier, judge

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
PHANTOM_EXP = mc.register(
    "q4_phantom_exp", "总和里多加了 e⁰ = 1",
    "总和里多了一项 1：那是讲义里 x₂ 的打分 0 取 exp 得到的 e⁰。序列里只剩 x₁ 时，"
    "这一行的 exp 一共有几项？")
OUTPUT_IS_X = mc.register(
    "output_is_x", "把 x 当成了 V",
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


def _carried_weights(exps_1: object, total_1: object) -> np.ndarray | None:
    """``exps_1 / total_1`` when they are the one-token row's working (one positive exp
    per Key and their sum), else None: then only the exact weight counts."""
    exps, total = earlier(exps_1, EXACT_EXPS.shape), earlier(total_1, ())
    if exps is None or total is None or (exps <= 0).any() or not close(total, np.array(exps.sum())):
        return None
    return exps / total


@check("q4.hand_weights", "手算：只剩 x₁ 时位置 1 的权重 weights_1", context=("exps_1", "total_1"))
def hand_weights(ctx: Context, *, exps_1, total_1, weights_1) -> None:
    arr = _value(weights_1, "weights_1", 1)
    exps, total = earlier(exps_1, EXACT_EXPS.shape), earlier(total_1, ())
    base = EXACT_EXPS if exps is None else exps
    own = None if exps is None or total is None or total == 0 else exps / total
    _step(arr, "weights_1", exact=EXACT_WEIGHTS, carried=_carried_weights(exps_1, total_1),
          source="exps_1 / total_1",
          diagnoses=[(mc.CATALOG["exp_without_normalising"].describe(), base),
                     (mc.CATALOG["exp_without_normalising"].describe(), EXACT_EXPS),
                     (mc.CATALOG["raw_scores"].describe(), EXACT_SCALED),
                     (PHANTOM_EXP.describe(), base / (base.sum() + 1.0)),
                     ("weights_1 = exps_1 / total_1，可 total_1 不是 exps_1 各项之和："
                      "softmax 的分母是这一行所有 exp 之和。", own),
                     (PHANTOM_TOKEN.describe(), TWO_WEIGHTS)])


@check("q4.hand_output", "手算：只剩 x₁ 时位置 1 的输出 output_1", context=("weights_1",))
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
