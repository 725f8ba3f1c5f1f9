"""q3's hand calculation: the lecture's steps for the new position 1 after the swap.

After swapping, the input is [x₂, x₁]; the new position 1 is x₂ = [0, 1]. The student
follows the lecture's six steps for it (打分、缩放、取指数、求和、权重、输出), one value
each. Each step is graded on its own: it is right if it is the correct value, or if it
follows correctly from the student's own previous step (error carried forward), so one
slip costs one step. Messages say what is wrong with the value, never the right value:
the self-check edition shows them before the notebook is handed in.
"""

from __future__ import annotations

import numpy as np

from . import Context, check
from .lib import misconceptions as mc
from .lib import reference as ref
from .lib.compare import CheckFailed, as_array, as_number, fail, fmt
from .lib.handsteps import chain

X_OLD = ref.HAND_X
X_NEW = ref.HAND_X[[1, 0]]
W_V = 2 * np.eye(2)
ATOL = ref.LECTURE_ATOL


#: The six steps for the new position 1 (query x₂), W_q = W_k = I, W_v = 2I.
HAND = chain(X_NEW[0] @ X_NEW.T, 2, X_NEW @ W_V)._asdict()

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


def _vector(value: object, what: str, shape: tuple[int, ...]) -> np.ndarray:
    arr = as_array(value, what)
    if arr.shape != shape:
        fail(f"{what} 的形状不对：期望 {shape}，得到 {arr.shape}。")
    if not np.isfinite(arr).all():
        fail(f"{what} 含有 NaN 或无穷大。")
    return arr


def _own(value: object, shape: tuple[int, ...]) -> np.ndarray | None:
    """The student's previous step, if it is a usable array (else no carried-forward value)."""
    try:
        arr = as_number(value, "") if shape == () else as_array(value, "")
    except CheckFailed:
        return None
    arr = np.asarray(arr, dtype=np.float64)
    return arr if arr.shape == shape and np.isfinite(arr).all() else None


def _step(arr: np.ndarray, what: str, accepted: list[np.ndarray], how: str,
          wrong: list[tuple[mc.Misconception, list[np.ndarray]]]) -> None:
    """Pass if ``arr`` is one of ``accepted``; else say how the step is done and name the
    misconception whose values it matches."""
    if any(np.allclose(arr, a, rtol=0, atol=ATOL) for a in accepted):
        return
    causes = [m.describe() for m, values in wrong
              if any(np.allclose(arr, v, rtol=0, atol=ATOL) for v in values)]
    cause = f"\n可能的原因：{causes[0]}" if causes else ""
    fail(f"{what} = {fmt(arr)} 不对：{how}（按讲义保留 3 位小数即可，容差 {ATOL:g}）。{cause}")


@check("q3.hand_scores", "手算第 1 步：新位置 1 的打分")
def hand_scores(ctx: Context, *, hand_scores) -> None:
    arr = _vector(hand_scores, "hand_scores", (2,))
    _step(arr, "hand_scores", [HAND["scores"]],
          "应是新位置 1 的 Query 与新位置 1、2 的 Key 的点积 [Q₁'·K₁', Q₁'·K₂']",
          [(KEYS_NOT_SWAPPED, [X_NEW[0] @ X_OLD.T])])


@check("q3.hand_scaled", "手算第 2 步：缩放", context=("hand_scores",))
def hand_scaled(ctx: Context, *, hand_scaled, hand_scores) -> None:
    arr = _vector(hand_scaled, "hand_scaled", (2,))
    own = _own(hand_scores, (2,))
    mine = [] if own is None else [own]
    _step(arr, "hand_scaled", [HAND["scaled"], *(m / np.sqrt(2) for m in mine)],
          "应是每个打分除以 √d_k（d_k = 2）",
          [(mc.CATALOG["no_scaling"], [HAND["scores"], *mine]),
           (mc.CATALOG["divide_by_dk"], [HAND["scores"] / 2, *(m / 2 for m in mine)])])


@check("q3.hand_exp", "手算第 3 步：取指数", context=("hand_scaled",))
def hand_exp(ctx: Context, *, hand_exps, hand_scaled) -> None:
    arr = _vector(hand_exps, "hand_exps", (2,))
    own = _own(hand_scaled, (2,))
    mine = [] if own is None else [own]
    zeroed = [np.where(np.abs(s) < ATOL, 0.0, np.exp(s)) for s in (HAND["scaled"], *mine)]
    _step(arr, "hand_exps", [HAND["exps"], *(np.exp(m) for m in mine)],
          "应是对每个缩放后的打分取 e 的指数", [(EXP_OF_ZERO, zeroed)])


@check("q3.hand_sum", "手算第 4 步：求和", context=("hand_exps",))
def hand_sum(ctx: Context, *, hand_total, hand_exps) -> None:
    value = np.array(as_number(hand_total, "hand_total"))
    if not np.isfinite(value):
        fail("hand_total 含有 NaN 或无穷大。")
    own = _own(hand_exps, (2,))
    mine = [] if own is None else [own]
    _step(value, "hand_total", [HAND["total"], *(m.sum() for m in mine)],
          "应是这一行所有 e 的指数之和（softmax 的分母）",
          [(SELF_EXCLUDED, [e[1:].sum() for e in (HAND["exps"], *mine)])])


@check("q3.hand_weights", "手算第 5 步：权重", context=("hand_exps", "hand_total"))
def hand_weights(ctx: Context, *, hand_weights, hand_exps, hand_total) -> None:
    arr = _vector(hand_weights, "hand_weights", (2,))
    exps, total = _own(hand_exps, (2,)), _own(hand_total, ())
    mine = [] if exps is None or total is None or total == 0 else [exps / total]
    _step(arr, "hand_weights", [HAND["weights"], *mine],
          "应是每个 e 的指数除以它们的总和",
          [(PROPORTIONAL, [HAND["scores"] / HAND["scores"].sum()])])


@check("q3.hand_output", "手算第 6 步：新位置 1 的输出", context=("hand_weights",))
def hand_output(ctx: Context, *, hand_output, hand_weights) -> None:
    arr = _vector(hand_output, "hand_output", (2,))
    own = _own(hand_weights, (2,))
    mine = [] if own is None else [own]
    _step(arr, "hand_output", [HAND["output"], *(m @ (X_NEW @ W_V) for m in mine)],
          "应是用两个权重对交换后两个位置的 Value 加权求和",
          [(V_NOT_SWAPPED, [w @ (X_OLD @ W_V) for w in (HAND["weights"], *mine)])])
