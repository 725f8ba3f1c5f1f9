"""Sample students of q4: correct alternatives and named mistakes.

Each mistake is the source solution with ``edits`` applied; it must lose exactly the
cells in ``loses`` and its feedback must name ``feedback``. Host-side only: nothing
here is loaded where student code runs."""

from __future__ import annotations

from .. import misconceptions as mc
from ..bank.q4 import OUTPUT_IS_X
from ..variants import Edit, Variant

_SOFTMAX = ("    shifted = scores - np.max(scores, axis=-1, keepdims=True)\n"
            "    e = np.exp(shifted)\n"
            "    return e / np.sum(e, axis=-1, keepdims=True)")

ALTERNATIVES = [
    Variant("einsum_reshape", "用 einsum 计算打分与加权求和，一维 x 用 reshape(1, -1) 处理", edits=(
        Edit("weights_impl", "    x = np.atleast_2d(np.asarray(x, dtype=float))",
             "    x = np.asarray(x, dtype=float).reshape(1, -1)"),
        Edit("weights_impl", "    scores = q @ k.T / np.sqrt(k.shape[-1])",
             "    scores = np.einsum('id,jd->ij', q, k) / np.sqrt(k.shape[-1])"),
        Edit("attention_impl", "    x = np.atleast_2d(np.asarray(x, dtype=float))",
             "    x = np.asarray(x, dtype=float).reshape(1, -1)"),
        Edit("attention_impl", "    return weights @ V",
             "    return np.einsum('ij,jd->id', weights, V)"),
    )),
    Variant("float32_logsumexp", "全部用 float32 计算，softmax 用 log-sum-exp 写法", edits=(
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
    )),
    Variant("shortcut_probe", "直接用结论：权重写成 1，输出写成 x·W_v，M 用基向量逐行探测", edits=(
        Edit("weights_impl", "    x = np.atleast_2d(np.asarray(x, dtype=float))\n"
             "    q, k = x @ np.asarray(W_q, dtype=float), x @ np.asarray(W_k, dtype=float)\n"
             "    scores = q @ k.T / np.sqrt(k.shape[-1])\n" + _SOFTMAX,
             "    return np.ones((1, 1))"),
        Edit("attention_impl", "    weights = single_token_weights(x, W_q, W_k)\n"
             "    return weights @ V",
             "    return V"),
        Edit("linear_map_impl", "    return np.array(W_v, dtype=float)",
             "    basis = np.eye(np.shape(W_v)[0])\n"
             "    return np.vstack([single_token_attention(e, W_q, W_k, W_v) for e in basis])"),
    )),
]

MISTAKES = [
    Variant("output_is_x", "忘了乘 W_v：输出直接是 x，等价映射写成单位矩阵",
            edits=(Edit("attention_impl", "    V = x @ np.asarray(W_v, dtype=float)", "    V = x"),
                   Edit("linear_map_impl", "    return np.array(W_v, dtype=float)",
                        "    return np.eye(np.shape(W_v)[0])")),
            loses=frozenset({"test_hand_example", "test_attention_output", "test_linear_map"}),
            feedback=(OUTPUT_IS_X.label,)),
    Variant("output_is_xWq", "输出用了 x·W_q（把 Query 当成了 Value）",
            edits=(Edit("attention_impl", "    V = x @ np.asarray(W_v, dtype=float)",
                        "    V = x @ np.asarray(W_q, dtype=float)"),),
            loses=frozenset({"test_hand_example", "test_attention_output", "test_qk_invariance"}),
            feedback=(mc.CATALOG["q_as_v"].label,)),
    Variant("raw_score_weight", "忘了 softmax：把打分本身当成权重",
            edits=(Edit("weights_impl", _SOFTMAX, "    return scores"),),
            loses=frozenset({"test_hand_example", "test_weights", "test_weights_extreme",
                             "test_attention_output", "test_qk_invariance"}),
            feedback=(mc.CATALOG["raw_scores"].label,)),
    Variant("naive_softmax", "softmax 不减最大值：打分 1e6 时溢出",
            edits=(Edit("weights_impl",
                        "    shifted = scores - np.max(scores, axis=-1, keepdims=True)",
                        "    shifted = scores"),),
            loses=frozenset({"test_weights_extreme"}),
            feedback=(mc.CATALOG["naive_softmax_overflow"].label,)),
]
