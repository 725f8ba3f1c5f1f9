"""Checks for q2_dk_growth: why q·k grows with d_k, under both readings of the question.

The question asks about "两个随机方向差不多的向量". The core grades both readings:

* independent random vectors (reading A): std(q·k) = √d_k, ×10 from d_k = 2 to 200,
  and dividing by √d_k brings the spread back to 1;
* roughly aligned random vectors (reading B): q·k ≈ |q||k|cos θ ≈ d_k cos θ, ×100 from
  2 to 200, and still ×10 after dividing by √d_k.

It starts with four hand values on ±1 vectors, then the student's samplers confirm
them, then the general factors. Neither 10 nor 100 is a misconception on its own; the
named misconceptions are the wrong answer *for a stated reading*.

Reading B's sampler and the general factors live in :mod:`.q2_general`; the extensions'
checks in :mod:`.q2_ext` (SymPy variance, log-log slope, entropy, Jacobian, score
gradient) and :mod:`.q2_chain` (the causal chain). Importing this module registers them
all: the registry loads this module only.

Statistical checks compare the student's Monte Carlo estimates with the truth using
tolerances of ``Z`` standard errors of the estimator (``Z`` = 6 or more), so a
correct answer never fails by chance, while every named misconception is off by
many more standard errors.
"""

from __future__ import annotations

import numpy as np

from . import Context, check
from .lib import misconceptions as mc
from .lib.compare import as_array, as_number, assert_number_close, fail
from .q2_chain import CHAIN_UNPAIRED
from .q2_common import Z
from .q2_common import generator as _generator
from .q2_common import near as _near
from .q2_ext import (
    ENTROPY_NAN,
    GRAD_NO_SOFTMAX,
    JAC_DIAGONAL,
    JAC_SIGN,
    SLOPE_NO_LOG,
    SLOPE_SWAPPED,
    VARIANCE_VS_STD,
)
from .q2_general import (
    ALIGNED_CANCEL,
    ALIGNED_FLAT,
    ALIGNED_INDEPENDENT_KEY,
    ALIGNED_SHARED_R,
    GROWTH_VARIANCE,
)

#: The question's target dimension for the hand values.
HAND_DIM = 200
#: Tolerance of the hand values: the contract's 2e-3 (rounded to two decimals passes).
HAND_RTOL = 2e-3

DIVIDE_DK = mc.CATALOG["divide_by_dk"]
NO_SCALING = mc.CATALOG["no_scaling"]

COSINE = mc.register(
    "q2_dot_as_cosine", "把点积当成了余弦相似度（只看方向）",
    "点积 q·k = |q|·|k|·cos θ：方向只决定 cos θ，两个向量的长度也乘在里面。q = k = (1, …, 1) 时 "
    "cos θ = 1，但 q·k 是 d_k 项 1×1 之和。")
MEAN_AS_SIZE = mc.register(
    "q2_mean_as_typical_size", "把均值当成了典型大小（以为正负抵消后点积就是 0）",
    "±1 的项正负各半，q·k 的平均是 0，但每一次的 q·k 并不是 0：d_k = 2 时 q·k 取 2、0、0、−2。"
    "衡量大小要看 (q·k)² 的平均（均方），它的平方根才是典型大小。")
SQUARE_AS_SIZE = mc.register(
    "q2_mean_square_as_size", "把均方当成了典型大小（忘了开平方）",
    "(q·k)² 的平均（均方）是 d_k 个 ±1 项的均方之和；典型大小是均方的平方根（均方根），"
    "和 q·k 的单位相同。")
UNIFORM = mc.register(
    "uniform_sampling", "用均匀分布代替标准正态分布",
    "q、k 的分量应从标准正态 N(0, 1) 抽取（rng.standard_normal）。均匀分布 U(−1, 1) 的方差只有 1/3，"
    "每一项 q_i·k_i 的方差是 1/9，点积的标准差就成了 √d_k/3，而不是 √d_k。")
NONCENTRED = mc.register(
    "noncentred_sampling", "分量均值不为 0（未中心化）",
    "q、k 的分量应均值为 0。例如 rng.random() 给出 [0, 1) 上的数，均值 1/2：点积的均值变成 d_k/4，"
    "随 d_k 整体漂移，方差也不再是 d_k。")
SHARED_QUERY = mc.register(
    "q2_shared_query", "所有样本共用同一个 q（样本不是独立的一对对 q、k）",
    "每个样本都应是一对新抽取的 q、k 的点积。先抽一个 q、再抽 n_samples 个 k，得到的是同一个 q 与"
    "许多 k 的点积：它们的方差是 |q|²，随这一个 q 的长度忽大忽小，而不是 d_k。")
RNG_UNUSED = mc.register(
    "rng_not_used", "没有使用传入的 rng",
    "随机数应全部从参数 rng 抽取（rng.standard_normal(...)）。用 np.random.xxx 的全局状态，或在函数里"
    "新建固定种子的 default_rng，调用者就无法复现或控制结果。")


# ------------------------------------------------------------------ hand values (±1 vectors)


def _hand_hint(wrong: dict[float, str]):
    """A hint that names the wrong value a hand answer matches (each key: a wrong answer)."""
    def hint(value: float) -> str | None:
        for candidate, text in wrong.items():
            if np.isclose(value, candidate, rtol=HAND_RTOL, atol=1e-9):
                return text
        return None
    return hint


def _hand(value: object, expected: float, what: str, wrong: dict[float, str]) -> None:
    assert_number_close(value, expected, what, rtol=HAND_RTOL, atol=1e-9, hint=_hand_hint(wrong))


@check("q2.hand_aligned", "手算（读法 B）：q = k = (1, …, 1)，d_k = 200 时的 q·k")
def hand_aligned(ctx: Context, *, dot_aligned_200) -> None:
    _hand(dot_aligned_200, float(HAND_DIM), "dot_aligned_200", {
        1.0: COSINE.describe(),
        float(np.sqrt(HAND_DIM)): "这是一个向量的长度 |q| = √d_k；点积是两个长度相乘再乘 cos θ。",
        2.0: "这是 d_k = 2 时的点积；题目问的是 d_k = 200。",
    })


@check("q2.hand_aligned_scaled", "手算（读法 B）：d_k = 200 时的 q·k/√d_k")
def hand_aligned_scaled(ctx: Context, *, scaled_aligned_200) -> None:
    _hand(scaled_aligned_200, float(np.sqrt(HAND_DIM)), "scaled_aligned_200", {
        1.0: DIVIDE_DK.describe(),
        float(HAND_DIM): NO_SCALING.describe(),
        float(np.sqrt(2)): ALIGNED_FLAT.describe(),
    })


@check("q2.hand_mean_square", "手算（读法 A）：±1 的随机向量，d_k = 2 时 (q·k)² 的平均")
def hand_mean_square(ctx: Context, *, mean_square_2) -> None:
    _hand(mean_square_2, 2.0, "mean_square_2", {
        0.0: MEAN_AS_SIZE.describe(),
        1.0: "这是 |q·k| 的平均；题目问的是 (q·k)² 的平均：4 种情形的 (q·k)² 分别是多少？",
        float(np.sqrt(2)): "这是均方根（典型大小）；题目问的是开平方之前的均方。",
        4.0: "4 种情形里只有两种 q·k = ±2，另外两种 q·k = 0，平均时要算上它们。",
    })


@check("q2.hand_typical", "手算（读法 A）：±1 的随机向量，d_k = 200 时点积的典型大小")
def hand_typical(ctx: Context, *, typical_random_200) -> None:
    _hand(typical_random_200, float(np.sqrt(HAND_DIM)), "typical_random_200", {
        0.0: MEAN_AS_SIZE.describe(),
        float(HAND_DIM): SQUARE_AS_SIZE.describe(),
        float(np.sqrt(2) * HAND_DIM / 2): "这是把 d_k = 2 时的典型大小 √2 乘了 100：典型大小并不随 d_k 线性增长，"
                                          "随 d_k 线性增长的是均方。",
    })


# ------------------------------------------------------------------ samples (reading A)


def _samples(ctx: Context, func: object, d: int, n: int, rng: np.random.Generator,
             what: str) -> np.ndarray:
    got = as_array(ctx.call(func, d, n, rng, what=what), what)
    if got.shape != (n,):
        hint = ""
        if got.ndim == 2:
            hint = "\n提示：应返回 n_samples 个点积组成的一维数组，每个样本是一对 q、k 的点积（对分量求和）。"
        elif got.shape == (d,):
            hint = "\n提示：参数顺序是 dot_product_samples(d_k, n_samples, rng)。"
        fail(f"{what} 的形状不对：期望 ({n},)，得到 {got.shape}。{hint}")
    if not np.isfinite(got).all():
        fail(f"{what} 含有 NaN 或无穷大。")
    return got


def _sampling_cause(mean: float, var: float, d: int, mean_tol: float, var_tol: float) -> str:
    if abs(mean) > mean_tol:
        extra = "（均值约为 d_k/4，看起来像 rng.random() 的 [0, 1) 均匀分布）" \
            if _near(mean / d, 0.25, 0.2) else ""
        return f"\n可能的原因：{NONCENTRED.describe()}{extra}"
    if abs(var - d) > var_tol:
        if _near(var / d, 1 / 9, 0.2):
            return f"\n可能的原因：{UNIFORM.describe()}"
        if _near(var, 1.0, 0.2) and d > 1:
            return "\n可能的原因：样本被除以了 √d_k。这里要的是未缩放的 q·k，它的方差应是 d_k。"
        return "\n提示：q、k 的每个分量都应独立服从 N(0, 1)，点积对 d_k 个分量求和。"
    return ""


#: mean|s| / rms(s) for s = q·k at d_k = 1 (a product of two independent N(0, 1)):
#: E|q|·E|k| / 1 = 2/π, with a standard deviation of sqrt(0.1895 / n) (delta method;
#: 0.0061 at n = 5000, as simulated). One shared q makes the samples Gaussian: √(2/π).
PAIR_RATIO = 2 / np.pi
PAIR_RATIO_SD = 0.1895 ** 0.5


def _pair_ratio(s: np.ndarray) -> float:
    return float(np.mean(np.abs(s)) / np.sqrt(np.mean(s**2)))


def _looks_shared(s: np.ndarray) -> bool:
    """Gaussian samples (one q times many k at d_k = 1) have mean|s|/rms(s) = √(2/π)."""
    return _near(_pair_ratio(s), np.sqrt(2 / np.pi), 0.02)


def _independent_pairs(s: np.ndarray, what: str) -> None:
    """At d_k = 1 a sample is q·k of one fresh pair: its shape of distribution says so."""
    ratio = _pair_ratio(s)
    tol = Z * PAIR_RATIO_SD / np.sqrt(s.size)
    if abs(ratio - PAIR_RATIO) > tol:
        cause = f"\n可能的原因：{SHARED_QUERY.describe()}" if _looks_shared(s) else ""
        fail(f"{what}：d_k = 1 时每个样本应是两个独立的 N(0, 1) 数的乘积 q₁·k₁，"
             f"mean(|s|)/√mean(s²) 应接近 2/π ≈ {PAIR_RATIO:.4f}（容差 ±{tol:.3f}），"
             f"得到 {ratio:.4f}：样本的分布不像一对对独立的 q、k。{cause}")


@check("q2.samples", "dot_product_samples：长度、均值 ≈ 0、方差 ≈ d_k，每个样本一对独立的 q、k")
def samples(ctx: Context, *, dot_product_samples) -> None:
    n = 5000
    dims = [1, 2, int(ctx.rng.integers(5, 40)), int(ctx.rng.integers(100, 257))]
    for d in dims:
        what = f"dot_product_samples({d}, {n}, rng)"
        s = _samples(ctx, dot_product_samples, d, n, _generator(ctx), what)
        mean, var = float(s.mean()), float(s.var(ddof=1))
        # SE of the mean is sqrt(d/n); Var(s²) ≈ (2d² + 6d)/n for a sum of d products of normals.
        mean_tol = Z * np.sqrt(d / n)
        var_tol = Z * np.sqrt((2 * d * d + 6 * d) / n)
        cause = _sampling_cause(mean, var, d, mean_tol, var_tol)
        if abs(mean) > mean_tol:
            fail(f"{what} 的样本均值是 {mean:.4g}，应接近 0（容差 ±{mean_tol:.3g}）。{cause}")
        if abs(var - d) > var_tol:
            if d == 1 and _looks_shared(s):
                cause = f"\n可能的原因：{SHARED_QUERY.describe()}"
            fail(f"{what} 的样本方差是 {var:.4g}，应接近 d_k = {d}（容差 ±{var_tol:.3g}）。{cause}")
        if d == 1:
            _independent_pairs(s, what)


@check("q2.samples_rng", "dot_product_samples：只从传入的 rng 抽样（同种子同结果）")
def samples_rng(ctx: Context, *, dot_product_samples) -> None:
    d, n = int(ctx.rng.integers(3, 20)), 50
    seed_a, seed_b = (int(v) for v in ctx.rng.choice(10**9, size=2, replace=False))
    what = f"dot_product_samples({d}, {n}, rng)"
    first = _samples(ctx, dot_product_samples, d, n, np.random.default_rng(seed_a), what)
    again = _samples(ctx, dot_product_samples, d, n, np.random.default_rng(seed_a), what)
    other = _samples(ctx, dot_product_samples, d, n, np.random.default_rng(seed_b), what)
    if not np.array_equal(first, again):
        fail("用两个种子相同的 rng 各调用一次，得到的样本却不同：样本不是（只）从传入的 rng 抽取的。"
             f"\n可能的原因：{RNG_UNUSED.describe()}")
    if np.array_equal(first, other):
        fail("用两个种子不同的 rng 调用，得到的样本却完全相同：函数没有用传入的 rng。"
             f"\n可能的原因：{RNG_UNUSED.describe()}")


# ------------------------------------------------------------------ std (the √d_k fix)


def _std_se(d: int, n: int) -> float:
    """Relative standard error of the sample std of q·k (Var s² ≈ (2d² + 6d)/n)."""
    return 0.5 * np.sqrt((2 + 6 / d) / n)


def _unscaled_cause(ratio: float) -> str:
    """``ratio`` = measured std / sqrt(d_k)."""
    if _near(ratio, 1 / 3):
        return f"\n可能的原因：{UNIFORM.describe()}"
    if _near(ratio, np.sqrt(7) / 12) or _near(ratio, np.sqrt(3)):
        return f"\n可能的原因：{NONCENTRED.describe()}"
    return "\n提示：q、k 的分量应独立服从 N(0, 1)；点积的方差是 d_k，标准差是 √d_k。"


def _std_call(ctx: Context, func: object, d: int, n: int, scaled: bool) -> tuple[str, float]:
    what = f"dot_product_std({d}, {n}, rng{', scaled=True' if scaled else ''})"
    got = ctx.call(func, d, n, _generator(ctx), what=what, **({"scaled": True} if scaled else {}))
    return what, as_number(got, what)


#: d_k = 1 calls of ``dot_product_std``: with one shared q a call returns |q|, which
#: passes the 6-SE band with probability 0.116; all of them: about 1e-7.
STD_ONE_CALLS = 7


def _std_at_one(ctx: Context, func: object, n: int) -> None:
    """Several calls at d_k = 1, where the std of one q₁·k₁ is exactly 1."""
    tol = Z * _std_se(1, n)
    got = [_std_call(ctx, func, 1, n, False)[1] for _ in range(STD_ONE_CALLS)]
    bad = [v for v in got if not (np.isfinite(v) and abs(v - 1) <= tol)]
    if not bad:
        return
    spread = (max(got) - min(got)) / max(abs(float(np.mean(got))), 1e-12)
    cause = _unscaled_cause(bad[0])
    if np.isfinite(spread) and spread > 0.5:  # all within the band would be at most 2·tol = 0.24
        cause = (f"\n可能的原因：{SHARED_QUERY.describe()}"
                 f"（{STD_ONE_CALLS} 次调用的结果从 {min(got):.3g} 到 {max(got):.3g}，差得远超抽样误差）")
    fail(f"dot_product_std(1, {n}, rng) 应接近 1（d_k = 1 时 q·k = q₁·k₁，方差 E[q₁²]·E[k₁²] = 1），"
         f"得到 {bad[0]:.4g}（容差 ±{tol:.2g}）。{cause}")


STD_NOT_SAMPLED = mc.register(
    "std_not_sampled", "没有抽样：直接返回了理论值",
    "dot_product_std 要返回抽出来的样本的标准差：它随传入的 rng 有抽样误差。你的函数对两个种子不同的 rng "
    "返回完全相同的数，说明它没有抽样，只是写出了公式；这一格检查的正是实验本身。")


def _std_is_sampled(ctx: Context, func: object) -> None:
    """Two generators of different seeds, 50 samples each: a sampled std differs (its
    relative standard error is about 10 %); a formula (√d_k, or 1 when scaled) does not."""
    d = int(ctx.rng.integers(3, 30))
    seed_a, seed_b = (int(v) for v in ctx.rng.choice(2**31, size=2, replace=False))
    got = []
    for seed in (seed_a, seed_b):
        what = f"dot_product_std({d}, 50, np.random.default_rng({seed}))"
        got.append(as_number(ctx.call(func, d, 50, np.random.default_rng(seed), what=what), what))
    if got[0] == got[1]:
        fail(f"dot_product_std({d}, 50, rng) 对两个种子不同的 rng 都返回 {got[0]:.6g}。"
             f"\n可能的原因：{STD_NOT_SAMPLED.describe()}")


def _std_of_own_samples(ctx: Context, std_func: object, samples_func: object) -> None:
    """dot_product_std is the std of what dot_product_samples draws (the visible assert's
    consistency, decided here on the student's values as data): with one seed each, the
    two agree within 10 % (4000 samples: about 6 standard errors of their difference,
    when a correct implementation draws in another order)."""
    seed = int(ctx.rng.integers(2**31))
    v = as_number(ctx.call(std_func, 20, 4000, np.random.default_rng(seed),
                           what="dot_product_std(20, 4000, rng)"), "dot_product_std(20, 4000, rng)")
    s = as_array(ctx.call(samples_func, 20, 4000, np.random.default_rng(seed),
                          what="dot_product_samples(20, 4000, rng)"), "dot_product_samples(20, 4000, rng)")
    own = float(np.std(s)) if s.ndim == 1 and s.size else float("nan")
    if not (np.isfinite(v) and own > 0 and abs(v / own - 1) < 0.1):
        fail(f"dot_product_std(20, 4000, rng) = {v:.4g}，而同一个种子下你的 dot_product_samples 抽出的样本的"
             f"标准差是 {own:.4g}：dot_product_std 应返回 dot_product_samples 抽出的样本的标准差。")


@check("q2.std", "dot_product_std：未缩放 ≈ √d_k，缩放后 ≈ 1（由抽样得到）", context=("dot_product_samples",))
def std(ctx: Context, *, dot_product_std, dot_product_samples) -> None:
    n = 5000
    _std_is_sampled(ctx, dot_product_std)
    _std_of_own_samples(ctx, dot_product_std, dot_product_samples)
    _std_at_one(ctx, dot_product_std, n)
    dims = [2, int(ctx.rng.integers(8, 40)), int(ctx.rng.integers(100, 257))]
    for d in dims:
        tol = Z * _std_se(d, n)
        what, got = _std_call(ctx, dot_product_std, d, n, False)
        ratio = got / np.sqrt(d)
        if not (np.isfinite(got) and abs(ratio - 1) <= tol):
            fail(f"{what}（未缩放）应接近 √d_k = {np.sqrt(d):.4g}，得到 {got:.4g}"
                 f"（相对容差 {tol:.2g}）。{_unscaled_cause(ratio)}")
        what_s, got_s = _std_call(ctx, dot_product_std, d, n, True)
        if not (np.isfinite(got_s) and abs(got_s - 1) <= tol):
            cause = "\n提示：scaled=True 时应先把每个 q·k 除以 √d_k，再算标准差。"
            if _near(got_s, 1 / np.sqrt(d), min(0.15, 3 * tol)):
                cause = f"\n可能的原因：{DIVIDE_DK.describe()} 除以 d_k 后标准差约为 1/√d_k，仍随 d_k 变化。"
            elif _near(got_s, np.sqrt(d), min(0.15, 3 * tol)):
                cause = f"\n可能的原因：{NO_SCALING.describe()}（scaled=True 被忽略了）"
            fail(f"{what_s} 应接近 1（与 d_k 无关），得到 {got_s:.4g}（容差 ±{tol:.2g}）。{cause}")


#: Names the sample students (``autograder/samples/q2.py``) use, extensions' included.
__all__ = ["ALIGNED_CANCEL", "ALIGNED_FLAT", "ALIGNED_INDEPENDENT_KEY", "ALIGNED_SHARED_R",
           "CHAIN_UNPAIRED", "COSINE", "STD_NOT_SAMPLED",
           "DIVIDE_DK", "ENTROPY_NAN", "GRAD_NO_SOFTMAX", "GROWTH_VARIANCE", "JAC_DIAGONAL", "JAC_SIGN",
           "MEAN_AS_SIZE", "NONCENTRED", "NO_SCALING", "RNG_UNUSED", "SHARED_QUERY", "SLOPE_NO_LOG",
           "SLOPE_SWAPPED", "SQUARE_AS_SIZE", "UNIFORM", "VARIANCE_VS_STD", "Z"]
