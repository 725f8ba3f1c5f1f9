"""Sample students of q2: correct alternatives and named mistakes.

Each mistake is the source solution with ``edits`` applied; it must lose exactly the
cells in ``loses`` and its feedback must name ``feedback``. Host-side only: nothing
here is loaded where student code runs."""

from __future__ import annotations

from ..bank.q2 import (
    DIVIDE_DK,
    GROWTH_LINEAR,
    JAC_DIAGONAL,
    NO_SCALING,
    NONCENTRED,
    RNG_UNUSED,
    SLOPE_NO_LOG,
    UNIFORM,
    VARIANCE_VS_STD,
)
from ..variants import Edit, Variant

ALTERNATIVES = [
    Variant("einsum_loops", "einsum 与显式循环、无偏方差、闭式斜率（正确的另一种写法）", edits=(
        Edit("samples_impl",
             "    q = rng.standard_normal((n_samples, d_k))\n"
             "    k = rng.standard_normal((n_samples, d_k))\n"
             "    return np.sum(q * k, axis=1)",
             "    qk = rng.normal(0.0, 1.0, size=(2, n_samples, d_k))\n"
             "    return np.einsum('nd,nd->n', qk[0], qk[1])"),
        Edit("std_impl", "    return float(np.std(s))",
             "    return float(np.sqrt(np.var(s, ddof=1)))"),
        Edit("slope_impl",
             "    return float(np.polyfit(np.log(x), np.log(y), 1)[0])",
             "    lx = [float(np.log(v)) for v in x]\n"
             "    ly = [float(np.log(v)) for v in y]\n"
             "    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)\n"
             "    num = sum((a - mx) * (b - my) for a, b in zip(lx, ly))\n"
             "    den = sum((a - mx) ** 2 for a in lx)\n"
             "    return num / den"),
        Edit("maxweight_impl",
             "    q = rng.standard_normal((n_trials, 1, d_k))\n"
             "    keys = rng.standard_normal((n_trials, n_keys, d_k))\n"
             "    scores = np.sum(q * keys, axis=-1)\n"
             "    if scaled:\n"
             "        scores = scores / np.sqrt(d_k)\n"
             "    return float(np.mean(np.max(softmax(scores, axis=-1), axis=-1)))",
             "    best = []\n"
             "    for _ in range(n_trials):\n"
             "        q = rng.standard_normal(d_k)\n"
             "        keys = rng.standard_normal((n_keys, d_k))\n"
             "        scores = np.einsum('kd,d->k', keys, q)\n"
             "        if scaled:\n"
             "            scores = scores / d_k ** 0.5\n"
             "        best.append(softmax(scores).max())\n"
             "    return float(np.mean(best))"),
        Edit("jacobian_impl",
             "    return np.diag(p) - np.outer(p, p)",
             "    n = p.size\n"
             "    J = np.zeros((n, n))\n"
             "    for i in range(n):\n"
             "        for j in range(n):\n"
             "            J[i, j] = p[i] * ((1.0 if i == j else 0.0) - p[j])\n"
             "    return J"),
    )),
    Variant("lstsq_sum_float32", "lstsq 拟合、SymPy 求和、先缩放再求标准差、float32 打分", edits=(
        Edit("std_impl",
             "    s = dot_product_samples(d_k, n_samples, rng)\n"
             "    if scaled:\n"
             "        s = s / np.sqrt(d_k)\n"
             "    return float(np.std(s))",
             "    scale = 1 / np.sqrt(d_k) if scaled else 1.0\n"
             "    return float(np.sqrt(np.mean((scale * dot_product_samples(d_k, n_samples, rng)) ** 2)))"),
        Edit("growth_impl", "    return float(np.sqrt(d_to / d_from))",
             "    import math\n    return math.sqrt(d_to) / math.sqrt(d_from)"),
        Edit("variance_impl", "dot_product_variance = d_k * sigma_q**2 * sigma_k**2",
             "i = sp.Symbol('i', integer=True, positive=True)\n"
             "dot_product_variance = sp.Sum(sigma_q**2 * sigma_k**2, (i, 1, d_k)).doit()"),
        Edit("slope_impl",
             "    return float(np.polyfit(np.log(x), np.log(y), 1)[0])",
             "    A = np.column_stack([np.log10(x), np.ones(len(x))])\n"
             "    coef, *_ = np.linalg.lstsq(A, np.log10(y), rcond=None)\n"
             "    return float(coef[0])"),
        Edit("maxweight_impl",
             "    scores = np.sum(q * keys, axis=-1)",
             "    scores = np.sum(q.astype(np.float32) * keys.astype(np.float32), axis=-1)"),
        Edit("jacobian_impl",
             "    return np.diag(p) - np.outer(p, p)",
             "    return p[:, None] * (np.eye(p.size) - p[None, :])"),
    )),
]

MISTAKES = [
    Variant("divide_by_dk", "缩放时除以 d_k 而不是 √d_k", edits=(
        Edit("std_impl", "        s = s / np.sqrt(d_k)", "        s = s / d_k"),
        Edit("maxweight_impl", "        scores = scores / np.sqrt(d_k)", "        scores = scores / d_k"),
    ), loses=frozenset({"test_std", "test_max_weight"}), feedback=(DIVIDE_DK.label,)),
    Variant("scaled_ignored", "忽略 scaled 参数：始终不缩放", edits=(
        Edit("std_impl", "        s = s / np.sqrt(d_k)", "        pass"),
        Edit("maxweight_impl", "        scores = scores / np.sqrt(d_k)", "        pass"),
    ), loses=frozenset({"test_std", "test_max_weight"}), feedback=(NO_SCALING.label,)),
    Variant("uniform_sampling", "用 U(−1, 1) 均匀分布抽样", edits=(
        Edit("samples_impl",
             "    q = rng.standard_normal((n_samples, d_k))\n"
             "    k = rng.standard_normal((n_samples, d_k))",
             "    q = rng.uniform(-1, 1, size=(n_samples, d_k))\n"
             "    k = rng.uniform(-1, 1, size=(n_samples, d_k))"),
    ), loses=frozenset({"test_samples", "test_std"}), feedback=(UNIFORM.label,)),
    Variant("noncentred_sampling", "用 rng.random()（[0, 1) 均匀，均值 1/2）抽样", edits=(
        Edit("samples_impl",
             "    q = rng.standard_normal((n_samples, d_k))\n"
             "    k = rng.standard_normal((n_samples, d_k))",
             "    q = rng.random((n_samples, d_k))\n"
             "    k = rng.random((n_samples, d_k))"),
    ), loses=frozenset({"test_samples", "test_std"}), feedback=(NONCENTRED.label,)),
    Variant("rng_not_used", "用 np.random 的全局状态，不用传入的 rng", edits=(
        Edit("samples_impl",
             "    q = rng.standard_normal((n_samples, d_k))\n"
             "    k = rng.standard_normal((n_samples, d_k))",
             "    q = np.random.standard_normal((n_samples, d_k))\n"
             "    k = np.random.standard_normal((n_samples, d_k))"),
    ), loses=frozenset({"test_samples_rng"}), feedback=(RNG_UNUSED.label,)),
    Variant("growth_linear", "以为典型大小随 d_k 线性增长（2 → 200 是 100 倍）", edits=(
        Edit("growth_impl", "    return float(np.sqrt(d_to / d_from))", "    return d_to / d_from"),
    ), loses=frozenset({"test_growth_factor"}), feedback=(GROWTH_LINEAR.label,)),
    Variant("variance_as_std", "把标准差 √d_k·σ_q·σ_k 当成方差", edits=(
        Edit("variance_impl", "dot_product_variance = d_k * sigma_q**2 * sigma_k**2",
             "dot_product_variance = sp.sqrt(d_k) * sigma_q * sigma_k"),
    ), loses=frozenset({"test_variance_symbolic"}), feedback=(VARIANCE_VS_STD.label,)),
    Variant("slope_without_log", "拟合斜率前没有取对数", edits=(
        Edit("slope_impl", "    return float(np.polyfit(np.log(x), np.log(y), 1)[0])",
             "    return float(np.polyfit(x, y, 1)[0])"),
    ), loses=frozenset({"test_loglog_slope"}), feedback=(SLOPE_NO_LOG.label,)),
    Variant("jacobian_diagonal_only", "雅可比矩阵只算对角线 p(1 − p)", edits=(
        Edit("jacobian_impl", "    return np.diag(p) - np.outer(p, p)", "    return np.diag(p * (1 - p))"),
    ), loses=frozenset({"test_softmax_jacobian"}), feedback=(JAC_DIAGONAL.label,)),
]
