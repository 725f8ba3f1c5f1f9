"""Sample students of q1: correct alternatives and named mistakes.

Each mistake is the source solution with ``edits`` applied; it must lose exactly the
cells in ``loses`` and its feedback must name ``feedback``. Host-side only: nothing
here is loaded where student code runs."""

from __future__ import annotations

from .. import misconceptions as mc
from ..bank import q1 as bank
from ..variants import Edit, Variant

ALTERNATIVES = [
    Variant("einsum_and_loops", "用 einsum 与显式循环实现（正确的另一种写法）", edits=(
        Edit("softmax_impl", "    shifted = z - np.max(z, axis=axis, keepdims=True)\n"
             "    e = np.exp(shifted)\n    return e / np.sum(e, axis=axis, keepdims=True)",
             "    z = np.moveaxis(np.asarray(z, dtype=float), axis, -1)\n"
             "    out = np.empty_like(z)\n"
             "    for idx in np.ndindex(*z.shape[:-1]):\n"
             "        row = np.exp(z[idx] - z[idx].max())\n"
             "        out[idx] = row / row.sum()\n"
             "    return np.moveaxis(out, -1, axis)"),
        Edit("attention_impl", "    scores = Q @ K.T / np.sqrt(d_k)",
             "    scores = np.einsum('qd,kd->qk', Q, K) / np.sqrt(d_k)"),
        Edit("attention_impl", "    return attention_weights(Q, K) @ V",
             "    return np.einsum('qk,kv->qv', attention_weights(Q, K), V)"),
    )),
    Variant("logsumexp_lists", "log-sum-exp 写法，并先把输入转成数组（列表也能用）", edits=(
        Edit("softmax_impl", "    shifted = z - np.max(z, axis=axis, keepdims=True)\n"
             "    e = np.exp(shifted)\n    return e / np.sum(e, axis=axis, keepdims=True)",
             "    m = np.max(z, axis=axis, keepdims=True)\n"
             "    lse = m + np.log(np.sum(np.exp(z - m), axis=axis, keepdims=True))\n"
             "    return np.exp(z - lse)"),
        Edit("attention_impl", "    Q, K = np.asarray(Q), np.asarray(K)",
             "    Q, K = np.array(Q, dtype=np.float64), np.array(K, dtype=np.float64)"),
    )),
    Variant("closed_forms", "用精确公式写 position1_max_weight，tanh 形式的 SymPy 答案，倍数取范数之比",
            edits=(
        Edit("temperature_impl", "    eye = np.eye(2)\n"
             "    _, weights = self_attention(eye, c * eye, eye, 2 * eye)\n"
             "    return float(np.max(weights[0]))",
             "    z = c / np.sqrt(2)\n    return 1 / (1 + np.exp(-abs(z)))"),
        Edit("symbolic_impl", "w11_of_c = sp.exp(c * s) / (sp.exp(c * s) + 1)",
             "w11_of_c = sp.Rational(1, 2) + sp.tanh(c / (2 * sp.sqrt(2))) / 2"),
        Edit("hand_impl", "output_scale_factor = float(output_3I[0, 0] / output_2I[0, 0])",
             "output_scale_factor = np.linalg.norm(output_3I) / np.linalg.norm(output_2I)"),
        Edit("hand_impl", "weights_changed = not np.allclose(weights_2I, weights_3I)",
             "weights_changed = bool(np.abs(weights_3I - weights_2I).max() > 1e-12)"),
    )),
]

MISTAKES = [
    Variant("no_sqrt_dk", "打分忘了除以 √d_k",
            edits=(Edit("attention_impl", "    scores = Q @ K.T / np.sqrt(d_k)", "    scores = Q @ K.T"),),
            loses=frozenset({"test_attention_weights", "test_attention", "test_self_attention",
                             "test_hand_example", "test_weights_3Wq", "test_temperature"}),
            feedback=(mc.CATALOG["no_scaling"].label,)),
    Variant("softmax_wrong_axis", "attention_weights 里 softmax 沿 Query 方向（axis=0）",
            edits=(Edit("attention_impl", "    return softmax(scores, axis=-1)",
                        "    return softmax(scores, axis=0)"),),
            loses=frozenset({"test_attention_weights", "test_attention", "test_self_attention"}),
            feedback=(mc.CATALOG["softmax_query_axis"].label,)),
    Variant("naive_softmax", "softmax 不减最大值，大分数溢出",
            edits=(Edit("softmax_impl", "    shifted = z - np.max(z, axis=axis, keepdims=True)",
                        "    shifted = z"),),
            loses=frozenset({"test_softmax_stable"}),
            feedback=(mc.CATALOG["naive_softmax_overflow"].label,)),
    Variant("weights_as_output", "attention 返回权重而不是输出",
            edits=(Edit("attention_impl", "    return attention_weights(Q, K) @ V",
                        "    return attention_weights(Q, K)"),),
            loses=frozenset({"test_attention", "test_self_attention", "test_value_scaling",
                             "test_hand_example", "test_output_scale_factor"}),
            feedback=(mc.CATALOG["weights_instead_of_output"].label,)),
    Variant("k_as_v", "self_attention 用 K 代替 V 做加权求和",
            edits=(Edit("attention_impl", "    output = attention(Q, K, V)",
                        "    output = attention(Q, K, K)"),),
            loses=frozenset({"test_self_attention", "test_value_scaling", "test_hand_example",
                             "test_output_scale_factor"}),
            feedback=(mc.CATALOG["k_as_v"].label,)),
    Variant("weights_from_v", "self_attention 的权重用 V 打分：只改 W_v 权重也会变",
            edits=(Edit("attention_impl", "    weights = attention_weights(Q, K)",
                        "    weights = attention_weights(Q, V)"),),
            loses=frozenset({"test_self_attention", "test_value_scaling", "test_hand_example",
                             "test_weights_changed", "test_weights_3Wq", "test_temperature"}),
            feedback=(mc.CATALOG["weights_depend_on_v"].label,)),
    Variant("ratio_is_coefficient", "以为输出变成原来的 3 倍（把 W_v 的新系数当成倍数）",
            edits=(Edit("hand_impl",
                        "output_scale_factor = float(output_3I[0, 0] / output_2I[0, 0])",
                        "output_scale_factor = 3.0"),),
            loses=frozenset({"test_output_scale_factor"}),
            feedback=(bank.RATIO_IS_COEFFICIENT.label,)),
    Variant("c_on_wv", "position1_max_weight 把 c 乘在了 W_v 上",
            edits=(Edit("temperature_impl",
                        "    _, weights = self_attention(eye, c * eye, eye, 2 * eye)",
                        "    _, weights = self_attention(eye, eye, eye, c * eye)"),),
            loses=frozenset({"test_temperature"}),
            feedback=(bank.C_ON_WV.label,)),
    Variant("weights_linear_in_c", "以为 W_q = cI 时权重也变成 c 倍：w11_of_c = c·w11",
            edits=(Edit("symbolic_impl", "w11_of_c = sp.exp(c * s) / (sp.exp(c * s) + 1)",
                        "w11_of_c = c * w11_exact"),),
            loses=frozenset({"test_w11_of_c"}),
            feedback=(bank.WEIGHTS_LINEAR_IN_C.label,)),
]
