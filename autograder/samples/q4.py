"""Sample students of q4: correct alternatives and named mistakes.

Each mistake is the source solution with ``edits`` applied; it must lose exactly the
cells in ``loses`` and its feedback must name ``feedback``. Host-side only: nothing
here is loaded where student code runs.

The first and the last mistake are the core's: the engine test grades the last one, the
nbgrader parity test the first, and under the default release (extensions as ungraded
practice) a mistake that loses only extension cells loses no points there.
"""

from __future__ import annotations

from ..bank.lib import misconceptions as mc
from ..bank.q4 import MAP_TRANSPOSED
from ..bank.q4_ext import (
    CACHE_WITHOUT_SELF,
    CAUSAL_NO_MASK,
    DECODE_DEGENERATE,
    DELTA_SIGN,
    TWO_TOKEN_OVERFLOW,
)
from ..bank.q4_hand import OUTPUT_IS_X, PHANTOM_EXP, PHANTOM_TOKEN
from .variants import Edit, Variant

_SOFTMAX = ("    shifted = scores - np.max(scores, axis=-1, keepdims=True)\n"
            "    e = np.exp(shifted)\n"
            "    return e / np.sum(e, axis=-1, keepdims=True)")
_STABLE_SIGMOID = ("    e = np.exp(-np.abs(d))  # 指数只取非正值：Δs = ±1000 也不溢出\n"
                   "    return np.where(d >= 0, 1 / (1 + e), e / (1 + e))")
_CACHE = "        K_cache, V_cache = K[: i + 1], V[: i + 1]  # 位置 1..i+1，包括它自己"
_DECODE_SUM = "    weights = weights / np.sum(weights, axis=-1, keepdims=True)  # t 个权重，和为 1"
_TWO_TOKEN_SYMBOLIC = "two_token_weight_symbolic = sp.simplify(w1_sym.subs(s1, s2 + delta))"
_SCORES = "scores_1 = np.array([x1 @ x1])            # 只有一个 Key：score(1,1) = Q₁·K₁（W_q = W_k = I）"
_EXPS = "exps_1 = np.exp(scores_1 / np.sqrt(2))    # 缩放（d_k = K.shape[-1] = 2）后取 exp"
_OUTPUT = "output_1 = weights_1[0] * (x1 @ (2 * I))   # V₁ = x₁·W_v"
_HAND = "hand_impl"  # the cell where the code confirms the hand calculation

#: The hand steps written as numbers to the lecture's 3 decimals, as on paper.
_ROUNDED_HAND = (
    Edit("hand_weights_impl", _SCORES, "scores_1 = np.array([1.0])"),
    Edit("hand_weights_impl", _EXPS, "exps_1 = [2.028]"),
    Edit("hand_weights_impl", "total_1 = np.sum(exps_1)", "total_1 = 2.028"),
    Edit("hand_weights_impl", "weights_1 = exps_1 / total_1", "weights_1 = [1.0]"),
    Edit("hand_output_impl", _OUTPUT, "output_1 = [2.0, 0.0]"),
)

ALTERNATIVES = [
    Variant("einsum_reshape", "手算写成保留 3 位小数的数（列表也行）；用 einsum 计算打分与加权求和，"
            "一维 x 用 reshape(1, -1) 处理，σ 用 logaddexp，符号答案不化简", edits=(
        *_ROUNDED_HAND,
        Edit("weights_impl", "    x = np.atleast_2d(np.asarray(x, dtype=float))",
             "    x = np.asarray(x, dtype=float).reshape(-1, np.shape(W_q)[0])"),
        Edit("weights_impl", "    scores = q @ k.T / np.sqrt(k.shape[-1])",
             "    scores = np.einsum('id,jd->ij', q, k) / np.sqrt(k.shape[-1])"),
        Edit("attention_impl", "    x = np.atleast_2d(np.asarray(x, dtype=float))",
             "    x = np.asarray(x, dtype=float).reshape(-1, np.shape(W_v)[0])"),
        Edit("attention_impl", "    return weights @ V",
             "    return np.einsum('ij,jd->id', weights, V)"),
        Edit("two_token_impl", _STABLE_SIGMOID, "    return np.exp(-np.logaddexp(0.0, -d))"),
        Edit("decode_impl", "    scores = q @ K_cache.T / np.sqrt(K_cache.shape[-1])",
             "    scores = np.einsum('id,td->it', q, K_cache) / np.sqrt(K_cache.shape[-1])"),
        Edit("decode_impl", "    return weights @ V_cache",
             "    return np.einsum('it,td->id', weights, V_cache)"),
        Edit("symbolic_impl", "symbolic_single_token_residual = sp.simplify(output_sym - x_sym * W_v_sym)",
             "symbolic_single_token_residual = output_sym - x_sym * W_v_sym"),
        Edit("two_token_symbolic_impl", _TWO_TOKEN_SYMBOLIC,
             "two_token_weight_symbolic = w1_sym.subs(s1, s2 + delta)"),
    )),
    Variant("float32_logsumexp", "全部用 float32 计算，softmax 用 log-sum-exp 写法；手算时先减去最大值的"
            "写法留给代码，exp 按讲义直接取", edits=(
        Edit("hand_weights_impl", "total_1 = np.sum(exps_1)", "total_1 = exps_1[0]"),
        Edit("weights_impl", "    x = np.atleast_2d(np.asarray(x, dtype=float))\n"
             "    q, k = x @ np.asarray(W_q, dtype=float), x @ np.asarray(W_k, dtype=float)",
             "    x = np.atleast_2d(np.asarray(x, dtype=np.float32))\n"
             "    q, k = x @ np.asarray(W_q, dtype=np.float32), x @ np.asarray(W_k, dtype=np.float32)"),
        Edit("weights_impl", _SOFTMAX,
             "    m = np.max(scores, axis=-1, keepdims=True)\n"
             "    lse = m + np.log(np.sum(np.exp(scores - m), axis=-1, keepdims=True))\n"
             "    return np.exp(scores - lse)"),
        Edit("attention_impl", "    x = np.atleast_2d(np.asarray(x, dtype=float))\n"
             "    V = x @ np.asarray(W_v, dtype=float)",
             "    x = np.atleast_2d(np.asarray(x, dtype=np.float32))\n"
             "    V = x @ np.asarray(W_v, dtype=np.float32)"),
        Edit("decode_impl", "    q = np.atleast_2d(np.asarray(q, dtype=float))\n"
             "    K_cache, V_cache = np.asarray(K_cache, dtype=float), np.asarray(V_cache, dtype=float)",
             "    q = np.atleast_2d(np.asarray(q, dtype=np.float32))\n"
             "    K_cache = np.asarray(K_cache, dtype=np.float32)\n"
             "    V_cache = np.asarray(V_cache, dtype=np.float32)"),
        Edit("kv_cache_impl", "    X = np.atleast_2d(np.asarray(X, dtype=float))",
             "    X = np.atleast_2d(np.asarray(X, dtype=np.float32))"),
    )),
    Variant("probe_closed_forms", "M 用基向量逐行探测；σ 用 1/(1+e^(−Δs))，逐步解码用一张带因果掩码的打分表",
            edits=(
        Edit("linear_map_impl", "    return np.array(W_v, dtype=float)",
             "    basis = np.eye(np.shape(W_v)[0])\n"
             "    return np.vstack([single_token_attention(e, W_q, W_k, W_v) for e in basis])"),
        Edit("two_token_impl", _STABLE_SIGMOID, "    return 1 / (1 + np.exp(-d))"),
        Edit("kv_cache_impl",
             "    outputs = []\n"
             "    for i in range(X.shape[0]):\n"
             f"{_CACHE}\n"
             "        outputs.append(decode_step(Q[i : i + 1], K_cache, V_cache))\n"
             "    return np.vstack(outputs)",
             "    n = X.shape[0]\n"
             "    scores = Q @ K.T / np.sqrt(K.shape[-1])\n"
             "    scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)\n"
             "    w = np.exp(scores - scores.max(axis=-1, keepdims=True))\n"
             "    return (w / w.sum(axis=-1, keepdims=True)) @ V"),
        Edit("two_token_symbolic_impl", _TWO_TOKEN_SYMBOLIC,
             "two_token_weight_symbolic = 1 / (1 + sp.exp(-delta))"),
    )),
]

_CORE_FIRST = [
    Variant("no_attention", "不算注意力，直接写出 n = 1 的结论：权重写成 1，输出写成 x·W_v",
            edits=(Edit("weights_impl", "    x = np.atleast_2d(np.asarray(x, dtype=float))\n"
                        "    q, k = x @ np.asarray(W_q, dtype=float), x @ np.asarray(W_k, dtype=float)\n"
                        "    scores = q @ k.T / np.sqrt(k.shape[-1])\n" + _SOFTMAX,
                        "    return np.ones((1, 1))"),
                   Edit("attention_impl", "    weights = single_token_weights(x, W_q, W_k)\n"
                        "    return weights @ V", "    return V")),
            loses=frozenset({"test_weights", "test_attention_output"})),
    Variant("code_no_scaling", "代码里打分忘了除以 √d_k（n = 1 时看不出来）",
            edits=(Edit("weights_impl", "    scores = q @ k.T / np.sqrt(k.shape[-1])", "    scores = q @ k.T"),),
            loses=frozenset({"test_weights", "test_attention_output"}),
            feedback=(mc.CATALOG["no_scaling"].label,), visible=False),
    Variant("code_dk_fixed_2", "代码里把 d_k 写死成手算例子的 2（n = 1 时看不出来）",
            edits=(Edit("weights_impl", "    scores = q @ k.T / np.sqrt(k.shape[-1])", "    scores = q @ k.T / np.sqrt(2)"),),
            loses=frozenset({"test_weights", "test_attention_output"}), visible=False),
    Variant("code_softmax_axis0", "代码里 softmax 沿 Query 方向（axis=0）归一化（n = 1 时看不出来）",
            edits=(Edit("weights_impl", _SOFTMAX, _SOFTMAX.replace("axis=-1", "axis=0")),),
            loses=frozenset({"test_weights", "test_attention_output"}),
            feedback=(mc.CATALOG["softmax_query_axis"].label,)),
    # dividing by √n instead of √d_k: at n = 1 it is no scaling, which the hand weight cannot
    # see (softmax of one score is 1 whatever the score); the 2-3 token probe of the code does
    Variant("code_dk_is_n", "代码里缩放除以 √n（token 个数）而不是 √d_k（n = 1 时看不出来）",
            edits=(Edit("weights_impl", "    scores = q @ k.T / np.sqrt(k.shape[-1])",
                        "    scores = q @ k.T / np.sqrt(x.shape[0])"),),
            loses=frozenset({"test_weights", "test_attention_output"}),
            feedback=(mc.CATALOG["dk_is_n"].label,), visible=False),
    # ---------------------------------------------------------------- the hand steps
    # (the lecture's score, scaled score and exp are not graded: a slip there, such as no
    # scaling or exp of the unscaled score, still gives the one weight, the lesson itself)
    Variant("hand_phantom_token", "手算时还留着 x₂：照讲义两个 token 的一行重算了一遍",
            edits=(Edit("hand_weights_impl", _SCORES,
                        "scores_1 = np.array([1.0, 0.0])   # score(1,1)、score(1,2)"),
                   Edit("hand_output_impl", _OUTPUT,
                        "output_1 = weights_1 @ (np.eye(2) @ (2 * I))   # x₁、x₂ 的 V")),
            loses=frozenset({"test_hand_weights", "test_hand_output", "test_hand_example"}),
            feedback=(PHANTOM_TOKEN.label,)),
    Variant("hand_phantom_exp", "手算总和时多加了 x₂ 的 e⁰ = 1（讲义的 3.028）",
            edits=(Edit("hand_weights_impl", "total_1 = np.sum(exps_1)", "total_1 = np.sum(exps_1) + np.exp(0.0)"),),
            loses=frozenset({"test_hand_weights", "test_hand_example"}),
            feedback=(PHANTOM_EXP.label,)),
    Variant("hand_unnormalised", "手算权重时没有除以总和",
            edits=(Edit("hand_weights_impl", "weights_1 = exps_1 / total_1", "weights_1 = exps_1"),),
            loses=frozenset({"test_hand_weights", "test_hand_example"}),
            feedback=(mc.CATALOG["exp_without_normalising"].label,)),
    Variant("hand_output_is_x", "手算输出时用 x₁ 本身加权，忘了 V = x₁·W_v",
            edits=(Edit("hand_output_impl", _OUTPUT, "output_1 = weights_1[0] * x1"),),
            loses=frozenset({"test_hand_output", "test_hand_example"}),
            feedback=(OUTPUT_IS_X.label,)),
    Variant("output_is_x", "忘了乘 W_v：输出直接是 x，等价映射写成单位矩阵",
            edits=(Edit("attention_impl", "    V = x @ np.asarray(W_v, dtype=float)", "    V = x"),
                   Edit("linear_map_impl", "    return np.array(W_v, dtype=float)",
                        "    return np.eye(np.shape(W_v)[0])")),
            loses=frozenset({"test_attention_output", "test_linear_map", "test_hand_example"}),
            feedback=(OUTPUT_IS_X.label,)),
    Variant("raw_score_weight", "忘了 softmax：把打分本身当成权重",
            edits=(Edit("weights_impl", _SOFTMAX, "    return scores"),),
            loses=frozenset({"test_weights", "test_weights_extreme", "test_attention_output",
                             "test_qk_invariance", "test_hand_example"}),
            feedback=(mc.CATALOG["raw_scores"].label,)),
    Variant("naive_softmax", "softmax 不减最大值：打分 1e6 时溢出",
            edits=(Edit("weights_impl",
                        "    shifted = scores - np.max(scores, axis=-1, keepdims=True)",
                        "    shifted = scores"),),
            loses=frozenset({"test_weights_extreme"}),
            feedback=(mc.CATALOG["naive_softmax_overflow"].label,)),
    Variant("linear_map_transposed", "等价线性映射写成了 W_vᵀ",
            edits=(Edit("linear_map_impl", "    return np.array(W_v, dtype=float)",
                        "    return np.array(W_v, dtype=float).T"),),
            loses=frozenset({"test_linear_map"}),
            feedback=(MAP_TRANSPOSED.label,)),
]

_EXTENSIONS = [
    Variant("residual_uses_x", "符号输出用 x 本身加权，残差成了 x − x·W_v",
            edits=(Edit("symbolic_impl", "output_sym = weight_sym * v_sym", "output_sym = weight_sym * x_sym"),),
            loses=frozenset({"test_residual_symbolic"}),
            feedback=(OUTPUT_IS_X.label,), visible=False),
    Variant("delta_sign_flipped", "Δs 的方向弄反：算成了 token 2 的权重 σ(−Δs)",
            edits=(Edit("two_token_impl", "    return np.where(d >= 0, 1 / (1 + e), e / (1 + e))",
                        "    return np.where(d >= 0, e / (1 + e), 1 / (1 + e))"),
                   Edit("two_token_symbolic_impl", _TWO_TOKEN_SYMBOLIC,
                        "two_token_weight_symbolic = sp.simplify(w1_sym.subs(s1, s2 - delta))")),
            loses=frozenset({"test_two_token_weight", "test_two_token_symbolic"}),
            feedback=(DELTA_SIGN.label,)),
    Variant("two_token_overflow", "直接算 e^Δs/(e^Δs+1)：Δs = 1000 时溢出成 NaN",
            edits=(Edit("two_token_impl", _STABLE_SIGMOID, "    return np.exp(d) / (np.exp(d) + 1)"),),
            loses=frozenset({"test_two_token_weight"}),
            feedback=(TWO_TOKEN_OVERFLOW.label,)),
    Variant("decode_as_single_token", "以为一步解码也是 n = 1：只返回最新 token 的 Value",
            edits=(Edit("decode_impl", "    return weights @ V_cache", "    return V_cache[-1:]"),),
            loses=frozenset({"test_decode_step", "test_kv_cache_decode"}),
            feedback=(DECODE_DEGENERATE.label,)),
    Variant("decode_softmax_axis0", "一步解码的 softmax 沿 axis=0 归一化（1×t 的打分每个都变成 1）",
            edits=(Edit("decode_impl", _DECODE_SUM, _DECODE_SUM.replace("axis=-1", "axis=0")),),
            loses=frozenset({"test_decode_step", "test_kv_cache_decode"}),
            feedback=(mc.CATALOG["softmax_query_axis"].label,)),
    Variant("decode_no_scaling", "一步解码的打分忘了除以 √d_k",
            edits=(Edit("decode_impl", "    scores = q @ K_cache.T / np.sqrt(K_cache.shape[-1])",
                        "    scores = q @ K_cache.T"),),
            loses=frozenset({"test_decode_step", "test_kv_cache_decode"}),
            feedback=(mc.CATALOG["no_scaling"].label,)),
    Variant("causal_no_mask", "逐步解码时缓存里放了整句的 K、V（看到了后面的 token）",
            edits=(Edit("kv_cache_impl", _CACHE, "        K_cache, V_cache = K, V"),),
            loses=frozenset({"test_kv_cache_decode"}),
            feedback=(CAUSAL_NO_MASK.label,)),
    Variant("cache_without_self", "缓存里漏了当前 token 自己（K[:i]），位置 1 的缓存为空",
            edits=(Edit("kv_cache_impl", _CACHE, "        K_cache, V_cache = K[:i], V[:i]"),),
            loses=frozenset({"test_kv_cache_decode"}),
            feedback=(CACHE_WITHOUT_SELF.label,)),
]

_CORE_LAST = [
    Variant("output_is_xWq", "输出用了 x·W_q（把 Query 当成了 Value）",
            edits=(Edit("attention_impl", "    V = x @ np.asarray(W_v, dtype=float)",
                        "    V = x @ np.asarray(W_q, dtype=float)"),),
            loses=frozenset({"test_attention_output", "test_qk_invariance", "test_hand_example"}),
            feedback=(mc.CATALOG["q_as_v"].label,)),
]

MISTAKES = [*_CORE_FIRST, *_EXTENSIONS, *_CORE_LAST]
