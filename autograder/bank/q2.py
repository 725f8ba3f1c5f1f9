"""Checks for q2_dk_growth: why q·k grows with d_k, and why divide by sqrt(d_k).

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
GROWTH_LINEAR = mc.register(
    "growth_linear", "以为点积大小随 d_k 线性增长",
    "点积的方差随 d_k 线性增长，但典型大小（标准差）是方差的平方根，按 √d_k 增长："
    "d_k 从 2 到 200，大小变为 √(200/2) = 10 倍，而不是 100 倍。")
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
JAC_DIAGONAL = mc.register(
    "jacobian_diagonal_only", "把 softmax 当成逐元素函数（只算了对角线）",
    "softmax 的每个输出都依赖所有输入：∂p_i/∂z_j = p_i(δ_ij − p_j)。只保留对角线 p_i(1 − p_i)，"
    "就漏掉了非对角的 −p_i·p_j，每行之和也不再为 0。")
JAC_SIGN = mc.register(
    "jacobian_sign", "雅可比矩阵符号反了",
    "应是 diag(p) − p·pᵀ：对角线为正 p_i(1 − p_i)，非对角为负 −p_i·p_j。")
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
    n = 10_000
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
    n = 10_000
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


# ------------------------------------------------------------------ growth factor


def _growth_hint(a: int, b: int):
    def hint(value: float) -> str | None:
        if np.isclose(value, b / a):
            return GROWTH_LINEAR.describe()
        if np.isclose(value, np.sqrt(a / b)):
            return "方向反了：应是 d_to 处的典型大小除以 d_from 处的。"
        return None
    return hint


@check("q2.growth_factor", "std_growth_factor：典型大小之比 √(d_to/d_from)")
def growth_factor(ctx: Context, *, std_growth_factor) -> None:
    pairs = [(2, 200)] + [tuple(int(v) for v in ctx.rng.choice(np.arange(1, 2000), 2, replace=False))
                          for _ in range(4)]
    for a, b in pairs:
        what = f"std_growth_factor({a}, {b})"
        got = ctx.call(std_growth_factor, a, b, what=what)
        assert_number_close(got, float(np.sqrt(b / a)), what, rtol=1e-9, atol=1e-12,
                            hint=_growth_hint(a, b))


# ------------------------------------------------------------------ symbolic variance


_WRONG_VARIANCE = (
    (sp.sqrt(D_K) * SIGMA_Q * SIGMA_K, VARIANCE_VS_STD),
    (D_K * SIGMA_Q * SIGMA_K, VARIANCE_VS_STD),
)


@check("q2.variance_symbolic", "dot_product_variance：Var(q·k) = d_k·σ_q²·σ_k²（SymPy）")
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


@check("q2.loglog_slope", "fit_loglog_slope：双对数斜率；实测 std 对 d_k 的斜率 ≈ 0.5")
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
    n = 4000
    stds = np.array([as_number(ctx.call(dot_product_std, int(d), n, _generator(ctx),
                                        what=f"dot_product_std({int(d)}, {n}, rng)"),
                               f"dot_product_std({int(d)}, {n}, rng)") for d in dims])
    what = "fit_loglog_slope(d_k, dot_product_std(d_k, ...))"
    slope = as_number(ctx.call(fit_loglog_slope, dims, stds, what=what), what)
    # SE of each log std is ~0.02 at n = 4000; the slope's SE is ~0.005: 0.05 is 10 sigma.
    if not (np.isfinite(slope) and abs(slope - 0.5) <= 0.05):
        fail(f"用你的 dot_product_std 在 d_k = 2…256 上实测标准差，再用你的 fit_loglog_slope 拟合，"
             f"斜率应接近 0.5（标准差 ∝ √d_k），得到 {slope:.4g}（容差 ±0.05）。"
             f"\n测得的标准差：{fmt(stds, 3)}。")


# ------------------------------------------------------------------ saturation


def _max_weight_stats(rng: np.random.Generator, d: int, n_keys: int, scale: float,
                      trials: int = 40_000) -> tuple[float, float]:
    """Mean and std of the largest softmax weight; scores are ``scale · k_j·q``.

    Given q, the scores k_j·q are i.i.d. N(0, |q|²) and |q|² ~ χ²(d_k), so a trial
    needs n_keys + 1 draws instead of (n_keys + 1)·d_k.
    """
    r = np.sqrt(rng.chisquare(d, size=trials))
    z = rng.standard_normal((trials, n_keys)) * (r * scale)[:, None]
    m = ref.softmax(z, axis=-1).max(axis=-1)
    return float(m.mean()), float(m.std())


def _max_weight(ctx: Context, func: object, d: int, n_keys: int, n_trials: int,
                scaled: bool | None) -> tuple[str, float]:
    kwargs = {} if scaled is None else {"scaled": scaled}
    flag = "" if scaled is None else f", scaled={scaled}"
    what = f"mean_max_weight({d}, {n_keys}, {n_trials}, rng{flag})"
    got = as_number(ctx.call(func, d, n_keys, n_trials, _generator(ctx), what=what, **kwargs), what)
    if not np.isfinite(got):
        fail(f"{what} 得到了 {got}，应是 (0, 1] 之间的有限数。")
    return what, got


@check("q2.max_weight", "mean_max_weight：最大权重的蒙特卡洛估计；不缩放时 softmax 饱和")
def max_weight(ctx: Context, *, mean_max_weight) -> None:
    n_trials = 1500
    for scaled in (True, False):
        d, n_keys = int(ctx.rng.integers(16, 129)), int(ctx.rng.integers(4, 17))
        scale = 1 / np.sqrt(d) if scaled else 1.0
        mean, sd = _max_weight_stats(ctx.rng, d, n_keys, scale)
        tol = Z * sd * np.sqrt(1 / n_trials + 1 / 40_000) + 1e-3
        what, got = _max_weight(ctx, mean_max_weight, d, n_keys, n_trials, scaled)
        if abs(got - mean) <= tol:
            continue
        wrong = [(1 / d, DIVIDE_DK.describe()),
                 (1.0 if scaled else 1 / np.sqrt(d),
                  f"{NO_SCALING.describe()}（scaled=True 被忽略了）" if scaled
                  else "scaled=False 时仍然除以了 √d_k：这里要看的正是不缩放的打分。")]
        cause = ""
        if abs(got - 1 / n_keys) <= 1e-6:
            cause = "\n可能的原因：取了权重的平均（恒为 1/n_keys），而不是每次试验中最大的权重。"
        for s, text in wrong:
            m_wrong, sd_wrong = _max_weight_stats(ctx.rng, d, n_keys, s, trials=10_000)
            if not cause and abs(got - m_wrong) <= Z * sd_wrong * np.sqrt(1 / n_trials + 1e-4) + 1e-3:
                cause = f"\n可能的原因：{text}"
        fail(f"{what} 应接近 {mean:.3f}（蒙特卡洛估计，容差 ±{tol:.3f}），得到 {got:.4g}。{cause}")
    d, n_keys, n_trials = 200, 8, 400
    _, unscaled = _max_weight(ctx, mean_max_weight, d, n_keys, n_trials, False)
    _, scaled_value = _max_weight(ctx, mean_max_weight, d, n_keys, n_trials, None)
    if not unscaled >= scaled_value + 0.3:
        fail(f"d_k = 200、8 个 Key 时，不缩放的平均最大权重（{unscaled:.3f}）应明显大于缩放后的"
             f"（{scaled_value:.3f}，默认 scaled=True）：不除以 √d_k，打分的标准差约为 √200 ≈ 14，"
             "softmax 几乎变成 one-hot（约 0.93 对 0.36）。")


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
