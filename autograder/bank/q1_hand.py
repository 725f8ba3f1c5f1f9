"""q1's hand calculation: position 1 with W_v = 3I, one graded step.

The lecture's example has W_v = 2I; its weights for position 1 come from Q and K alone,
so with W_v = 3I the scores, scaled scores, exps, sum and weights are the lecture's own
numbers, and grading them would grade copying (issue 30). The step that is new is the
output: the student writes ``weights_1`` and ``output_1`` in one cell, and one check
grades ``output_1``, marked the way a teacher marks working on paper, "error carried
forward": the exact value passes, and so does the lecture's rule (a weighted sum of the
new V) applied to the student's *own* ``weights_1``, provided those are weights at all
(non-negative, summing to 1). A slip in the weights therefore costs the answers that rest
on them (``weights_changed``, ``output_scale_factor``, the code-versus-hand check), named
there by :data:`WEIGHT_DIAGNOSES`, not this step. No check draws random inputs: the hand
example is fixed.
"""

from __future__ import annotations

import numpy as np

from . import Context, check
from .lib import misconceptions as mc
from .lib import reference as ref
from .lib.handsteps import Diagnosis, cause, chain, judge, require_weights, vector

#: W_v = V_SCALE·I in the thinking question (the lecture's example has 2I).
V_SCALE = 3.0

_X = ref.HAND_X
V_3I, V_2I = V_SCALE * _X, 2.0 * _X  # V = X·W_v; X = I here, so V = W_v
# scores [Q₁·K₁, Q₁·K₂] with Q = K = X
EXACT = chain(_X @ _X[0], _X.shape[1], V_3I)
EXACT_WEIGHTS, EXACT_OUTPUT = EXACT.weights, EXACT.output

SCORE_USES_V = mc.register(
    "q1_score_uses_v", "打分用了 Value",
    "score(1, j) 是位置 1 的 Query 与位置 j 的 Key 的点积 Q₁·K_j；你的分数是 Q₁ 与 V_j 的点积。"
    "W_v 只用来算 V，不进入打分。")
SUM_ONE_TERM = mc.register(
    "q1_sum_one_term", "总和只加了一项",
    "softmax 的分母是所有位置的 exp 之和；e⁰ = 1 也是一项，不能漏掉。")
OUTPUT_OLD_V = mc.register(
    "q1_output_old_v", "输出还在用 W_v = 2I 的 V",
    "W_v 换成了 3I，V 要按 V = X·3I 重新算，再用权重对新的 V₁、V₂ 加权求和。")


def _weights_from(scores: np.ndarray, d: float = 2.0) -> np.ndarray:
    """Position 1's weights from a row of scores divided by ``d`` (the lecture: √d_k)."""
    return chain(np.asarray(scores, dtype=float), d * d, V_3I).weights


def _weight_diagnoses() -> list[Diagnosis]:
    """What each named slip in the hand calculation makes of ``weights_1``."""
    exps = EXACT.exps
    return [
        (SCORE_USES_V.describe(), _weights_from(V_SCALE * _X[0], np.sqrt(2))),
        (SCORE_USES_V.describe(), _weights_from(2.0 * _X[0], np.sqrt(2))),
        (mc.CATALOG["no_scaling"].describe(), _weights_from(_X[0], 1.0)),  # or exp before scaling
        (mc.CATALOG["divide_by_dk"].describe(), _weights_from(_X[0], 2.0)),
        (SUM_ONE_TERM.describe(), exps / exps[0]),
        (SUM_ONE_TERM.describe(), exps / exps[1]),
        (mc.CATALOG["weights_depend_on_v"].describe(), 1.5 * EXACT_WEIGHTS),
        (mc.CATALOG["weights_depend_on_v"].describe(), V_SCALE * EXACT_WEIGHTS),
        ("两个权重写反了：位置 1 对自己的权重对应第一项 exp。", EXACT_WEIGHTS[::-1]),
    ]


#: (the likely cause, the weights_1 that slip gives): the answers that rest on weights_1
#: name the slip with these.
WEIGHT_DIAGNOSES: list[Diagnosis] = _weight_diagnoses()


def weights_cause(weights: np.ndarray) -> str:
    """The named slip a wrong ``weights_1`` reproduces ("" when none does)."""
    return cause(weights, [EXACT_WEIGHTS], WEIGHT_DIAGNOSES)


@check("q1.hand_output", "手算：W_v = 3I 时位置 1 的 weights_1 与 output_1")
def hand_output(ctx: Context, *, weights_1, output_1) -> None:
    weights = vector(weights_1, "weights_1")
    require_weights(weights, "weights_1", weights_cause(weights))
    got = vector(output_1, "output_1")
    judge(got, "output_1", exact=EXACT_OUTPUT, carried=weights @ V_3I, source="weights_1",
          diagnoses=[(OUTPUT_OLD_V.describe(), weights @ V_2I),
                     (mc.CATALOG["weights_instead_of_output"].describe(), weights)])
