"""q3's hand calculation: the new position 1 after the swap, one graded step.

After swapping, the input is [x₂, x₁]; the new position 1 is x₂ = [0, 1]. With the
lecture's W_v = 2I every number of that calculation is printed in the lecture (the
example is symmetric: scores [1, 0], 0.707, 2.028, 3.028, 0.670 / 0.330 and the output
[0.660, 1.340], its position 2), so grading them would grade copying (issue 30). The
step keeps W_q = W_k = I and the weights, and takes the Values from :data:`W_V_HAND`,
which the lecture never uses: the new position 1's output is a number no page prints,
and it is right only if the weights go to the words in their new order and each Value
travels with its word.

The student writes ``hand_weights`` and ``hand_output`` in one cell; ``q3.hand_output``
grades ``hand_output``, marked "error carried forward" as in q1: the exact value passes,
and so does the weighted sum of the swapped Values with the student's *own*
``hand_weights``, provided those are weights (non-negative, summing to 1). A slip in
the weights costs the cell that confirms them with code (``q3.hand_swap``), named there
by :func:`weights_cause`. Messages never state the right value: the self-check edition
shows them before the notebook is handed in.
"""

from __future__ import annotations

import numpy as np

from . import Context, check
from .lib import misconceptions as mc
from .lib import reference as ref
from .lib.compare import fail, fmt
from .lib.handsteps import Diagnosis, cause, chain, judge, require_weights, vector

X_OLD = ref.HAND_X
X_NEW = ref.HAND_X[[1, 0]]
W_V = 2 * np.eye(2)
#: The hand step's W_v: not the lecture's 2I, whose symmetric Values make every swapped
#: number one the lecture prints; its rows (the Values of x₁ and x₂) are easy to weigh.
W_V_HAND = np.array([[1.0, 2.0], [3.0, 4.0]])
ATOL = ref.LECTURE_ATOL

#: The lecture's steps for the new position 1 (query x₂), W_q = W_k = I, V = X_new·W_v_hand.
HAND = chain(X_NEW[0] @ X_NEW.T, 2, X_NEW @ W_V_HAND)
EXACT_WEIGHTS, EXACT_OUTPUT = HAND.weights, HAND.output

KEYS_NOT_SWAPPED = mc.register(
    "q3_keys_not_swapped", "Key 没有跟着交换",
    "查询换成了新位置 1 的词，Key 却还按原来的顺序 [K₁, K₂] 排。交换的是整个词：它的 Query、"
    "Key、Value 一起换到新位置，打分表的第 j 列是新位置 j 上那个词的 Key。")
EXP_OF_ZERO = mc.register(
    "q3_exp_of_zero", "以为 e⁰ = 0",
    "打分为 0 的词权重并不是 0：e⁰ = 1。softmax 先取指数，指数永远是正数，所以句子里的每个词"
    "都会分到一点权重（讲义：“匹配度低的书贡献得少，但不是完全不看”）。")
SELF_EXCLUDED = mc.register(
    "q3_self_excluded", "分母漏掉了自己",
    "softmax 的分母要把这一行所有位置的 e^{score} 都加上，包括这个词自己（讲义：和句子里每一个词"
    "“包括它自己”做匹配）。")
PROPORTIONAL = mc.register(
    "q3_weights_proportional", "按打分的比例分配权重",
    "权重不是“打分除以打分之和”，而是 softmax：每个 e^{score} 除以这一行 e^{score} 的总和。"
    "打分为 0 的词照样能分到权重。")
V_NOT_SWAPPED = mc.register(
    "q3_v_not_swapped", "Value 没有跟着交换",
    "加权求和用的还是原来顺序的 Value [V₁, V₂]。交换之后新位置 j 上是另一个词，它的 Value 也"
    "跟着它走：权重 j 要乘新位置 j 上那个词的 Value。")
OUTPUT_LECTURE_V = mc.register(
    "q3_output_lecture_v", "输出还在用讲义的 W_v = 2I",
    "这一步的 Value 是 V' = X_new·W_v_hand，不是讲义的 2I：先按 W_v_hand 算出交换后两个位置的 "
    "Value，再用权重加权求和。")


def _weights(scores: np.ndarray, d: float = np.sqrt(2)) -> np.ndarray:
    """The new position 1's weights from a row of scores divided by ``d`` (√d_k)."""
    e = np.exp(scores / d)
    return e / e.sum()


def _weight_diagnoses() -> list[Diagnosis]:
    """What each named slip makes of ``hand_weights`` (first match is named)."""
    scores, exps = HAND.scores, HAND.exps
    zero = f"{EXP_OF_ZERO.describe()} 或者 {PROPORTIONAL.describe()}"  # both give [1, 0]
    return [
        (KEYS_NOT_SWAPPED.describe(), _weights(X_NEW[0] @ X_OLD.T)),
        (mc.CATALOG["no_scaling"].describe(), _weights(scores, 1.0)),
        (mc.CATALOG["divide_by_dk"].describe(), _weights(scores, 2.0)),
        (zero, scores / scores.sum()),
        (SELF_EXCLUDED.describe(), exps / exps[1]),
        (SELF_EXCLUDED.describe(), exps / exps[0]),
    ]


#: (the likely cause, the hand_weights that slip gives)
WEIGHT_DIAGNOSES: list[Diagnosis] = _weight_diagnoses()


def weights_cause(weights: np.ndarray) -> str:
    """The named slip a wrong ``hand_weights`` reproduces ("" when none does)."""
    return cause(weights, [EXACT_WEIGHTS], WEIGHT_DIAGNOSES)


@check("q3.hand_output", "手算：交换后新位置 1 的 hand_weights 与 hand_output")
def hand_output(ctx: Context, *, hand_weights, hand_output) -> None:
    weights = vector(hand_weights, "hand_weights")
    require_weights(weights, "hand_weights", weights_cause(weights))
    got = vector(hand_output, "hand_output")
    judge(got, "hand_output", exact=EXACT_OUTPUT, carried=weights @ (X_NEW @ W_V_HAND),
          source="hand_weights",
          diagnoses=[(V_NOT_SWAPPED.describe(), weights @ (X_OLD @ W_V_HAND)),
                     (OUTPUT_LECTURE_V.describe(), weights @ (X_NEW @ W_V)),
                     (mc.CATALOG["weights_instead_of_output"].describe(), weights)])


def check_hand_weights(hand_weights: object) -> None:
    """``q3.hand_swap``'s part: the code confirms the hand, so ``hand_weights`` must be
    the new position 1's weights (W_v plays no part in them)."""
    weights = vector(hand_weights, "手算的 hand_weights")
    if not np.allclose(weights, EXACT_WEIGHTS, rtol=0, atol=ATOL):
        fail(f"手算的 hand_weights = {fmt(weights)} 与代码算出的新位置 1 的权重"
             f"（self_attention(X_new, …) 的权重第 0 行）不一致（容差 {ATOL:g}）：回到第 1 节，"
             f"从打分起逐步核对。{weights_cause(weights)}")
