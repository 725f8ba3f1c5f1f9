"""Checks of q2_dk_growth's core, second half: reading B's sampler and the general growth
factors of both readings (d_k from any d_from to any d_to, scaled or not)."""

from __future__ import annotations

import numpy as np

from . import Context, check
from .lib import misconceptions as mc
from .lib.compare import as_array, assert_number_close, fail
from .q2_common import Z
from .q2_common import generator as _generator
from .q2_common import near as _near

DIVIDE_DK = mc.CATALOG["divide_by_dk"]
NO_SCALING = mc.CATALOG["no_scaling"]

GROWTH_VARIANCE = mc.register(
    "independent_growth_as_variance", "独立随机向量：把方差的倍数当成了典型大小的倍数",
    "两个独立的随机向量，q·k 的方差随 d_k 线性增长，典型大小（标准差）是方差的平方根，只按 √d_k 增长："
    "d_k 从 d_from 变成 d_to，典型大小变成原来的 √(d_to/d_from) 倍。按 d_to/d_from 增长的是"
    "方向差不多的两个向量（读法 B）。")
ALIGNED_CANCEL = mc.register(
    "aligned_as_independent", "以为方向差不多的向量也会正负抵消",
    "方向差不多时，各项 q_i·k_i 大多同号，不会像独立随机向量那样互相抵消：q·k ≈ |q|·|k|·cos θ，"
    "而 |q|、|k| 都约为 √d_k，所以 q·k ≈ d_k·cos θ，随 d_k 线性增长（变成原来的 d_to/d_from 倍）。"
    "按 √d_k 增长的是独立随机向量的典型大小（读法 A）。")
ALIGNED_FLAT = mc.register(
    "aligned_scaled_flat", "以为除以 √d_k 后打分就不再随 d_k 变化",
    "除以 √d_k 只让独立随机向量的打分标准差回到 1（读法 A）。方向差不多的向量，"
    "q·k/√d_k ≈ √d_k·cos θ，仍按 √d_k 增长：d_k 从 d_from 变成 d_to，变成原来的 √(d_to/d_from) 倍。")
ALIGNED_INDEPENDENT_KEY = mc.register(
    "aligned_key_independent", "Key 没有与 Query 方向相近（独立抽取）",
    "读法 B 要的是方向差不多的两个向量：k 应由 q 构造，k = cos_theta·q + √(1 − cos_theta²)·r，"
    "r 是另一个独立的标准正态向量。独立抽取的 k 与 q 方向无关，点积的均值是 0，而不是 d_k·cos_theta。")


# ------------------------------------------------------------------ aligned samples (reading B)


def _aligned_moments(d: int, c: float) -> tuple[float, float, float]:
    """Mean, variance and Var(sample variance)·n of q·k with k = c·q + √(1 − c²)·r.

    One term t = q_i·k_i has mean c, variance 1 + c² and fourth cumulant 6c⁴ + 36c² + 6
    (q_i, r_i independent N(0, 1)); the d_k terms are independent, so cumulants add.
    """
    var = d * (1 + c * c)
    kappa4 = d * (6 * c**4 + 36 * c * c + 6)
    return c * d, var, kappa4 + 2 * var * var


def _aligned_shape(got: np.ndarray, n: int, d: int, what: str) -> None:
    if got.shape != (n,):
        hint = "\n提示：参数顺序是 aligned_dot_samples(d_k, n_samples, rng, cos_theta)，返回一维数组。" \
            if got.ndim != 1 or got.shape == (d,) else ""
        fail(f"{what} 的形状不对：期望 ({n},)，得到 {got.shape}。{hint}")
    if not np.isfinite(got).all():
        fail(f"{what} 含有 NaN 或无穷大。")


ALIGNED_SHARED_R = mc.register(
    "aligned_shared_r", "所有样本共用同一个 r",
    "每个样本都要一对新抽取的 q、r：k = cos_theta·q + √(1 − cos_theta²)·r。所有样本共用一个 r 时，"
    "一次调用的点积都靠着同一个方向 r，样本之间不再独立：均值和方差的期望还对，但每次调用的方差"
    "随那个 r 的长度大起大落。")
#: Calls of the independence probe, its size, cos θ, and the bound on the spread of the
#: log sample variances between calls: about 0.22 when each sample draws its own r
#: (maximum 0.27 over 300 simulated graders), about 1.0 with one r per call (minimum 0.80).
SHARED_R_CALLS, SHARED_R_N, SHARED_R_COS, SHARED_R_SPREAD = 60, 200, 0.3, 0.5


def _aligned_independent(ctx: Context, aligned_dot_samples) -> None:
    """At d_k = 1, with a small cos θ, one r shared by every sample of a call makes the
    call's sample variance c²·2 + (1 − c²)·r², which varies with r from call to call."""
    logs = []
    for _ in range(SHARED_R_CALLS):
        what = f"aligned_dot_samples(1, {SHARED_R_N}, rng, cos_theta={SHARED_R_COS})"
        got = as_array(ctx.call(aligned_dot_samples, 1, SHARED_R_N, _generator(ctx), SHARED_R_COS,
                                what=what), what)
        _aligned_shape(got, SHARED_R_N, 1, what)
        logs.append(np.log(max(float(got.var(ddof=1)), 1e-300)))
    spread = float(np.std(logs))
    if spread > SHARED_R_SPREAD:
        fail(f"{SHARED_R_CALLS} 次调用 aligned_dot_samples(1, {SHARED_R_N}, rng, cos_theta={SHARED_R_COS})，"
             f"各次样本方差的对数标准差是 {spread:.2f}，远大于独立抽样时的约 0.22："
             f"样本之间不独立。\n可能的原因：{ALIGNED_SHARED_R.describe()}")


@check("q2.aligned_samples", "aligned_dot_samples：方向差不多的随机向量，点积的均值与方差")
def aligned_samples(ctx: Context, *, aligned_dot_samples) -> None:
    _aligned_independent(ctx, aligned_dot_samples)
    n = 4000
    dims = [2, int(ctx.rng.integers(5, 40)), int(ctx.rng.integers(100, 201))]
    for d in dims:
        c = round(float(ctx.rng.uniform(0.5, 0.9)), 2)
        what = f"aligned_dot_samples({d}, {n}, rng, cos_theta={c})"
        got = as_array(ctx.call(aligned_dot_samples, d, n, _generator(ctx), c, what=what), what)
        _aligned_shape(got, n, d, what)
        mean, var, var_of_var = _aligned_moments(d, c)
        mean_tol = Z * np.sqrt(var / n)
        var_tol = Z * np.sqrt(var_of_var / n)
        got_mean, got_var = float(got.mean()), float(got.var(ddof=1))
        if abs(got_mean - mean) > mean_tol:
            cause = ""
            if abs(got_mean) <= Z * np.sqrt(d / n):
                cause = f"\n可能的原因：{ALIGNED_INDEPENDENT_KEY.describe()}"
            elif _near(got_mean, d, 0.05):
                cause = "\n提示：均值约为 d_k，像是 k = q（cos_theta 被忽略了）。"
            fail(f"{what} 的样本均值是 {got_mean:.4g}，应接近 d_k·cos_theta = {mean:.4g}"
                 f"（容差 ±{mean_tol:.3g}）。{cause}")
        if abs(got_var - var) > var_tol:
            cause = "\n提示：k 的每个分量也应服从 N(0, 1)：k = cos_theta·q + √(1 − cos_theta²)·r。"
            if _near(got_var, 2 * c * c * d, 0.05):
                cause = "\n提示：方差约为 2·cos_theta²·d_k，像是漏掉了独立的部分 √(1 − cos_theta²)·r。"
            elif got_var < var / 2:
                cause = "\n提示：方差远小于 d_k·(1 + cos_theta²)：每个样本都应是一对新抽取的 q、r，而不是共用一个 q。"
            fail(f"{what} 的样本方差是 {got_var:.4g}，应接近 d_k·(1 + cos_theta²) = {var:.4g}"
                 f"（容差 ±{var_tol:.3g}）。{cause}")


# ------------------------------------------------------------------ growth factors (both readings)


def _growth_pairs(ctx: Context) -> list[tuple[int, int]]:
    pairs = [(2, 200)]
    pairs += [tuple(int(v) for v in ctx.rng.choice(np.arange(1, 2000), 2, replace=False)) for _ in range(4)]
    return pairs


def _independent_hint(a: int, b: int, scaled: bool):
    def hint(value: float) -> str | None:
        if not scaled and np.isclose(value, b / a):
            return GROWTH_VARIANCE.describe()
        if not scaled and np.isclose(value, np.sqrt(a / b)):
            return "方向反了：应是 d_to 处的典型大小除以 d_from 处的。"
        if scaled and np.isclose(value, np.sqrt(b / a)):
            return f"{NO_SCALING.describe()}（scaled=True 被忽略了）"
        if scaled and np.isclose(value, np.sqrt(a / b)):
            return (f"{DIVIDE_DK.describe()} 除以 d_k 后典型大小是 1/√d_k，仍随 d_k 变化；"
                    "除以 √d_k 后它恒为 1。")
        return None
    return hint


@check("q2.independent_growth", "independent_growth_factor：独立随机向量，典型大小变成原来的多少倍")
def independent_growth(ctx: Context, *, independent_growth_factor) -> None:
    for a, b in _growth_pairs(ctx):
        what = f"independent_growth_factor({a}, {b})"
        got = ctx.call(independent_growth_factor, a, b, what=what)
        assert_number_close(got, float(np.sqrt(b / a)), what, rtol=1e-9, atol=1e-12,
                            hint=_independent_hint(a, b, False))
        what = f"independent_growth_factor({a}, {b}, scaled=True)"
        got = ctx.call(independent_growth_factor, a, b, what=what, scaled=True)
        assert_number_close(got, 1.0, what, rtol=1e-9, atol=1e-12, hint=_independent_hint(a, b, True))


def _aligned_hint(a: int, b: int, scaled: bool):
    def hint(value: float) -> str | None:
        if not scaled and np.isclose(value, np.sqrt(b / a)):
            return ALIGNED_CANCEL.describe()
        if scaled and np.isclose(value, 1.0):
            return ALIGNED_FLAT.describe()
        if scaled and np.isclose(value, b / a):
            return f"{NO_SCALING.describe()}（scaled=True 被忽略了）"
        if np.isclose(value, a / b) or np.isclose(value, np.sqrt(a / b)):
            return "方向反了：应是 d_to 处的大小除以 d_from 处的。"
        return None
    return hint


@check("q2.aligned_growth", "aligned_growth_factor：方向差不多的向量，点积（及缩放后的打分）变成原来的多少倍")
def aligned_growth(ctx: Context, *, aligned_growth_factor) -> None:
    for a, b in _growth_pairs(ctx):
        what = f"aligned_growth_factor({a}, {b})"
        got = ctx.call(aligned_growth_factor, a, b, what=what)
        assert_number_close(got, b / a, what, rtol=1e-9, atol=1e-12, hint=_aligned_hint(a, b, False))
        what = f"aligned_growth_factor({a}, {b}, scaled=True)"
        got = ctx.call(aligned_growth_factor, a, b, what=what, scaled=True)
        assert_number_close(got, float(np.sqrt(b / a)), what, rtol=1e-9, atol=1e-12,
                            hint=_aligned_hint(a, b, True))
