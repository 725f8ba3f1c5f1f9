"""The check of q2_dk_growth's 拓展 C experiment: spread → sharp softmax → small score gradient.

``chain_experiment`` returns three numbers per trial (largest weight m, entropy H,
gradient norm g), all from one draw of scores z. Means alone cannot see a statistic
taken from a separate draw, so every trial is also checked on its own:

* pairing: −ln m ≤ H ≤ h(m) + (1 − m)·ln(n − 1) (h the binary entropy), and
  g ≤ ‖J‖·‖u‖ ≤ 2(1 − m)·‖u‖ (Gershgorin on J = diag(p) − p·pᵀ), with ‖u‖ ≤ √n + 8
  except with probability e⁻³² per trial;
* the gradient formula: with two keys J = m(1 − m)·[[1, −1], [−1, 1]], so
  (g / (m(1 − m)))² = 2(u₁ − u₂)², whose mean is exactly 4 whatever the scores were
  (a diagonal-only Jacobian gives 2, the raw u far more).

Then the means are compared with a Monte Carlo reference (tolerance ``Z`` standard
errors) to see the scaling.
"""

from __future__ import annotations

import numpy as np

from . import Context, check
from .lib import misconceptions as mc
from .lib import reference as ref
from .lib.compare import as_array, fail
from .q2_common import Z, generator
from .q2_ext import GRAD_NO_SOFTMAX, JAC_DIAGONAL, _entropy

DIVIDE_DK = mc.CATALOG["divide_by_dk"]
NO_SCALING = mc.CATALOG["no_scaling"]

#: The keys of the dict that ``chain_experiment`` returns, in the order of the chain.
CHAIN_KEYS = ("max_weight", "entropy", "grad_norm")

CHAIN_UNPAIRED = mc.register(
    "q2_chain_unpaired", "同一次试验的几个数来自不同的打分 z",
    "每次试验只抽一组 q、Key 和 u，算出一组打分 z 和权重 p；最大权重、熵和梯度范数都要由这同一组 z、p"
    "算出。另抽一组打分来算其中一个数，平均值也许差不多，但每次试验的三个数就对不上了：例如最大权重"
    "接近 1（softmax 很尖锐）的试验，梯度范数不可能大，因为 ‖Jᵀu‖ ≤ 2(1 − 最大权重)·‖u‖。")

_CHAIN_NAMES = {"max_weight": "平均最大权重", "entropy": "平均熵", "grad_norm": "平均梯度范数"}

#: Float slack of the per-trial bounds (weights computed from float32 scores included).
EPS = 1e-6


def _chain_reference(rng: np.random.Generator, d: int, n_keys: int, scale: float,
                     trials: int) -> dict[str, tuple[float, float]]:
    """Mean and std of each per-trial statistic of ``chain_experiment``.

    Given q, the scores k_j·q are i.i.d. N(0, |q|²) with |q|² ~ χ²(d_k), so a trial needs
    2·n_keys + 1 draws instead of (n_keys + 1)·d_k.
    """
    r = np.sqrt(rng.chisquare(d, size=trials))
    z = rng.standard_normal((trials, n_keys)) * (r * scale)[:, None]
    u = rng.standard_normal((trials, n_keys))
    p = ref.softmax(z, axis=-1)
    g = p * (u - np.sum(p * u, axis=-1, keepdims=True))
    stats = {"max_weight": p.max(axis=-1), "entropy": _entropy(p), "grad_norm": np.linalg.norm(g, axis=-1)}
    return {k: (float(v.mean()), float(v.std())) for k, v in stats.items()}


def _chain_call(ctx: Context, func: object, d: int, n_keys: int, n_trials: int,
                scaled: bool) -> tuple[str, dict[str, np.ndarray]]:
    what = f"chain_experiment({d}, {n_keys}, {n_trials}, rng, scaled={scaled})"
    got = ctx.call(func, d, n_keys, n_trials, generator(ctx), what=what, scaled=scaled)
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
    return what, arrays


def _ranges(arrays: dict[str, np.ndarray], n_keys: int, what: str) -> None:
    m, h, g = arrays["max_weight"], arrays["entropy"], arrays["grad_norm"]
    if (m < 1 / n_keys - EPS).any() or (m > 1 + EPS).any():
        fail(f"{what}['max_weight'] 应在 [1/n_keys, 1] = [{1 / n_keys:.3g}, 1] 之间"
             f"（n_keys 个权重之和为 1，最大的至少是平均值），得到的最小值 {m.min():.4g}、最大值 {m.max():.4g}。")
    if (h < -EPS).any() or (h > np.log(n_keys) + EPS).any():
        fail(f"{what}['entropy'] 应在 [0, ln n_keys] = [0, {np.log(n_keys):.4g}] 之间，"
             f"得到的最小值 {h.min():.4g}、最大值 {h.max():.4g}。\n提示：先通过 softmax_entropy 的检查。")
    if (g < -EPS).any():
        fail(f"{what}['grad_norm'] 是范数，不能为负。")


def _binary_entropy(m: np.ndarray) -> np.ndarray:
    rest = np.clip(1 - m, 0.0, 1.0)
    return -m * np.log(np.clip(m, 1e-300, None)) - rest * np.log(np.where(rest > 0, rest, 1.0))


def _paired(arrays: dict[str, np.ndarray], n_keys: int, what: str) -> None:
    """Each trial's three numbers must be able to come from one vector of weights."""
    m, h, g = (np.clip(arrays["max_weight"], 1 / n_keys, 1.0), arrays["entropy"], arrays["grad_norm"])
    low = -np.log(m)
    high = _binary_entropy(m) + (1 - m) * np.log(n_keys - 1)
    bad_h = int(np.sum((h < low - 1e-5) | (h > high + 1e-5)))
    if bad_h:
        fail(f"{what}：{bad_h} 次试验的熵与最大权重对不上（最大权重为 m 时，熵只能在 −ln m 与 "
             f"−m·ln m − (1 − m)·ln((1 − m)/(n_keys − 1)) 之间）。\n可能的原因：{CHAIN_UNPAIRED.describe()}")
    bound = 2 * (1 - m) * (np.sqrt(n_keys) + 8) + 1e-9
    bad_g = int(np.sum(g > bound))
    if bad_g:
        # ‖u‖² has mean n_keys and variance 2·n_keys: the raw u, whatever the weights were
        raw_u = abs(float(np.mean(g**2)) - n_keys) <= Z * np.sqrt(2 * n_keys / g.size)
        cause = (f"{GRAD_NO_SOFTMAX.describe()}（chain_experiment 用到的梯度：它的大小与权重无关）"
                 if raw_u else CHAIN_UNPAIRED.describe())
        fail(f"{what}：{bad_g} 次试验的梯度范数大于 2·(1 − 最大权重)·(√n_keys + 8)：这样大的梯度不可能出自"
             f"这组权重（‖Jᵀu‖ ≤ 2(1 − m)·‖u‖，而 ‖u‖ 几乎不可能超过 √n_keys + 8）。\n可能的原因：{cause}")


def _two_key_formula(arrays: dict[str, np.ndarray], what: str) -> None:
    """Two keys: (g / m(1 − m))² = 2(u₁ − u₂)², mean 4 and variance 32, whatever z was."""
    m, g = arrays["max_weight"], arrays["grad_norm"]
    keep = (1 - m) > 1e-6  # where m(1 − m) still has digits left
    ratio2 = (g[keep] / (m[keep] * (1 - m[keep]))) ** 2
    tol = Z * np.sqrt(32 / max(ratio2.size, 1))
    mean = float(ratio2.mean()) if ratio2.size else float("nan")
    if np.isfinite(mean) and abs(mean - 4) <= tol:
        return
    cause = ""
    if abs(mean - 2) <= Z * 2 / np.sqrt(max(ratio2.size, 1)):
        cause = f"\n可能的原因：{JAC_DIAGONAL.describe()}（chain_experiment 用到的梯度）"
    elif abs(float(np.mean(g**2)) - 2) <= Z * 2 / np.sqrt(g.size):
        cause = f"\n可能的原因：{GRAD_NO_SOFTMAX.describe()}（chain_experiment 用到的梯度）"
    elif np.corrcoef(np.log(g[keep] + 1e-300), np.log(m[keep] * (1 - m[keep])))[0, 1] < 0.25:
        cause = f"\n可能的原因：{CHAIN_UNPAIRED.describe()}"
    fail(f"{what}：两个 Key 时 J = m(1 − m)·[[1, −1], [−1, 1]]（m 为最大权重），所以"
         f"(grad_norm / (m(1 − m)))² = 2(u₁ − u₂)²，对所有试验的平均应接近 4（容差 ±{tol:.2g}），"
         f"得到 {mean:.4g}：梯度不是 u·softmax(z) 对 z 的梯度 Jᵀu。{cause}")


def _within(arrays: dict[str, np.ndarray], target: dict[str, tuple[float, float]], n: int,
            n_ref: int) -> dict[str, float]:
    """Statistic -> how far (in tolerances) the student's mean is from ``target``'s."""
    out = {}
    for key in CHAIN_KEYS:
        mean, sd = target[key]
        tol = Z * sd * np.sqrt(1 / n + 1 / n_ref) + 1e-3
        out[key] = abs(float(arrays[key].mean()) - mean) / tol
    return out


def _scale_candidates(d: int, scaled: bool) -> list[tuple[str, float]]:
    """Wrong scalings of the scores: (label, scale)."""
    if scaled:
        return [(DIVIDE_DK.describe(), 1 / d), (f"{NO_SCALING.describe()}（scaled=True 被忽略了）", 1.0)]
    return [("scaled=False 时仍然除以了 √d_k：这里要看的正是不缩放的打分。", 1 / np.sqrt(d))]


#: Monte Carlo trials of the reference means, and of each wrong scaling tried to explain a miss.
N_REF, N_WRONG = 40_000, 20_000


def _means(ctx: Context, arrays: dict[str, np.ndarray], what: str, d: int, n_keys: int,
           scaled: bool) -> None:
    n = arrays["max_weight"].size
    truth = _chain_reference(ctx.rng, d, n_keys, 1 / np.sqrt(d) if scaled else 1.0, N_REF)
    off = _within(arrays, truth, n, N_REF)
    if max(off.values()) <= 1:
        return
    cause = ("\n提示：每次试验从 rng 抽 q、n_keys 个 Key 和 u（都服从 N(0, 1)），打分 z_j = k_j·q"
             "（scaled=True 时再除以 √d_k）。")
    for label, scale in _scale_candidates(d, scaled):
        wrong = _chain_reference(ctx.rng, d, n_keys, scale, N_WRONG)
        if max(_within(arrays, wrong, n, N_WRONG).values()) <= 1:
            cause = f"\n可能的原因：{label}"
            break
    lines = []
    for key in CHAIN_KEYS:
        if off[key] > 1:
            mean, sd = truth[key]
            tol = Z * sd * np.sqrt(1 / n + 1 / N_REF) + 1e-3
            lines.append(f"{_CHAIN_NAMES[key]}（'{key}' 的平均）应接近 {mean:.3f}"
                         f"（蒙特卡洛估计，容差 ±{tol:.3f}），得到 {float(arrays[key].mean()):.4g}")
    fail(f"{what}：" + "；".join(lines) + f"。{cause}")


@check("q2.chain", "chain_experiment：每次试验的最大权重、熵、梯度范数（同一组打分），缩放与不缩放")
def chain(ctx: Context, *, chain_experiment) -> None:
    # Scaled with two keys: the gradient formula is seen trial by trial. Unscaled with
    # several keys: most trials are sharp there, so a number from another draw shows.
    cases = [(True, int(ctx.rng.integers(16, 129)), 2, 800),
             (False, int(ctx.rng.integers(16, 129)), int(ctx.rng.integers(4, 13)), 500)]
    runs = [(*_chain_call(ctx, chain_experiment, d, k, n, scaled), d, k, scaled)
            for scaled, d, k, n in cases]
    for what, arrays, _d, n_keys, _scaled in runs:
        _ranges(arrays, n_keys, what)
        _paired(arrays, n_keys, what)
    _two_key_formula(runs[0][1], runs[0][0])
    for what, arrays, d, n_keys, scaled in runs:
        _means(ctx, arrays, what, d, n_keys, scaled)
