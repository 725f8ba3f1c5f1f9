"""Checks for q3_permutation: without positions, self-attention is a 集合操作.

The core: the swapped hand example's new position 1, by hand (:mod:`.q3_hand`), the
student's own ``self_attention`` (values on non-saturated scores, and a separate
large-score case), the swap and the hand weights confirmed with it, 人咬人 (the input
is a *multiset*: order is lost, multiplicity is not), and ``is_permutation_equivariant``
graded on probe functions drawn for each student (:mod:`.q3_probes`). The extensions are
in :mod:`.q3_ext`.

Every function named ``…self_attention`` returns ``(output, weights)``, as in q1.
"""

from __future__ import annotations

import numpy as np

from ..engine.protocol.testfn import TestFunction
from . import (
    Context,
    check,
    q3_context,  # noqa: F401  (its check registers on import)
)
from . import q3_hand as hand
from . import q3_probes as probes
from . import q3_tolerance as tolerance
from .lib import misconceptions as mc
from .lib import reference as ref
from .lib.compare import CheckFailed, as_array, as_bool, as_number, assert_close, fail, fmt

FORGOT_SWAP = mc.register(
    "q3_forgot_swap", "忘了交换输入",
    "算出来的是交换之前 [x₁, x₂] 的输出。应把交换后的输入 X_new = [x₂, x₁] 交给 self_attention。")
GLOBAL_MAX = mc.CATALOG["q3_global_max"]  # shared with q1's softmax checks
MULTISET = mc.register(
    "multiset_as_set", "把多重集合当成了集合",
    "没有位置编码时，自注意力丢掉的是顺序，不是次数：“人咬人”里“人”出现两次，"
    "softmax 的分母里就有两项 e^s，“咬”分给“人”的总权重是两个“人”的权重之和。"
    "重复的词相当于把它的打分加上 ln 2，所以“人咬人”与“人咬”的输出不同。")
INVARIANCE = mc.register(
    "equivariance_vs_invariance", "把等变当成了不变",
    "比较的是 f(X[perm]) 与 f(X)（这是“置换不变”），而置换等变要求 f(X[perm]) 等于 "
    "f(X)[perm]：输入换了顺序，输出跟着换同样的顺序，内容不变。")
CHECKER_INVERSE = mc.register(
    "q3_checker_inverse_perm", "输出按逆置换重排了",
    "比较的是 f(X[perm]) 与 f(X)[np.argsort(perm)]（逆置换）。输入的第 i 行是 X[perm[i]]，"
    "所以输出也应按同一个 perm 重排：f(X)[perm]。交换两个元素的置换恰好等于自己的逆，只用它"
    "试验发现不了这个错误。")
RTOL_KEPT = mc.register(
    "q3_rtol_kept", "容差里混入了相对误差",
    "题目要求只用绝对容差：每个元素都满足 |a − b| ≤ atol。np.allclose(a, b, atol=atol) 还带着"
    "默认的 rtol=1e-5，实际容差是 atol + 1e-5·|b|：输出上千时，差 0.01 也会被当成相等。"
    "请写 np.allclose(a, b, rtol=0, atol=atol)，或 np.max(np.abs(a - b)) <= atol。")
ATOL_IGNORED = mc.register(
    "q3_atol_ignored", "没有使用参数 atol",
    "容差应取调用时传入的 atol（默认 1e-8），而不是写死的一个数。")
EXACT_EQUALITY = mc.register(
    "q3_exact_equality", "用精确相等代替了容差",
    "浮点运算换一个顺序求和，结果可能差 1e-16 这样的舍入误差：自注意力交换输入后，softmax 分母的"
    "加法顺序也变了。用 == 或 np.array_equal 比较，会把真正等变的函数判成不等变；应在容差 atol 内比较。")

#: The checker's misreadings, in the order feedback names them: reading key -> misconception.
READINGS = {"invariant": INVARIANCE, "inverse": CHECKER_INVERSE, "rtol_kept": RTOL_KEPT,
            "atol_ignored": ATOL_IGNORED, "exact": EXACT_EQUALITY}

#: The lecture's hand example with a repeated word: 人 = x1, 咬 = x2, sentence 人咬人.
RBR_X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
EYE = np.eye(2)


# ------------------------------------------------------------------ helpers


def pair(result: object, what: str) -> tuple[object, object]:
    """``(output, weights)`` from a ``…self_attention`` result, or a message."""
    if isinstance(result, (tuple, list)) and len(result) == 2:
        return result[0], result[1]
    kind = type(result).__name__
    if isinstance(result, (tuple, list)):
        kind += f"（长度 {len(result)}）"
    fail(f"{what} 应返回二元组 (output, weights)，得到的是 {kind}。"
         "本课程所有作业里的 self_attention 都返回 (output, weights)（与思考题 1 相同）。")
    raise AssertionError  # unreachable


def own_pair(ctx: Context, func: object, *args: object, what: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The student's own ``(output, weights)`` on ``args``, or ``None`` if their function
    fails there (a check that carries their function's errors forward needs no message)."""
    try:
        out, weights = pair(ctx.call(func, *args, what=what), what)
        return as_array(out, what), as_array(weights, what)
    except CheckFailed:
        return None


def attention_inputs(ctx: Context, *, low: int = 3, spread: float = 1.0):
    """Random X, W_q, W_k, W_v with pairwise different n, d_model, d_k, d_v, rescaled so
    that the scaled scores have a standard deviation of about ``spread``: the softmax is
    not saturated, so every wrong scaling or axis changes the weights visibly. No size is
    2 (an array's ndim, and the visible example's d_k) and none is another's square, so
    d_k = K.ndim or d_k = n reproduce no other named formula (a label names what the
    student did only when it alone reproduces the values)."""
    n, d_model, d_k, d_v = ctx.dims(low, 8, 4)
    X = ctx.randn(n, d_model)
    W_q, W_k, W_v = ctx.randn(d_model, d_k), ctx.randn(d_model, d_k), ctx.randn(d_model, d_v)
    scores = (X @ W_q) @ (X @ W_k).T / np.sqrt(d_k)
    target = spread * float(ctx.rng.uniform(0.8, 1.5))
    X = X * np.sqrt(target / max(float(np.std(scores)), 1e-12))
    return X, W_q, W_k, W_v


def check_pair(result: object, X: np.ndarray, W_q, W_k, W_v, what: str) -> None:
    """Compare a student's ``(output, weights)`` with the reference self-attention of ``X``."""
    output, weights = pair(result, what)
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    exp_out, exp_w = ref.self_attention(X, W_q, W_k, W_v)
    assert_close(weights, exp_w, f"{what} 返回的 weights", rtol=1e-6, atol=1e-8,
                 diagnose=mc.diagnoser(mc.weights_variants(Q, K, d_model=X.shape[1])))
    assert_close(output, exp_out, f"{what} 返回的 output", rtol=1e-6, atol=1e-8,
                 diagnose=mc.diagnoser(mc.attention_variants(Q, K, V, d_model=X.shape[1])))


# ------------------------------------------------------------------ own attention


@check("q3.self_attention", "self_attention：返回 (output, weights) 的自注意力")
def self_attention_values(ctx: Context, *, self_attention) -> None:
    for _ in range(2):
        X, W_q, W_k, W_v = attention_inputs(ctx)
        what = f"self_attention(X, W_q, W_k, W_v)（X {X.shape}，d_k={W_k.shape[1]}，d_v={W_v.shape[1]}）"
        check_pair(ctx.call(self_attention, X, W_q, W_k, W_v, what=what), X, W_q, W_k, W_v, what)


def large_scores(ctx: Context):
    """Inputs whose scaled scores reach 1000-4000 (e^710 overflows) and where some row's
    largest score is at least 800 below the table's: subtracting the table's maximum
    instead of each row's then underflows that whole row to 0/0."""
    for _ in range(probes.DRAWS):
        X, W_q, W_k, W_v = attention_inputs(ctx, low=3)
        X = X * np.exp(ctx.rng.uniform(np.log(0.05), 0.0, size=(X.shape[0], 1)))
        scores = (X @ W_q) @ (X @ W_k).T / np.sqrt(W_k.shape[1])
        if scores.max() <= 0:
            continue
        X = X * np.sqrt(float(ctx.rng.uniform(1500, 4000)) / np.max(scores))
        scores = (X @ W_q) @ (X @ W_k).T / np.sqrt(W_k.shape[1])
        if scores.max() >= 1000 and scores.max(axis=1).min() <= scores.max() - 800:
            return X, W_q, W_k, W_v
    raise RuntimeError(f"no large-score inputs in {probes.DRAWS} draws")


def _overflow(arr: np.ndarray, scores: np.ndarray) -> mc.Misconception:
    """Which shift failed, from the rows that came back NaN: a shift by the table's
    maximum empties other rows; no shift overflows the rows with the largest scores."""
    shared = ~np.isfinite(mc.naive_softmax(scores - scores.max())).all(axis=1)
    if arr.ndim >= 1 and arr.shape[0] == scores.shape[0]:
        bad = ~np.isfinite(arr.reshape(arr.shape[0], -1)).all(axis=1)
        if (bad == shared).all():
            return GLOBAL_MAX
    return mc.CATALOG["naive_softmax_overflow"]


@check("q3.self_attention_stable", "self_attention 的数值稳定性：打分上千时")
def self_attention_stable(ctx: Context, *, self_attention) -> None:
    """Finite, and the weights of the lecture's formula or of a formula that
    ``test_self_attention`` already names (no scaling, another axis …) computed without
    overflow, with ``output = weights @ V``: this cell grades the stability alone."""
    X, W_q, W_k, W_v = large_scores(ctx)
    what = f"self_attention(X, W_q, W_k, W_v)（打分上千，X {X.shape}）"
    output, weights = pair(ctx.call(self_attention, X, W_q, W_k, W_v, what=what), what)
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    scores = Q @ K.T / np.sqrt(K.shape[-1])
    got = {name: as_array(value, f"{what} 返回的 {name}")
           for name, value in (("weights", weights), ("output", output))}
    for name, arr in got.items():
        if not np.isfinite(arr).all():
            fail(f"{what} 返回的 {name} 含有 NaN 或无穷大。\n可能的原因：{_overflow(arr, scores).describe()}")
    stable = [ref.softmax(scores)] + [w for key, w in mc.weights_variants(Q, K, d_model=X.shape[1]).items()
                                      if key not in ("naive_softmax_overflow", "raw_scores")]
    w = got["weights"]
    if not any(s.shape == w.shape and np.allclose(w, s, rtol=1e-6, atol=1e-8) for s in stable) \
            or got["output"].shape != (X.shape[0], V.shape[1]):
        check_pair((output, weights), X, W_q, W_k, W_v, what)
    assert_close(got["output"], w @ V, f"{what} 返回的 output（应为 weights @ V）", rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------------ confirming the swap


@check("q3.hand_swap", "用代码确认：交换后的两个输出与手算的权重", context=("self_attention",))
def hand_swap(ctx: Context, *, swapped_outputs, swap_matches, self_attention, hand_weights) -> None:
    """``swapped_outputs`` are the outputs for [x₂, x₁]: the reference's, or those of the
    student's own ``self_attention`` (a wrong attention is ``test_self_attention``'s); the
    hand step's ``hand_weights`` must be the new position 1's weights (the slips that the
    hand step carries forward are lost here)."""
    arr = as_array(swapped_outputs, "swapped_outputs")
    if arr.shape == (2, 2, 2):
        fail("swapped_outputs 是 self_attention 返回的整个二元组 (output, weights)：只取第一项 output。")
    if arr.shape != (2, 2):
        fail(f"swapped_outputs 的形状不对：期望 (2, 2)，得到 {arr.shape}。")
    args = (EYE, EYE, 2 * EYE)
    mine_new = own_pair(ctx, self_attention, hand.X_NEW, *args, what="self_attention(X_new, …)")
    mine_old = own_pair(ctx, self_attention, hand.X_OLD, *args, what="self_attention(X, …)")
    new = [ref.self_attention(hand.X_NEW, *args)[0]] + ([mine_new[0]] if mine_new else [])
    old = [ref.self_attention(hand.X_OLD, *args)[0]] + ([mine_old[0]] if mine_old else [])
    close = [a for a in new if a.shape == arr.shape and np.allclose(arr, a, rtol=0, atol=hand.ATOL)]
    if not close:
        unswapped = any(a.shape == arr.shape and np.allclose(arr, a, rtol=0, atol=hand.ATOL) for a in old)
        fail("swapped_outputs 不是交换后的输入 [x₂, x₁] 经过 self_attention 得到的输出。"
             + (f"\n可能的原因：{FORGOT_SWAP.describe()}" if unswapped else ""))
    if not as_bool(swap_matches, "swap_matches"):
        fail("swap_matches 是 False。请再逐行比较一次 swapped_outputs 与交换前的 original_outputs："
             "新的第 0 行对原来的第 1 行，新的第 1 行对原来的第 0 行（容差 2e-3）。")
    hand.check_hand_weights(hand_weights)


def _row_sums_to_one(bites_weight_on_man: object, rbr_weights: object) -> None:
    """The visible assert's consistency, decided here on the student's values as data:
    咬's weight on the two 人 plus its weight on itself is 1 (its row of rbr_weights)."""
    try:
        w, b = as_array(rbr_weights, ""), as_number(bites_weight_on_man, "")
    except CheckFailed:
        w, b = np.zeros(0), float("nan")
    if w.shape != (3, 3) or not np.isclose(b + w[1, 1], 1.0):
        fail("“咬”这一行的权重之和为 1：bites_weight_on_man 加上 rbr_weights[1, 1]（分给自己的权重）"
             f"应等于 1。若只算了一个“人”，那是{MULTISET.describe()}")


@check("q3.multiset", "人咬人：重复的词也算数（多重集合）", context=("self_attention", "rbr_weights"))
def multiset(ctx: Context, *, rbr_outputs, bites_weight_on_man, repeat_matters, self_attention,
             rbr_weights) -> None:
    _row_sums_to_one(bites_weight_on_man, rbr_weights)
    out, weights = ref.self_attention(RBR_X, EYE, EYE, 2 * EYE)
    mine = own_pair(ctx, self_attention, RBR_X, EYE, EYE, 2 * EYE, what="self_attention(X_rbr, …)")
    arr = as_array(rbr_outputs, "rbr_outputs（“人咬人”三个位置的输出）")
    if arr.shape != (3, 2):
        fail(f"rbr_outputs 的形状不对：期望 (3, 2)（三个词各一行），得到 {arr.shape}。")
    if not (np.allclose(arr, out, atol=1e-6) or (mine and mine[0].shape == arr.shape
                                                  and np.allclose(arr, mine[0], atol=1e-6))):
        fail("rbr_outputs 不是 self_attention 作用在“人咬人” [x₁, x₂, x₁] 上的输出。")
    candidates = [weights] + ([mine[1]] if mine and mine[1].shape == (3, 3) else [])
    got = as_number(bites_weight_on_man, "bites_weight_on_man")
    if not any(np.isclose(got, w[1, 0] + w[1, 2], rtol=0, atol=1e-6) for w in candidates):
        single = any(np.isclose(got, w[1, 0], atol=1e-6) for w in candidates)
        as_set = np.isclose(got, ref.hand_example()[1][1, 0], atol=1e-4)
        cause = f"\n可能的原因：{MULTISET.describe()}" if single or as_set else ""
        fail(f"bites_weight_on_man = {fmt(got)} 不对：应是“咬”（第 1 行）分给两个“人”"
             f"（第 0 行和第 2 行）的权重之和。{cause}")
    if not as_bool(repeat_matters, "repeat_matters"):
        fail("repeat_matters 是 False。请再比较一次“咬”在两句话里的输出 rbr_outputs[1] 与 "
             f"original_outputs[1]（不只看前几位小数）。\n可能的原因：{MULTISET.describe()}")


# ------------------------------------------------------------------ the checker, checked


def _ask(ctx: Context, checker: object, probe: probes.Probe) -> bool:
    what = "is_permutation_equivariant(f, X, perm" + (
        ")" if probe.atol is None else f", atol={probe.atol:.3g})")
    kwargs = {} if probe.atol is None else {"atol": probe.atol}
    return as_bool(ctx.call(checker, probe.fn, probe.X, probe.perm, what=what, **kwargs), what)


def _grade_probes(ctx: Context, checker: object, drawn: list[probes.Probe]) -> None:
    """Ask every probe, then fail on the first wrong answer, naming a misreading that
    explains *all* of the checker's answers."""
    answers = [_ask(ctx, checker, p) for p in drawn]
    wrong = [(p, a) for p, a in zip(drawn, answers) if a != p.expected]
    if not wrong:
        return
    readings = [probes.readings(p) for p in drawn]
    named = [m for key, m in READINGS.items() if all(r[key] == a for r, a in zip(readings, answers))]
    p, got = wrong[0]
    relation = "远大于" if p.gaps.equivariant > p.tolerance else "不超过"
    args = "f, X, perm" + ("" if p.atol is None else f", atol={p.atol:.3g}")
    fail(f"is_permutation_equivariant({args}) 返回 {fmt(got)}，应为 {fmt(p.expected)}"
         f"（共 {len(drawn)} 个 f，答错 {len(wrong)} 个）。这个 f 是：{p.fn.label}；"
         f"f(X[perm]) 与 f(X)[perm] 最大相差约 {p.gaps.equivariant:.2g}，{relation}容差 "
         f"atol={p.tolerance:.3g}。" + (f"\n可能的原因：{named[0].describe()}" if named else ""))


def checker_inputs(ctx: Context) -> tuple[np.ndarray, int]:
    n, d = int(ctx.rng.integers(4, 8)), int(ctx.rng.integers(2, 6))
    return ctx.randn(n, d), n


def _name(ctx: Context) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return "".join(letters[int(k)] for k in ctx.rng.integers(0, 26, size=int(ctx.rng.integers(3, 6))))


def _shape_probe(ctx: Context, X: np.ndarray, n: int, moves: bool) -> probes.Probe:
    """A function whose number of output columns is read from where the largest entry of
    a data-chosen column sits: a permutation that moves that row gives the two sides
    different shapes (never one column, so nothing broadcasts) and the answer False
    ("形状不同时返回 False"); one that keeps it gives True. The code and its names are
    the same either way."""
    fname, arg, col, base = _name(ctx), _name(ctx) + "_", _name(ctx) + "0", _name(ctx) + "1"
    while len({fname, arg, col, base}) < 4:
        fname = _name(ctx) + "2"
    Xw = np.hstack([X, ctx.randn(n, n + 2)])
    data = {col: int(ctx.rng.integers(0, X.shape[1])), base: int(ctx.rng.integers(2, 4))}
    source = (f"def {fname}({arg}):\n    {arg} = np.asarray({arg}, dtype=float)\n"
              f"    return {arg}[:, : {base} + int(np.argmax({arg}[:, {col}]))]\n")
    top = int(np.argmax(Xw[:, data[col]]))
    while True:
        perm = probes.random_perm(ctx.rng, n)
        if (int(np.argsort(perm)[top]) != top) == moves:
            break
    inf = float("inf")
    fn = TestFunction(source, "输出的列数由某一列最大值所在的行决定的函数", fname, data)
    g = probes.gaps(fn, Xw, perm) if not moves else probes.Gaps(inf, inf, inf, 0.0)
    return probes.Probe(fn, Xw, perm, not moves, g, kind="shape")


def checker_probes(ctx: Context) -> list[probes.Probe]:
    """Random probes in random order: equivariant ones (one equal to the last bit, one
    differing by rounding only, 3-4 more), 5-6 that are not, one that is invariant
    instead, one non-equivariant probe under the identity, and two whose sides may differ
    in shape (one always does). A checker that guesses from a probe's code is right about
    half the time on each, so it loses the cell."""
    X, n = checker_inputs(ctx)

    def perm() -> np.ndarray:
        return probes.random_perm(ctx.rng, n, involution=False)
    drawn = [probes.draw_structural(ctx.rng, X, breaks=False, perm=perm(), rounding=r)
             for r in (True, False)]
    drawn += [probes.draw_structural(ctx.rng, X, breaks=False, perm=perm())
              for _ in range(int(ctx.rng.integers(3, 5)))]
    drawn += [probes.draw_structural(ctx.rng, X, breaks=True, perm=perm())
              for _ in range(int(ctx.rng.integers(5, 7)))]
    drawn.append(probes.draw_invariant(ctx.rng, X, perm()))
    drawn.append(probes.with_identity(probes.draw_structural(ctx.rng, X, breaks=True, perm=perm())))
    drawn += [_shape_probe(ctx, X, n, True), _shape_probe(ctx, X, n, bool(ctx.rng.random() < 0.5))]
    return [drawn[int(i)] for i in ctx.rng.permutation(len(drawn))]


def tolerance_probes(ctx: Context) -> list[probes.Probe]:
    """The four tolerance cases of :func:`.q3_tolerance.draw_tolerance`, two or three of
    each, in random order: guessing every answer right has odds of at most 1 in 256."""
    X, _ = checker_inputs(ctx)
    drawn = [tolerance.draw_tolerance(ctx.rng, X, case) for case in tolerance.TOLERANCE_CASES
             for _ in range(int(ctx.rng.integers(2, 4)))]
    return [drawn[int(i)] for i in ctx.rng.permutation(len(drawn))]


@check("q3.is_permutation_equivariant", "is_permutation_equivariant：判断 f 是否置换等变")
def equivariance_checker(ctx: Context, *, is_permutation_equivariant) -> None:
    _grade_probes(ctx, is_permutation_equivariant, checker_probes(ctx))


@check("q3.equivariance_tolerance", "is_permutation_equivariant：只用绝对容差 atol")
def equivariance_tolerance(ctx: Context, *, is_permutation_equivariant) -> None:
    _grade_probes(ctx, is_permutation_equivariant, tolerance_probes(ctx))
