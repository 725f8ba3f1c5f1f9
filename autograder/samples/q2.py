"""Sample students of q2: correct alternatives and named mistakes.

Each mistake is the source solution with ``edits`` applied; it must lose exactly the
cells in ``loses`` and its feedback must name ``feedback``. Host-side only: nothing
here is loaded where student code runs."""

from __future__ import annotations

from ..bank.q2 import (
    ALIGNED_CANCEL,
    ALIGNED_FLAT,
    ALIGNED_INDEPENDENT_KEY,
    ALIGNED_SHARED_R,
    CHAIN_UNPAIRED,
    COSINE,
    DIVIDE_DK,
    ENTROPY_NAN,
    GRAD_NO_SOFTMAX,
    GROWTH_VARIANCE,
    JAC_DIAGONAL,
    MEAN_AS_SIZE,
    NO_SCALING,
    NONCENTRED,
    RNG_UNUSED,
    SHARED_QUERY,
    SLOPE_NO_LOG,
    SQUARE_AS_SIZE,
    STD_NOT_SAMPLED,
    UNIFORM,
    VARIANCE_VS_STD,
)
from .variants import Edit, Variant

_SAMPLES = ("    q = rng.standard_normal((n_samples, d_k))\n"
            "    k = rng.standard_normal((n_samples, d_k))")

ALTERNATIVES = [
    Variant("einsum_loops", "einsum 与显式循环、无偏方差、闭式斜率、逐次试验（正确的另一种写法）", edits=(
        Edit("hand_aligned_impl", "dot_aligned_200 = 200.0", "dot_aligned_200 = float(np.ones(200) @ np.ones(200))"),
        Edit("hand_scaled_impl", "scaled_aligned_200 = 200 / np.sqrt(200)", "scaled_aligned_200 = np.sqrt(200)"),
        Edit("hand_mean_square_impl", "mean_square_2 = (2**2 + 0**2 + 0**2 + (-2)**2) / 4",
             "mean_square_2 = np.mean([(a + b) ** 2 for a in (1, -1) for b in (1, -1)])"),
        Edit("hand_typical_impl", "typical_random_200 = np.sqrt(200 * 1)", "typical_random_200 = 14.14"),
        Edit("samples_impl",
             _SAMPLES + "\n    return np.sum(q * k, axis=1)",
             "    qk = rng.normal(0.0, 1.0, size=(2, n_samples, d_k))\n"
             "    return np.einsum('nd,nd->n', qk[0], qk[1])"),
        Edit("std_impl", "    return float(np.std(s))",
             "    return float(np.sqrt(np.var(s, ddof=1)))"),
        Edit("growth_impl",
             "    if scaled:\n        return 1.0\n    return float(np.sqrt(d_to / d_from))",
             "    import math\n    return 1.0 if scaled else math.sqrt(d_to) / math.sqrt(d_from)"),
        Edit("aligned_impl",
             "    q = rng.standard_normal((n_samples, d_k))\n"
             "    r = rng.standard_normal((n_samples, d_k))\n"
             "    k = cos_theta * q + np.sqrt(1 - cos_theta**2) * r\n"
             "    return np.sum(q * k, axis=1)",
             "    out = np.empty(n_samples)\n"
             "    for t in range(n_samples):\n"
             "        q = rng.normal(size=d_k)\n"
             "        k = cos_theta * q + (1 - cos_theta**2) ** 0.5 * rng.normal(size=d_k)\n"
             "        out[t] = np.einsum('d,d->', q, k)\n"
             "    return out"),
        Edit("aligned_growth_impl",
             "    if scaled:\n        return float(np.sqrt(d_to / d_from))\n    return float(d_to / d_from)",
             "    ratio = d_to / d_from\n    return ratio ** 0.5 if scaled else ratio"),
        Edit("slope_impl",
             "    return float(np.polyfit(np.log(x), np.log(y), 1)[0])",
             "    lx = [float(np.log(v)) for v in x]\n"
             "    ly = [float(np.log(v)) for v in y]\n"
             "    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)\n"
             "    num = sum((a - mx) * (b - my) for a, b in zip(lx, ly))\n"
             "    den = sum((a - mx) ** 2 for a in lx)\n"
             "    return num / den"),
        Edit("entropy_impl",
             "    log_p = np.log(np.where(p > 0, p, 1.0))\n"
             "    return -np.sum(p * log_p, axis=-1)",
             "    with np.errstate(divide='ignore', invalid='ignore'):\n"
             "        terms = p * np.log(p)\n"
             "    return -np.sum(np.nan_to_num(terms), axis=-1)"),
        Edit("jacobian_impl",
             "    return np.diag(p) - np.outer(p, p)",
             "    n = p.size\n"
             "    J = np.zeros((n, n))\n"
             "    for i in range(n):\n"
             "        for j in range(n):\n"
             "            J[i, j] = p[i] * ((1.0 if i == j else 0.0) - p[j])\n"
             "    return J"),
        Edit("score_gradient_impl",
             "    return softmax_jacobian(z).T @ np.asarray(u, dtype=float)",
             "    p = softmax(np.asarray(z, dtype=float))\n"
             "    u = np.asarray(u, dtype=float)\n"
             "    return p * (u - np.dot(p, u))"),
        Edit("chain_impl",
             "    grads = p * (u - np.sum(p * u, axis=-1, keepdims=True))  # 第 t 行就是 score_gradient(z[t], u[t])\n"
             "    return {\"max_weight\": p.max(axis=-1), \"entropy\": softmax_entropy(p),\n"
             "            \"grad_norm\": np.linalg.norm(grads, axis=-1)}",
             "    out = {\"max_weight\": [], \"entropy\": [], \"grad_norm\": []}\n"
             "    for t in range(n_trials):\n"
             "        out[\"max_weight\"].append(p[t].max())\n"
             "        out[\"entropy\"].append(softmax_entropy(p[t]))\n"
             "        out[\"grad_norm\"].append(np.sqrt(np.sum(score_gradient(z[t], u[t]) ** 2)))\n"
             "    return {key: np.array(values) for key, values in out.items()}"),
    )),
    Variant("lstsq_sum_float32", "lstsq 拟合、SymPy 求和、先缩放再求标准差、float32 打分", edits=(
        Edit("hand_aligned_impl", "dot_aligned_200 = 200.0", "dot_aligned_200 = 200"),
        Edit("hand_mean_square_impl", "mean_square_2 = (2**2 + 0**2 + 0**2 + (-2)**2) / 4", "mean_square_2 = 2"),
        Edit("hand_typical_impl", "typical_random_200 = np.sqrt(200 * 1)",
             "typical_random_200 = np.float32(200) ** 0.5"),
        Edit("std_impl",
             "    s = dot_product_samples(d_k, n_samples, rng)\n"
             "    if scaled:\n"
             "        s = s / np.sqrt(d_k)\n"
             "    return float(np.std(s))",
             "    scale = 1 / np.sqrt(d_k) if scaled else 1.0\n"
             "    return float(np.sqrt(np.mean((scale * dot_product_samples(d_k, n_samples, rng)) ** 2)))"),
        Edit("aligned_impl",
             "    k = cos_theta * q + np.sqrt(1 - cos_theta**2) * r\n"
             "    return np.sum(q * k, axis=1)",
             "    s = np.sin(np.arccos(cos_theta))\n"
             "    return cos_theta * np.sum(q * q, axis=1) + s * np.sum(q * r, axis=1)"),
        Edit("variance_impl", "dot_product_variance = d_k * sigma_q**2 * sigma_k**2",
             "i = sp.Symbol('i', integer=True, positive=True)\n"
             "dot_product_variance = sp.Sum(sigma_q**2 * sigma_k**2, (i, 1, d_k)).doit()"),
        Edit("slope_impl",
             "    return float(np.polyfit(np.log(x), np.log(y), 1)[0])",
             "    A = np.column_stack([np.log10(x), np.ones(len(x))])\n"
             "    coef, *_ = np.linalg.lstsq(A, np.log10(y), rcond=None)\n"
             "    return float(coef[0])"),
        Edit("entropy_impl",
             "    log_p = np.log(np.where(p > 0, p, 1.0))\n"
             "    return -np.sum(p * log_p, axis=-1)",
             "    safe = np.clip(p, 1e-300, None)\n"
             "    return -np.sum(np.where(p > 0, p * np.log(safe), 0.0), axis=-1)"),
        Edit("jacobian_impl",
             "    return np.diag(p) - np.outer(p, p)",
             "    return p[:, None] * (np.eye(p.size) - p[None, :])"),
        Edit("chain_impl",
             "    z = np.einsum(\"tkd,td->tk\", keys, q)",
             "    z = np.sum(q[:, None, :].astype(np.float32) * keys.astype(np.float32), axis=-1)\n"
             "    z = z.astype(np.float64)"),
    )),
]

_CHAIN_SCALE = "        z = z / np.sqrt(d_k)"

_GRADS = "    grads = p * (u - np.sum(p * u, axis=-1, keepdims=True))  # 第 t 行就是 score_gradient(z[t], u[t])"

MISTAKES = [
    Variant("hand_cosine", "手算：把方向相同的两个向量的点积当成 cos θ = 1", edits=(
        Edit("hand_aligned_impl", "dot_aligned_200 = 200.0", "dot_aligned_200 = 1.0"),
    ), loses=frozenset({"test_hand_aligned"}), feedback=(COSINE.label,)),
    Variant("hand_divide_dk", "手算：打分除以 d_k 而不是 √d_k", edits=(
        Edit("hand_scaled_impl", "scaled_aligned_200 = 200 / np.sqrt(200)", "scaled_aligned_200 = 200 / 200"),
    ), loses=frozenset({"test_hand_aligned_scaled"}), feedback=(DIVIDE_DK.label,)),
    Variant("hand_mean_as_size", "手算：求 q·k 的平均（0）而不是 (q·k)² 的平均", edits=(
        Edit("hand_mean_square_impl", "mean_square_2 = (2**2 + 0**2 + 0**2 + (-2)**2) / 4",
             "mean_square_2 = (2 + 0 + 0 + (-2)) / 4"),
    ), loses=frozenset({"test_hand_mean_square"}), feedback=(MEAN_AS_SIZE.label,)),
    Variant("hand_forgot_sqrt", "手算：把均方 200 当成典型大小", edits=(
        Edit("hand_typical_impl", "typical_random_200 = np.sqrt(200 * 1)", "typical_random_200 = 200 * 1"),
    ), loses=frozenset({"test_hand_typical"}), feedback=(SQUARE_AS_SIZE.label,)),
    Variant("divide_by_dk", "缩放时除以 d_k 而不是 √d_k", edits=(
        Edit("std_impl", "        s = s / np.sqrt(d_k)", "        s = s / d_k"),
        Edit("chain_impl", _CHAIN_SCALE, "        z = z / d_k"),
    ), loses=frozenset({"test_std", "test_chain"}), feedback=(DIVIDE_DK.label,)),
    Variant("scaled_ignored", "忽略 scaled 参数：始终不缩放", edits=(
        Edit("std_impl", "        s = s / np.sqrt(d_k)", "        pass"),
        Edit("chain_impl", _CHAIN_SCALE, "        pass"),
    ), loses=frozenset({"test_std", "test_chain"}), feedback=(NO_SCALING.label,)),
    Variant("uniform_sampling", "用 U(−1, 1) 均匀分布抽样", edits=(
        Edit("samples_impl", _SAMPLES,
             "    q = rng.uniform(-1, 1, size=(n_samples, d_k))\n"
             "    k = rng.uniform(-1, 1, size=(n_samples, d_k))"),
    ), loses=frozenset({"test_samples", "test_std"}), feedback=(UNIFORM.label,)),
    Variant("noncentred_sampling", "用 rng.random()（[0, 1) 均匀，均值 1/2）抽样", edits=(
        Edit("samples_impl", _SAMPLES,
             "    q = rng.random((n_samples, d_k))\n"
             "    k = rng.random((n_samples, d_k))"),
    ), loses=frozenset({"test_samples", "test_std"}), feedback=(NONCENTRED.label,)),
    Variant("rng_not_used", "用 np.random 的全局状态，不用传入的 rng", edits=(
        Edit("samples_impl", _SAMPLES,
             "    q = np.random.standard_normal((n_samples, d_k))\n"
             "    k = np.random.standard_normal((n_samples, d_k))"),
    ), loses=frozenset({"test_samples_rng"}), feedback=(RNG_UNUSED.label,)),
    Variant("independent_growth_as_variance", "读法 A：把方差的倍数当成典型大小的倍数（2 → 200 答 100 倍）", edits=(
        Edit("growth_impl", "    return float(np.sqrt(d_to / d_from))", "    return d_to / d_from"),
    ), loses=frozenset({"test_independent_growth"}), feedback=(GROWTH_VARIANCE.label,), visible=False),
    Variant("aligned_as_independent", "读法 B：以为方向差不多的向量也按 √d_k 增长（2 → 200 答 10 倍）", edits=(
        Edit("aligned_growth_impl", "    return float(d_to / d_from)", "    return float(np.sqrt(d_to / d_from))"),
    ), loses=frozenset({"test_aligned_growth"}), feedback=(ALIGNED_CANCEL.label,), visible=False),
    Variant("aligned_scaled_flat", "读法 B：以为除以 √d_k 后打分不再随 d_k 变化", edits=(
        Edit("aligned_growth_impl", "        return float(np.sqrt(d_to / d_from))", "        return 1.0"),
    ), loses=frozenset({"test_aligned_growth"}), feedback=(ALIGNED_FLAT.label,), visible=False),
    Variant("aligned_key_independent", "读法 B：Key 独立抽取，没有与 Query 方向相近", edits=(
        Edit("aligned_impl", "    k = cos_theta * q + np.sqrt(1 - cos_theta**2) * r", "    k = r"),
    ), loses=frozenset({"test_aligned_samples"}), feedback=(ALIGNED_INDEPENDENT_KEY.label,)),
    Variant("variance_as_std", "把标准差 √d_k·σ_q·σ_k 当成方差", edits=(
        Edit("variance_impl", "dot_product_variance = d_k * sigma_q**2 * sigma_k**2",
             "dot_product_variance = sp.sqrt(d_k) * sigma_q * sigma_k"),
    ), loses=frozenset({"test_variance_symbolic"}), feedback=(VARIANCE_VS_STD.label,)),
    Variant("slope_without_log", "拟合斜率前没有取对数", edits=(
        Edit("slope_impl", "    return float(np.polyfit(np.log(x), np.log(y), 1)[0])",
             "    return float(np.polyfit(x, y, 1)[0])"),
    ), loses=frozenset({"test_loglog_slope"}), feedback=(SLOPE_NO_LOG.label,)),
    Variant("entropy_nan_at_zero", "熵直接写 p * np.log(p)，0·ln 0 得到 NaN", edits=(
        Edit("entropy_impl",
             "    log_p = np.log(np.where(p > 0, p, 1.0))\n"
             "    return -np.sum(p * log_p, axis=-1)",
             "    return -np.sum(p * np.log(p), axis=-1)"),
    ), loses=frozenset({"test_entropy"}), feedback=(ENTROPY_NAN.label,)),
    Variant("jacobian_diagonal_only", "雅可比矩阵只算对角线 p(1 − p)", edits=(
        Edit("jacobian_impl", "    return np.diag(p) - np.outer(p, p)", "    return np.diag(p * (1 - p))"),
    ), loses=frozenset({"test_softmax_jacobian", "test_score_gradient"}), feedback=(JAC_DIAGONAL.label,)),
    Variant("score_gradient_skips_softmax", "打分的梯度直接返回 u（跳过 softmax 的雅可比矩阵）", edits=(
        Edit("score_gradient_impl",
             "    return softmax_jacobian(z).T @ np.asarray(u, dtype=float)",
             "    return np.asarray(u, dtype=float)"),
    ), loses=frozenset({"test_score_gradient"}), feedback=(GRAD_NO_SOFTMAX.label,)),
    Variant("chain_separate_draw", "多次试验：梯度范数来自另抽的一组打分（不是同一次试验的 z）", edits=(
        Edit("chain_impl", _GRADS,
             "    z2 = np.einsum(\"tkd,td->tk\", rng.standard_normal((n_trials, n_keys, d_k)),\n"
             "                   rng.standard_normal((n_trials, d_k)))\n"
             "    if scaled:\n"
             "        z2 = z2 / np.sqrt(d_k)\n"
             "    p2 = softmax(z2, axis=-1)\n"
             "    grads = p2 * (u - np.sum(p2 * u, axis=-1, keepdims=True))"),
    ), loses=frozenset({"test_chain"}), feedback=(CHAIN_UNPAIRED.label,)),
    Variant("std_formula", "dot_product_std 不抽样，直接返回理论值 √d_k（scaled 时 1）", edits=(
        Edit("std_impl", "    s = dot_product_samples(d_k, n_samples, rng)\n"
             "    if scaled:\n"
             "        s = s / np.sqrt(d_k)\n"
             "    return float(np.std(s))",
             "    return 1.0 if scaled else float(np.sqrt(d_k))"),
    ), loses=frozenset({"test_std"}), feedback=(STD_NOT_SAMPLED.label,), visible=False),
    Variant("aligned_shared_r", "读法 B：所有样本共用同一个 r（一次调用只抽一个 r）", edits=(
        Edit("aligned_impl", "    r = rng.standard_normal((n_samples, d_k))", "    r = rng.standard_normal(d_k)"),
    ), loses=frozenset({"test_aligned_samples"}), feedback=(ALIGNED_SHARED_R.label,), visible=False),
    Variant("shared_query", "抽样：所有样本共用同一个 q（一个 q 对许多 k）", edits=(
        Edit("samples_impl", _SAMPLES + "\n    return np.sum(q * k, axis=1)",
             "    q = rng.standard_normal(d_k)\n"
             "    k = rng.standard_normal((n_samples, d_k))\n"
             "    return k @ q"),
    ), loses=frozenset({"test_samples", "test_std"}), feedback=(SHARED_QUERY.label,)),
]
