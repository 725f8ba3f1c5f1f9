"""Sample students of q1: correct alternatives and named mistakes.

Each mistake is the source solution with ``edits`` applied; it must lose exactly the
cells in ``loses`` and its feedback must name ``feedback``. Host-side only: nothing
here is loaded where student code runs."""

from __future__ import annotations

from ..bank import q1 as bank
from ..bank import q1_apple, q1_context, q1_hand
from ..bank.lib import misconceptions as mc
from .variants import Edit, Variant

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
        Edit("apple_impl", "apple_weights_A, apple_A = weights_A[0], out_A[0]",
             "apple_weights_A = softmax(X_A @ X_A[0] / np.sqrt(2))\napple_A = apple_weights_A @ X_A"),
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
        Edit("answers_impl", "output_scale_factor = 1.5",
             "output_scale_factor = np.linalg.norm(output_1) / np.linalg.norm([1.340, 0.660])"),
        Edit("answers_impl", "weights_changed = False",
             "weights_changed = bool(np.abs(weights_1 - np.array([0.670, 0.330])).max() > 2e-3)"),
    )),
    Variant("hand_rounded", "手算照讲义的样子写保留 3 位小数的数", edits=(
        Edit("hand_output_impl", "weights_1 = exps_1 / exps_1.sum()", "weights_1 = np.array([0.670, 0.330])"),
        Edit("hand_output_impl", "output_1 = weights_1 @ (X @ (3 * I))", "output_1 = [2.010, 0.990]"),
        Edit("answers_impl", "output_scale_factor = 1.5", "output_scale_factor = 3 / 2"),
    )),
]

#: Core mistakes first and last (tests/test_samples.py grades the last one through the
#: engine, tests/test_nbgrader_parity.py the first), the extensions' in between.
MISTAKES = [
    # ---------------------------------------------------------------- the code
    Variant("no_sqrt_dk", "打分忘了除以 √d_k",
            edits=(Edit("attention_impl", "    scores = Q @ K.T / np.sqrt(d_k)", "    scores = Q @ K.T"),),
            loses=frozenset({"test_attention_weights", "test_attention", "test_self_attention",
                             "test_value_scaling", "test_hand_example", "test_weights_3Wq",
                             "test_temperature"}),
            feedback=(mc.CATALOG["no_scaling"].label,)),
    Variant("softmax_wrong_axis", "attention_weights 里 softmax 沿 Query 方向（axis=0）",
            edits=(Edit("attention_impl", "    return softmax(scores, axis=-1)",
                        "    return softmax(scores, axis=0)"),),
            loses=frozenset({"test_attention_weights", "test_attention", "test_self_attention",
                             "test_value_scaling"}),
            feedback=(mc.CATALOG["softmax_query_axis"].label,)),
    Variant("naive_softmax", "softmax 不减最大值，大分数溢出",
            edits=(Edit("softmax_impl", "    shifted = z - np.max(z, axis=axis, keepdims=True)",
                        "    shifted = z"),),
            loses=frozenset({"test_softmax_stable"}),
            feedback=(mc.CATALOG["naive_softmax_overflow"].label,)),
    Variant("global_max", "softmax 减去整个数组的最大值，而不是每一行的",
            edits=(Edit("softmax_impl", "    shifted = z - np.max(z, axis=axis, keepdims=True)",
                        "    shifted = z - np.max(z)"),),
            loses=frozenset({"test_softmax_stable"}),
            feedback=(mc.CATALOG["q3_global_max"].label,)),
    Variant("weights_as_output", "attention 返回权重而不是输出",
            edits=(Edit("attention_impl", "    return attention_weights(Q, K) @ V",
                        "    return attention_weights(Q, K)"),),
            loses=frozenset({"test_attention", "test_self_attention", "test_value_scaling",
                             "test_hand_example", "test_apple_outputs", "test_context_changes"}),
            feedback=(mc.CATALOG["weights_instead_of_output"].label,)),
    Variant("k_as_v", "self_attention 用 K 代替 V 做加权求和",
            edits=(Edit("attention_impl", "    output = attention(Q, K, V)",
                        "    output = attention(Q, K, K)"),),
            loses=frozenset({"test_self_attention", "test_value_scaling", "test_hand_example"}),
            feedback=(mc.CATALOG["k_as_v"].label,)),
    Variant("weights_from_v", "self_attention 的权重用 V 打分：只改 W_v 权重也会变",
            edits=(Edit("attention_impl", "    weights = attention_weights(Q, K)",
                        "    weights = attention_weights(Q, V)"),),
            loses=frozenset({"test_self_attention", "test_value_scaling", "test_hand_example",
                             "test_weights_3Wq", "test_temperature"}),
            feedback=(mc.CATALOG["weights_depend_on_v"].label,)),
    Variant("scale_sqrt_dmodel", "self_attention 自己打分，按输入维度 √d_model 缩放",
            edits=(Edit("attention_impl",
                        "    weights = attention_weights(Q, K)\n    output = attention(Q, K, V)",
                        "    weights = softmax(Q @ K.T / np.sqrt(X.shape[-1]), axis=-1)\n"
                        "    output = weights @ V"),),
            loses=frozenset({"test_self_attention", "test_value_scaling"}),
            feedback=(mc.CATALOG["scale_sqrt_dmodel"].label,), visible=False),
    Variant("dk_fixed_2", "attention_weights 里把 d_k 写死成讲义例子的 2",
            edits=(Edit("attention_impl", "    d_k = K.shape[-1]", "    d_k = 2"),),
            loses=frozenset({"test_attention_weights", "test_attention", "test_self_attention",
                             "test_value_scaling"}),
            visible=False),
    # in the hand example n = d_k = 2, so the hand step cannot see it: the code cells do
    Variant("dk_is_n", "把 d_k 当成 token 个数 n：手算除以 √n（讲义例子里 n = d_k = 2），代码除以 √n_k",
            edits=(Edit("hand_output_impl", "scores_1 / np.sqrt(2)", "scores_1 / np.sqrt(len(scores_1))"),
                   Edit("attention_impl", "    d_k = K.shape[-1]", "    d_k = K.shape[0]")),
            loses=frozenset({"test_attention_weights", "test_attention", "test_self_attention",
                             "test_value_scaling"}),
            feedback=(mc.CATALOG["dk_is_n"].label,), visible=False),
    # ---------------------------------------------------------------- the hand step
    # A slip in the weights is carried forward to output_1 (the step passes) and costs the
    # answers that rest on weights_1, which name it; weights that are not weights at all
    # (not summing to 1) cost the step too. (Exp before scaling gives the weights of no
    # scaling: one mistake now, hand_no_sqrt_dk.)
    Variant("score_uses_v", "手算打分用 Value（以为 W_v 进入打分）",
            edits=(Edit("hand_output_impl", "scores_1 = X[0] @ X.T", "scores_1 = X[0] @ (X @ (3 * I)).T"),),
            loses=frozenset({"test_weights_changed", "test_output_scale_factor", "test_hand_example"}),
            feedback=(q1_hand.SCORE_USES_V.label,)),
    Variant("hand_no_sqrt_dk", "手算没有缩放（或对缩放前的打分取 exp）",
            edits=(Edit("hand_output_impl", "scores_1 / np.sqrt(2)", "scores_1 * 1.0"),),
            loses=frozenset({"test_weights_changed", "test_output_scale_factor", "test_hand_example"}),
            feedback=(mc.CATALOG["no_scaling"].label,)),
    Variant("hand_divide_by_dk", "手算除以 d_k 而不是 √d_k",
            edits=(Edit("hand_output_impl", "scores_1 / np.sqrt(2)", "scores_1 / 2"),),
            loses=frozenset({"test_weights_changed", "test_output_scale_factor", "test_hand_example"}),
            feedback=(mc.CATALOG["divide_by_dk"].label,)),
    Variant("sum_one_term", "手算权重时，总和只加了一项",
            edits=(Edit("hand_output_impl", "weights_1 = exps_1 / exps_1.sum()", "weights_1 = exps_1 / exps_1[0]"),),
            loses=frozenset({"test_hand_output", "test_weights_changed", "test_output_scale_factor",
                             "test_hand_example"}),
            feedback=(q1_hand.SUM_ONE_TERM.label,)),
    Variant("weights_scaled_with_v", "手算把 W_v 的放大倍数也乘到了权重上",
            edits=(Edit("hand_output_impl", "weights_1 = exps_1 / exps_1.sum()",
                        "weights_1 = exps_1 / exps_1.sum() * 3 / 2"),),
            loses=frozenset({"test_hand_output", "test_weights_changed", "test_output_scale_factor",
                             "test_hand_example"}),
            feedback=(mc.CATALOG["weights_depend_on_v"].label,)),
    Variant("output_old_v", "手算输出还在用 W_v = 2I 的 V",
            edits=(Edit("hand_output_impl", "output_1 = weights_1 @ (X @ (3 * I))",
                        "output_1 = weights_1 @ (X @ (2 * I))"),),
            loses=frozenset({"test_hand_output", "test_output_scale_factor", "test_hand_example"}),
            feedback=(q1_hand.OUTPUT_OLD_V.label,)),
    # ---------------------------------------------------------------- the answers
    Variant("weights_changed_true", "算对了，却回答权重会变",
            edits=(Edit("answers_impl", "weights_changed = False", "weights_changed = True"),),
            loses=frozenset({"test_weights_changed"}),
            feedback=(mc.CATALOG["weights_depend_on_v"].label,), visible=False),
    Variant("ratio_is_coefficient", "以为输出变成原来的 3 倍（把 W_v 的新系数当成倍数）",
            edits=(Edit("answers_impl", "output_scale_factor = 1.5", "output_scale_factor = 3.0"),),
            loses=frozenset({"test_output_scale_factor"}),
            feedback=(bank.RATIO_IS_COEFFICIENT.label,), visible=False),
    # ---------------------------------------------------------------- extensions
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
    # ---------------------------------------------------------------- 苹果 in two sentences
    Variant("apple_static", "以为“苹果”在句子 B 里的表示和句子 A 里一样",
            edits=(Edit("apple_impl", "apple_weights_B, apple_B = weights_B[2], out_B[2]",
                        "apple_weights_B, apple_B = weights_B[2], apple_A"),),
            loses=frozenset({"test_apple_outputs"}),
            feedback=(q1_apple.STATIC_EMBEDDING.label,)),
    Variant("context_asserted", "不算，直接写结论：word_output_changed 总返回 True",
            edits=(Edit("context_impl", "    out_a, _ = self_attention(X_a, W_q, W_k, W_v)\n"
                        "    out_b, _ = self_attention(X_b, W_q, W_k, W_v)\n"
                        "    return bool(not np.allclose(out_a[i], out_b[j], rtol=0, atol=1e-6))",
                        "    return True"),),
            loses=frozenset({"test_context_changes"}), feedback=(q1_context.CONTEXT_IGNORED.label,),
            visible=False),
    Variant("context_by_embedding", "比较的是两句里这个词的嵌入（输入），不是输出",
            edits=(Edit("context_impl", "    return bool(not np.allclose(out_a[i], out_b[j], rtol=0, atol=1e-6))",
                        "    return bool(not np.allclose(X_a[i], X_b[j], rtol=0, atol=1e-6))"),),
            loses=frozenset({"test_context_changes"}), feedback=(q1_context.CONTEXT_IGNORED.label,),
            visible=False),
    Variant("weights_explain_asserted", "不算，直接写结论：权重总相同、输出总不同",
            edits=(Edit("same_weights_impl", "    return same(w_a, w_b), same(out_a, out_b)",
                        "    return True, False"),),
            loses=frozenset({"test_same_weights"}), visible=False),
    Variant("apple_column", "取了“苹果”那一列（别的词分给它的权重），不是它自己那一行",
            edits=(Edit("apple_impl", "apple_weights_A, apple_A = weights_A[0], out_A[0]",
                        "apple_weights_A, apple_A = weights_A[:, 0], out_A[0]"),
                   Edit("apple_impl", "apple_weights_B, apple_B = weights_B[2], out_B[2]",
                        "apple_weights_B, apple_B = weights_B[:, 2], out_B[2]")),
            loses=frozenset({"test_apple_weights"}),
            feedback=(mc.CATALOG["transposed_weights"].label,)),
]
