"""Checks of q2_dk_growth's extensions A–C (not the chain itself, see :mod:`.q2_chain`).

拓展 A: the exact variance d_k·σ_q²·σ_k² in SymPy. 拓展 B: the least-squares slope of a
log-log plot. 拓展 C: the pieces of the lecture's chain: the entropy of the weights, the
softmax Jacobian diag(p) − p·pᵀ and the gradient of L = u·softmax(z) with respect to z.
None of them calls a core function, so an extension graded apart from the core never
loses points for a core mistake.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from . import Context, check
from .lib import misconceptions as mc
from .lib import reference as ref
from .lib.compare import as_array, assert_close, assert_number_close, fail
from .lib.symbolic import as_expression, assert_equivalent, canonical, is_equivalent

D_K, SIGMA_Q, SIGMA_K = sp.symbols("d_k sigma_q sigma_k")
SYMBOLS = {"d_k": D_K, "sigma_q": SIGMA_Q, "sigma_k": SIGMA_K}
VARIANCE = D_K * SIGMA_Q**2 * SIGMA_K**2

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


@check("q2.loglog_slope", "fit_loglog_slope：双对数图上的最小二乘斜率")
def loglog_slope(ctx: Context, *, fit_loglog_slope) -> None:
    # Four noisy power laws with random exponents, sizes and ranges: a fit that works
    # only for one exponent (or one number of points) cannot pass them all.
    for _ in range(4):
        m = int(ctx.rng.integers(5, 12))
        power = float(ctx.rng.uniform(-2, 2))
        x = np.geomspace(ctx.rng.uniform(1, 5), ctx.rng.uniform(50, 1000), m)
        y = np.exp(ctx.rng.uniform(-2, 2)) * x**power * np.exp(0.1 * ctx.randn(m))
        what = f"fit_loglog_slope(x, y)（{m} 个点，y ≈ C·x^{power:.3g} 加噪声）"
        expected = _slope(np.log(x), np.log(y))
        got = ctx.call(fit_loglog_slope, x, y, what=what)
        assert_number_close(got, expected, what, rtol=1e-6, atol=1e-9, hint=_slope_hint(x, y))


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


def _softmax_of(ctx: Context, softmax, z: np.ndarray) -> np.ndarray:
    """The student's softmax of ``z``: finite numbers, one per score, or the cell fails."""
    got = as_array(ctx.call(softmax, z, what="softmax(z)"), "softmax(z)")
    if got.shape != z.shape or not np.isfinite(got).all():
        fail(f"softmax(z)（长度 {z.size}）应返回 {z.size} 个有限的权重，得到形状 {got.shape}"
             f"{'' if np.isfinite(got).all() else '、含 NaN 或无穷大'}的结果。")
    return got


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
        plus, minus = (_softmax_of(ctx, softmax, z + sign * step) for sign in (1, -1))
        numeric.append(float((plus - minus) @ u) / (2 * h))
    what = "score_gradient(z, u) 与对 u·softmax(z) 做中心差分的结果"
    assert_close(ctx.call(score_gradient, z, u, what="score_gradient(z, u)"), np.array(numeric), what,
                 rtol=1e-5, atol=1e-7, diagnose=_score_grad_diag(z, u))


