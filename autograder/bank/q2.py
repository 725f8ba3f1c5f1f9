"""Checks for q2_dk_growth: why q·k grows with d_k, under both readings of the question,
and the lecture's causal chain (spread → sharp softmax → small gradients).

The question asks about "两个随机方向差不多的向量". The notebook grades both readings:

* independent random vectors (reading A): std(q·k) = √d_k, ×10 from d_k = 2 to 200,
  and dividing by √d_k brings the spread back to 1;
* roughly aligned random vectors (reading B): q·k ≈ |q||k|cos θ ≈ d_k cos θ, ×100 from
  2 to 200, and still ×10 after dividing by √d_k.

Neither 10 nor 100 is a misconception on its own; the named misconceptions are the
wrong answer *for a stated reading* (e.g. the variance's factor given as the spread's).

Statistical checks compare the student's Monte Carlo estimates with the truth using
tolerances of ``Z`` standard errors of the estimator (``Z`` = 6 or more), so a
correct answer never fails by chance, while every named misconception is off by
many more standard errors.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from .. import misconceptions as mc
from .. import reference as ref
from ..compare import as_array, as_number, assert_close, assert_number_close, fail, fmt
from ..symbolic import as_expression, assert_equivalent, canonical, is_equivalent
from . import Context, check

#: Standard errors a statistical estimate may be off before it fails.
Z = 6.0

D_K, SIGMA_Q, SIGMA_K = sp.symbols("d_k sigma_q sigma_k")
SYMBOLS = {"d_k": D_K, "sigma_q": SIGMA_Q, "sigma_k": SIGMA_K}
VARIANCE = D_K * SIGMA_Q**2 * SIGMA_K**2

#: The keys of the dict that ``chain_experiment`` returns, in the order of the chain.
CHAIN_KEYS = ("max_weight", "entropy", "grad_norm")

UNIFORM = mc.register(
    "uniform_sampling", "用均匀分布代替标准正态分布",
    "q、k 的分量应从标准正态 N(0, 1) 抽取（rng.standard_normal）。均匀分布 U(−1, 1) 的方差只有 1/3，"
    "每一项 q_i·k_i 的方差是 1/9，点积的标准差就成了 √d_k/3，而不是 √d_k。")
NONCENTRED = mc.register(
    "noncentred_sampling", "分量均值不为 0（未中心化）",
    "q、k 的分量应均值为 0。例如 rng.random() 给出 [0, 1) 上的数，均值 1/2：点积的均值变成 d_k/4，"
    "随 d_k 整体漂移，方差也不再是 d_k。")
RNG_UNUSED = mc.register(
    "rng_not_used", "没有使用传入的 rng",
    "随机数应全部从参数 rng 抽取（rng.standard_normal(...)）。用 np.random.xxx 的全局状态，或在函数里"
    "新建固定种子的 default_rng，调用者就无法复现或控制结果。")
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
VARIANCE_VS_STD = mc.register(
    "variance_vs_std", "混淆方差与标准差",
    "每一项 q_i·k_i 的方差是 E[q_i²]·E[k_i²] = σ_q²·σ_k²（带平方），d_k 项独立相加，方差为 d_k·σ_q²·σ_k²；"
    "√d_k·σ_q·σ_k 是标准差，不是方差。")
SLOPE_NO_LOG = mc.register(
    "slope_without_log", "拟合前没有取对数",
    "双对数图上的斜率是 log y 对 log x 的最小二乘斜率；直接对 x、y 拟合直线，得到的不是幂指数。")
SLOPE_SWAPPED = mc.register(
    "slope_swapped", "回归方向反了（log x 对 log y）",
    "应以 log x 为自变量、log y 为因变量做最小二乘；反过来回归得到的不是这条直线的斜率。")
ENTROPY_NAN = mc.register(
    "entropy_nan_at_zero", "把 0·ln 0 算成了 NaN",
    "熵 −Σ p_j·ln p_j 中，p_j = 0 的项按极限 p·ln p → 0 计为 0。直接写 p * np.log(p)，"
    "在 p_j = 0 处得到 0 × (−∞) = NaN（还会打印警告）。softmax 非常尖锐时权重会下溢成 0，"
    "正是要算熵的时候。可以只对 p > 0 的项求和，例如 np.log(np.where(p > 0, p, 1.0))。")
JAC_DIAGONAL = mc.register(
    "jacobian_diagonal_only", "把 softmax 当成逐元素函数（只算了对角线）",
    "softmax 的每个输出都依赖所有输入：∂p_i/∂z_j = p_i(δ_ij − p_j)。只保留对角线 p_i(1 − p_i)，"
    "就漏掉了非对角的 −p_i·p_j，每行之和也不再为 0。")
JAC_SIGN = mc.register(
    "jacobian_sign", "雅可比矩阵符号反了",
    "应是 diag(p) − p·pᵀ：对角线为正 p_i(1 − p_i)，非对角为负 −p_i·p_j。")
GRAD_NO_SOFTMAX = mc.register(
    "score_gradient_skips_softmax", "求打分的梯度时跳过了 softmax",
    "L = u·p 对权重 p 的梯度是 u，但要的是对打分 z 的梯度：链式法则还要乘 softmax 的雅可比矩阵，"
    "∂L/∂z = Jᵀ·u = p ⊙ (u − (p·u))。softmax 越尖锐，这个梯度越小；直接返回 u 就看不到这一点。")
DIVIDE_DK = mc.CATALOG["divide_by_dk"]
NO_SCALING = mc.CATALOG["no_scaling"]


def _generator(ctx: Context) -> np.random.Generator:
    """A fresh generator for the student's function, seeded from the check's rng."""
    return np.random.default_rng(int(ctx.rng.integers(2**62)))


def _near(value: float, target: float, rel: float = 0.15) -> bool:
    return bool(np.isfinite(value) and abs(value - target) <= rel * abs(target))


# ------------------------------------------------------------------ samples


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
        if _near(var, 1.0, 0.2):
            return "\n可能的原因：样本被除以了 √d_k。这里要的是未缩放的 q·k，它的方差应是 d_k。"
        return "\n提示：q、k 的每个分量都应独立服从 N(0, 1)，点积对 d_k 个分量求和。"
    return ""


@check("q2.samples", "dot_product_samples：长度、均值 ≈ 0、方差 ≈ d_k")
def samples(ctx: Context, *, dot_product_samples) -> None:
    n = 5000
    dims = [2, int(ctx.rng.integers(5, 40)), int(ctx.rng.integers(100, 257))]
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
            fail(f"{what} 的样本方差是 {var:.4g}，应接近 d_k = {d}（容差 ±{var_tol:.3g}）。{cause}")


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


# ------------------------------------------------------------------ std


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


@check("q2.std", "dot_product_std：未缩放 ≈ √d_k，缩放后 ≈ 1")
def std(ctx: Context, *, dot_product_std) -> None:
    n = 5000
    dims = [2, int(ctx.rng.integers(8, 40)), int(ctx.rng.integers(100, 257))]
    for d in dims:
        tol = Z * _std_se(d, n)
        what = f"dot_product_std({d}, {n}, rng)"
        got = as_number(ctx.call(dot_product_std, d, n, _generator(ctx), what=what), what)
        ratio = got / np.sqrt(d)
        if not (np.isfinite(got) and abs(ratio - 1) <= tol):
            fail(f"{what}（未缩放）应接近 √d_k = {np.sqrt(d):.4g}，得到 {got:.4g}"
                 f"（相对容差 {tol:.2g}）。{_unscaled_cause(ratio)}")
        what_s = f"dot_product_std({d}, {n}, rng, scaled=True)"
        got_s = as_number(ctx.call(dot_product_std, d, n, _generator(ctx), what=what_s,
                                   scaled=True), what_s)
        if not (np.isfinite(got_s) and abs(got_s - 1) <= tol):
            cause = "\n提示：scaled=True 时应先把每个 q·k 除以 √d_k，再算标准差。"
            if _near(got_s, 1 / np.sqrt(d), min(0.15, 3 * tol)):
                cause = f"\n可能的原因：{DIVIDE_DK.describe()} 除以 d_k 后标准差约为 1/√d_k，仍随 d_k 变化。"
            elif _near(got_s, np.sqrt(d), min(0.15, 3 * tol)):
                cause = f"\n可能的原因：{NO_SCALING.describe()}（scaled=True 被忽略了）"
            fail(f"{what_s} 应接近 1（与 d_k 无关），得到 {got_s:.4g}（容差 ±{tol:.2g}）。{cause}")


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


# ------------------------------------------------------------------ aligned samples


def _aligned_moments(d: int, c: float) -> tuple[float, float, float]:
    """Mean, variance and Var(sample variance)·n of q·k with k = c·q + √(1 − c²)·r.

    One term t = q_i·k_i has mean c, variance 1 + c² and fourth cumulant 6c⁴ + 36c² + 6
    (q_i, r_i independent N(0, 1)); the d_k terms are independent, so cumulants add.
    """
    var = d * (1 + c * c)
    kappa4 = d * (6 * c**4 + 36 * c * c + 6)
    return c * d, var, kappa4 + 2 * var * var


@check("q2.aligned_samples", "aligned_dot_samples：方向差不多的随机向量，点积的均值与方差")
def aligned_samples(ctx: Context, *, aligned_dot_samples) -> None:
    n = 4000
    dims = [2, int(ctx.rng.integers(5, 40)), int(ctx.rng.integers(100, 201))]
    for d in dims:
        c = round(float(ctx.rng.uniform(0.5, 0.9)), 2)
        what = f"aligned_dot_samples({d}, {n}, rng, cos_theta={c})"
        got = as_array(ctx.call(aligned_dot_samples, d, n, _generator(ctx), c, what=what), what)
        if got.shape != (n,):
            hint = "\n提示：参数顺序是 aligned_dot_samples(d_k, n_samples, rng, cos_theta)，返回一维数组。" \
                if got.ndim != 1 or got.shape == (d,) else ""
            fail(f"{what} 的形状不对：期望 ({n},)，得到 {got.shape}。{hint}")
        if not np.isfinite(got).all():
            fail(f"{what} 含有 NaN 或无穷大。")
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
            fail(f"{what} 的样本方差是 {got_var:.4g}，应接近 d_k·(1 + cos_theta²) = {var:.4g}"
                 f"（容差 ±{var_tol:.3g}）。{cause}")


# ------------------------------------------------------------------ symbolic variance


_WRONG_VARIANCE = (
    (sp.sqrt(D_K) * SIGMA_Q * SIGMA_K, VARIANCE_VS_STD),
    (D_K * SIGMA_Q * SIGMA_K, VARIANCE_VS_STD),
)


@check("q2.variance_symbolic", "dot_product_variance：Var(q·k) 的精确表达式（SymPy）")
def variance_symbolic(ctx: Context, *, dot_product_variance) -> None:
    what = "dot_product_variance"
    expr = canonical(as_expression(dot_product_variance, what), SYMBOLS)
    if {s.name for s in expr.free_symbols} <= set(SYMBOLS):
        for wrong, entry in _WRONG_VARIANCE:
            if is_equivalent(expr, wrong, seconds=5.0):
                fail(f"{what} 与正确答案不等价。\n可能的原因：{entry.describe()}")
    assert_equivalent(dot_product_variance, VARIANCE, what, symbols=SYMBOLS)


# ------------------------------------------------------------------ log-log slope


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.polyfit(x, y, 1)[0])


def _slope_hint(x: np.ndarray, y: np.ndarray):
    variants = [
        (_slope(x, y), SLOPE_NO_LOG.describe()),
        (_slope(np.log(y), np.log(x)), SLOPE_SWAPPED.describe()),
        (_slope(x, np.log(y)), "只对 y 取了对数（半对数）。双对数图上的斜率要 x、y 都取对数。"),
        (float(np.polyfit(np.log(x), np.log(y), 1)[1]), "返回的是截距，不是斜率（np.polyfit 的系数按次数从高到低排列）。"),
    ]

    def hint(value: float) -> str | None:
        for wrong, text in variants:
            if np.isclose(value, wrong, rtol=1e-6, atol=1e-9):
                return text
        return None
    return hint


@check("q2.loglog_slope", "fit_loglog_slope：双对数斜率，及实测标准差对 d_k 的斜率")
def loglog_slope(ctx: Context, *, fit_loglog_slope, dot_product_std) -> None:
    for _ in range(3):
        m = int(ctx.rng.integers(5, 12))
        power = float(ctx.rng.uniform(-2, 2))
        x = np.geomspace(ctx.rng.uniform(1, 5), ctx.rng.uniform(50, 1000), m)
        y = np.exp(ctx.rng.uniform(-2, 2)) * x**power * np.exp(0.1 * ctx.randn(m))
        what = f"fit_loglog_slope(x, y)（{m} 个点，y ≈ C·x^{power:.3g} 加噪声）"
        expected = _slope(np.log(x), np.log(y))
        got = ctx.call(fit_loglog_slope, x, y, what=what)
        assert_number_close(got, expected, what, rtol=1e-6, atol=1e-9, hint=_slope_hint(x, y))
    dims = np.array([2, 4, 8, 16, 32, 64, 128, 256], dtype=float)
    n = 2000
    stds = np.array([as_number(ctx.call(dot_product_std, int(d), n, _generator(ctx),
                                        what=f"dot_product_std({int(d)}, {n}, rng)"),
                               f"dot_product_std({int(d)}, {n}, rng)") for d in dims])
    what = "fit_loglog_slope(d_k, dot_product_std(d_k, ...))"
    slope = as_number(ctx.call(fit_loglog_slope, dims, stds, what=what), what)
    # SE of each log std is 0.016 to 0.025 at n = 2000; the slope's SE is ~0.005: 0.05 is 10 sigma.
    if not (np.isfinite(slope) and abs(slope - 0.5) <= 0.05):
        fail(f"用你的 dot_product_std 在 d_k = 2…256 上实测标准差，再用你的 fit_loglog_slope 拟合，"
             f"斜率应接近 0.5（标准差 ∝ √d_k），得到 {slope:.4g}（容差 ±0.05）。"
             f"\n测得的标准差：{fmt(stds, 3)}。")




# ------------------------------------------------------------------ entropy


def _entropy(p: np.ndarray) -> np.ndarray:
    """−Σ p ln p along the last axis, 0·ln 0 = 0."""
    p = np.asarray(p, dtype=np.float64)
    return -np.sum(p * np.log(np.where(p > 0, p, 1.0)), axis=-1)


def _entropy_hint(p: np.ndarray):
    h = _entropy(p)

    def diagnose(arr: np.ndarray) -> str | None:
        if arr.shape == h.shape:
            if np.isnan(arr).any() and (p == 0).any():
                return ENTROPY_NAN.describe()
            if np.allclose(arr, h / np.log(2), rtol=1e-6, atol=1e-9):
                return "用了以 2 为底的对数（单位是比特）。这里约定用自然对数 ln（np.log）。"
            if np.allclose(arr, -h, rtol=1e-6, atol=1e-9):
                return "漏了负号：熵是 −Σ p_j·ln p_j，ln p_j ≤ 0，所以熵 ≥ 0。"
        if p.ndim == 2 and arr.shape == (p.shape[1],):
            return "沿错了轴：每一行是一组权重，应沿最后一个轴（axis=-1）求和，每行得到一个熵。"
        if p.ndim == 2 and arr.size == 1:
            return "把所有行加在了一起：应沿最后一个轴（axis=-1）求和，每行得到一个熵。"
        return None
    return diagnose


def _random_weights(ctx: Context, *shape: int, zeros: bool = False) -> np.ndarray:
    p = ctx.rng.dirichlet(np.full(shape[-1], 0.7), size=shape[:-1] or None)
    if zeros:
        p = np.where(ctx.rng.random(p.shape) < 0.4, 0.0, p)
        p[..., 0] += 1e-3  # never a row of zeros
        p = p / p.sum(axis=-1, keepdims=True)
    return np.asarray(p, dtype=np.float64)


@check("q2.entropy", "softmax_entropy：权重的熵 −Σ p·ln p（沿最后一个轴，0·ln 0 = 0）")
def entropy(ctx: Context, *, softmax_entropy) -> None:
    n = ctx.dims(3, 9)[0]
    p1 = _random_weights(ctx, n)
    what = f"softmax_entropy(p)（p 长度 {n}）"
    got = as_array(ctx.call(softmax_entropy, p1, what=what), what)
    if got.size == 1:
        got = got.reshape(())
    assert_close(got, _entropy(p1), what, rtol=1e-9, atol=1e-12, diagnose=_entropy_hint(p1))
    rows, cols = ctx.dims(2, 6, 2)
    p2 = _random_weights(ctx, rows, cols)
    what = f"softmax_entropy(P)（P 形状 ({rows}, {cols})，每行一组权重）"
    assert_close(ctx.call(softmax_entropy, p2, what=what), _entropy(p2), what, rtol=1e-9, atol=1e-12,
                 diagnose=_entropy_hint(p2))
    p3 = _random_weights(ctx, rows + 1, cols + 2, zeros=True)
    p3[0] = 0.0
    p3[0, int(ctx.rng.integers(cols + 2))] = 1.0  # one row one-hot
    what = f"softmax_entropy(P)（P 形状 {p3.shape}，有些权重恰好为 0，第一行是 one-hot）"
    assert_close(ctx.call(softmax_entropy, p3, what=what), _entropy(p3), what, rtol=1e-9, atol=1e-12,
                 diagnose=_entropy_hint(p3))


# ------------------------------------------------------------------ Jacobian


def _jacobian_variants(p: np.ndarray) -> dict[str, np.ndarray]:
    return {"diag": np.diag(p * (1 - p)), "sign": np.outer(p, p) - np.diag(p),
            "outer": -np.outer(p, p)}


def _jacobian_diag(p: np.ndarray):
    texts = {"diag": JAC_DIAGONAL.describe(), "sign": JAC_SIGN.describe(),
             "outer": "漏了对角线上的 diag(p) 项：∂p_i/∂z_i = p_i − p_i²。"}

    def diagnose(arr: np.ndarray) -> str | None:
        for key, wrong in _jacobian_variants(p).items():
            if arr.shape == wrong.shape and np.allclose(arr, wrong, rtol=1e-6, atol=1e-9):
                return texts[key]
        return None
    return diagnose


def _finite_difference(ctx: Context, softmax: object, z: np.ndarray, h: float = 1e-5) -> np.ndarray:
    cols = []
    for j in range(z.size):
        step = np.zeros_like(z)
        step[j] = h
        plus = as_array(ctx.call(softmax, z + step, what="softmax(z)"), "softmax(z)")
        minus = as_array(ctx.call(softmax, z - step, what="softmax(z)"), "softmax(z)")
        if plus.shape != z.shape or minus.shape != z.shape:
            fail(f"softmax(z) 对长度 {z.size} 的一维 z 应返回同样长度的数组，得到形状 {plus.shape}。")
        cols.append((plus - minus) / (2 * h))
    return np.stack(cols, axis=1)  # column j = ∂p/∂z_j


@check("q2.softmax_jacobian", "softmax_jacobian：diag(p) − p·pᵀ，行和为 0，对称")
def softmax_jacobian(ctx: Context, *, softmax_jacobian, softmax) -> None:
    n1, n2 = ctx.dims(2, 8, 2)
    cases = [ctx.randn(n1) * ctx.rng.uniform(0.5, 3), ctx.randn(n2) * 14.0]  # scaled / unscaled-like
    for index, z in enumerate(cases):
        what = f"softmax_jacobian(z)（z 长度 {z.size}{'，打分很大' if index else ''}）"
        p = ref.softmax(z)
        got = as_array(ctx.call(softmax_jacobian, z, what=what), what)
        diagnose = _jacobian_diag(p)
        if got.shape != (z.size, z.size):
            fail(f"{what} 的形状不对：期望 ({z.size}, {z.size})，得到 {got.shape}。")
        cause = diagnose(got)
        cause = f"\n可能的原因：{cause}" if cause else ""
        if np.isfinite(got).all() and not np.allclose(got.sum(axis=1), 0, atol=1e-9):
            fail(f"{what} 每一行之和应为 0（softmax 的输出之和恒为 1，整体平移 z 不改变 p），"
                 f"得到的行和最大为 {float(np.abs(got.sum(axis=1)).max()):.3g}。{cause}")
        if np.isfinite(got).all() and not np.allclose(got, got.T, atol=1e-9):
            fail(f"{what} 应是对称矩阵（∂p_i/∂z_j = ∂p_j/∂z_i = −p_i·p_j）。{cause}")
        assert_close(got, np.diag(p) - np.outer(p, p), what, rtol=1e-7, atol=1e-10, diagnose=diagnose)
    z = ctx.randn(n1)
    numeric = _finite_difference(ctx, softmax, z)
    what = "softmax_jacobian(z) 与对你的 softmax 做中心差分的结果"
    assert_close(ctx.call(softmax_jacobian, z, what="softmax_jacobian(z)"), numeric, what,
                 rtol=1e-5, atol=1e-7, diagnose=_jacobian_diag(ref.softmax(z)))


# ------------------------------------------------------------------ gradient of a simple loss


def _score_grad(z: np.ndarray, u: np.ndarray) -> np.ndarray:
    """∂(u·softmax(z))/∂z = Jᵀu = p ⊙ (u − p·u)."""
    p = ref.softmax(z)
    return p * (u - p @ u)


def _score_grad_diag(z: np.ndarray, u: np.ndarray):
    p = ref.softmax(z)
    variants = {GRAD_NO_SOFTMAX.describe(): u,
                JAC_DIAGONAL.describe(): p * (1 - p) * u,
                JAC_SIGN.describe(): -_score_grad(z, u),
                "只用了雅可比矩阵的对角线 diag(p)·u = p ⊙ u，漏了 −p·(p·u) 这一项。": p * u}

    def diagnose(arr: np.ndarray) -> str | None:
        for text, wrong in variants.items():
            if arr.shape == wrong.shape and np.allclose(arr, wrong, rtol=1e-6, atol=1e-9):
                return text
        return None
    return diagnose


@check("q2.score_gradient", "score_gradient：损失 L = u·softmax(z) 对打分 z 的梯度")
def score_gradient(ctx: Context, *, score_gradient, softmax) -> None:
    n1, n2 = ctx.dims(2, 8, 2)
    cases = [(ctx.randn(n1) * ctx.rng.uniform(0.5, 3), ctx.randn(n1)),
             (ctx.randn(n2) * 14.0, ctx.randn(n2))]  # scaled-like / unscaled-like scores
    for index, (z, u) in enumerate(cases):
        what = f"score_gradient(z, u)（长度 {z.size}{'，打分很大' if index else ''}）"
        got = as_array(ctx.call(score_gradient, z, u, what=what), what)
        diagnose = _score_grad_diag(z, u)
        if got.shape != z.shape:
            fail(f"{what} 的形状不对：期望 ({z.size},)（每个打分一个偏导数），得到 {got.shape}。")
        if np.isfinite(got).all() and abs(float(got.sum())) > 1e-8 * (1 + float(np.abs(u).sum())):
            found = diagnose(got)
            fail(f"{what} 的各分量之和应为 0（所有打分同时加一个数，softmax 不变，L 也不变），"
                 f"得到 {float(got.sum()):.3g}。" + (f"\n可能的原因：{found}" if found else ""))
        assert_close(got, _score_grad(z, u), what, rtol=1e-7, atol=1e-10, diagnose=diagnose)
    z, u = ctx.randn(n1), ctx.randn(n1)
    h = 1e-5
    numeric = []
    for j in range(z.size):
        step = np.zeros_like(z)
        step[j] = h
        plus = as_array(ctx.call(softmax, z + step, what="softmax(z)"), "softmax(z)")
        minus = as_array(ctx.call(softmax, z - step, what="softmax(z)"), "softmax(z)")
        numeric.append(float((plus - minus) @ u) / (2 * h))
    what = "score_gradient(z, u) 与对 u·softmax(z) 做中心差分的结果"
    assert_close(ctx.call(score_gradient, z, u, what="score_gradient(z, u)"), np.array(numeric), what,
                 rtol=1e-5, atol=1e-7, diagnose=_score_grad_diag(z, u))


# ------------------------------------------------------------------ the causal chain


def _chain_reference(rng: np.random.Generator, d: int, n_keys: int, scale: float, trials: int,
                     grad: str = "ref") -> dict[str, tuple[float, float]]:
    """Mean and std of each per-trial statistic of ``chain_experiment``.

    Given q, the scores k_j·q are i.i.d. N(0, |q|²) with |q|² ~ χ²(d_k), so a trial needs
    2·n_keys + 1 draws instead of (n_keys + 1)·d_k. ``grad`` picks the gradient formula
    (the right one, or a named wrong one) so a failure can be explained.
    """
    r = np.sqrt(rng.chisquare(d, size=trials))
    z = rng.standard_normal((trials, n_keys)) * (r * scale)[:, None]
    u = rng.standard_normal((trials, n_keys))
    p = ref.softmax(z, axis=-1)
    if grad == "diag":
        g = p * (1 - p) * u
    elif grad == "u":
        g = u
    else:
        g = p * (u - np.sum(p * u, axis=-1, keepdims=True))
    stats = {"max_weight": p.max(axis=-1), "entropy": _entropy(p), "grad_norm": np.linalg.norm(g, axis=-1)}
    return {k: (float(v.mean()), float(v.std())) for k, v in stats.items()}


_CHAIN_NAMES = {"max_weight": "平均最大权重", "entropy": "平均熵", "grad_norm": "平均梯度范数"}


def _chain_call(ctx: Context, func: object, d: int, n_keys: int, n_trials: int,
                scaled: bool) -> tuple[str, dict[str, np.ndarray]]:
    what = f"chain_experiment({d}, {n_keys}, {n_trials}, rng, scaled={scaled})"
    got = ctx.call(func, d, n_keys, n_trials, _generator(ctx), what=what, scaled=scaled)
    if not isinstance(got, dict):
        fail(f"{what} 应返回一个字典，键为 {', '.join(repr(k) for k in CHAIN_KEYS)}，"
             f"得到的是 {type(got).__name__}。")
    missing = [k for k in CHAIN_KEYS if k not in got]
    if missing:
        fail(f"{what} 返回的字典缺少键 {', '.join(repr(k) for k in missing)}"
             f"（应有 {', '.join(repr(k) for k in CHAIN_KEYS)}）。")
    arrays = {}
    for key in CHAIN_KEYS:
        arr = as_array(got[key], f"{what}[{key!r}]")
        if arr.shape != (n_trials,):
            fail(f"{what}[{key!r}] 的形状不对：期望 ({n_trials},)（每次试验一个数），得到 {arr.shape}。")
        if not np.isfinite(arr).all():
            fail(f"{what}[{key!r}] 含有 NaN 或无穷大。")
        arrays[key] = arr
    m, h, g = arrays["max_weight"], arrays["entropy"], arrays["grad_norm"]
    eps = 1e-6  # float32 weights may round a little past their bounds
    if (m < 1 / n_keys - eps).any() or (m > 1 + eps).any():
        fail(f"{what}['max_weight'] 应在 [1/n_keys, 1] = [{1 / n_keys:.3g}, 1] 之间"
             f"（n_keys 个权重之和为 1，最大的至少是平均值），得到的最小值 {m.min():.4g}、最大值 {m.max():.4g}。")
    if (h < -eps).any() or (h > np.log(n_keys) + eps).any():
        fail(f"{what}['entropy'] 应在 [0, ln n_keys] = [0, {np.log(n_keys):.4g}] 之间，"
             f"得到的最小值 {h.min():.4g}、最大值 {h.max():.4g}。\n提示：先通过 softmax_entropy 的检查。")
    if (h < -np.log(np.clip(m, 1e-300, None)) - 1e-5).any():
        fail(f"{what}：有的试验里熵小于 −ln(最大权重)，同一次试验的 'entropy' 与 'max_weight' 对不上"
             "（它们应来自同一组权重 p）。")
    if (g < -eps).any():
        fail(f"{what}['grad_norm'] 是范数，不能为负。")
    return what, arrays


def _chain_candidates(d: int, scaled: bool) -> list[tuple[str, float, str]]:
    """Wrong ways to run the experiment: (label, scale, gradient formula)."""
    right = 1 / np.sqrt(d) if scaled else 1.0
    out = [(GRAD_NO_SOFTMAX.describe() + "（chain_experiment 用到的 score_gradient）", right, "u"),
           (JAC_DIAGONAL.describe() + "（chain_experiment 用到的梯度）", right, "diag")]
    if scaled:
        out += [(DIVIDE_DK.describe(), 1 / d, "ref"),
                (f"{NO_SCALING.describe()}（scaled=True 被忽略了）", 1.0, "ref")]
    else:
        out += [("scaled=False 时仍然除以了 √d_k：这里要看的正是不缩放的打分。", 1 / np.sqrt(d), "ref")]
    return out


def _within(arrays: dict[str, np.ndarray], target: dict[str, tuple[float, float]], n: int,
            n_ref: int) -> dict[str, float]:
    """Statistic -> how far (in tolerances) the student's mean is from ``target``'s."""
    out = {}
    for key in CHAIN_KEYS:
        mean, sd = target[key]
        tol = Z * sd * np.sqrt(1 / n + 1 / n_ref) + 1e-3
        out[key] = abs(float(arrays[key].mean()) - mean) / tol
    return out


@check("q2.chain", "chain_experiment：平均最大权重、平均熵、平均梯度范数（缩放与不缩放）")
def chain(ctx: Context, *, chain_experiment) -> None:
    n_ref = 50_000
    # Two or three keys and 2000 trials in the scaled case: there a wrong gradient formula
    # (diagonal-only Jacobian) moves the mean gradient norm by about 1.75 tolerances, so its
    # estimate would have to be off by more than 7 of its standard errors to pass.
    cases = [(True, int(ctx.rng.integers(16, 129)), int(ctx.rng.integers(2, 4)), 2000),
             (False, int(ctx.rng.integers(16, 129)), int(ctx.rng.integers(4, 13)), 500)]
    for scaled, d, n_keys, n_trials in cases:
        what, arrays = _chain_call(ctx, chain_experiment, d, n_keys, n_trials, scaled)
        truth = _chain_reference(ctx.rng, d, n_keys, 1 / np.sqrt(d) if scaled else 1.0, n_ref)
        off = _within(arrays, truth, n_trials, n_ref)
        if max(off.values()) <= 1:
            continue
        cause = ""
        for label, scale, grad in _chain_candidates(d, scaled):
            wrong = _chain_reference(ctx.rng, d, n_keys, scale, 20_000, grad)
            if max(_within(arrays, wrong, n_trials, 20_000).values()) <= 1:
                cause = f"\n可能的原因：{label}"
                break
        if not cause:
            cause = ("\n提示：每次试验从 rng 抽 q、n_keys 个 Key 和 u（都服从 N(0, 1)）；"
                     "先确认 softmax_entropy、softmax_jacobian、score_gradient 的检查都已通过。")
        lines = []
        for key in CHAIN_KEYS:
            if off[key] > 1:
                mean, sd = truth[key]
                tol = Z * sd * np.sqrt(1 / n_trials + 1 / n_ref) + 1e-3
                lines.append(f"{_CHAIN_NAMES[key]}（'{key}' 的平均）应接近 {mean:.3f}"
                             f"（蒙特卡洛估计，容差 ±{tol:.3f}），得到 {float(arrays[key].mean()):.4g}")
        fail(f"{what}：" + "；".join(lines) + f"。{cause}")

