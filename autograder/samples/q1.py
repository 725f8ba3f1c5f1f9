"""Sample students of q1: correct alternatives and named mistakes.

Each mistake is the source solution with ``edits`` applied; it must lose exactly the
cells in ``loses`` and its feedback must name ``feedback``. Host-side only: nothing
here is loaded where student code runs."""

from __future__ import annotations

from .. import misconceptions as mc
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
]

MISTAKES = [
    Variant("no_sqrt_dk", "打分忘了除以 √d_k",
            edits=(Edit("attention_impl", "    scores = Q @ K.T / np.sqrt(d_k)", "    scores = Q @ K.T"),),
            loses=frozenset({"test_attention_weights", "test_attention", "test_self_attention",
                             "test_hand_example", "test_weights_3Wq"}),
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
                             "test_hand_example", "test_conclusions"}),
            feedback=(mc.CATALOG["weights_instead_of_output"].label,)),
    Variant("k_as_v", "self_attention 用 K 代替 V 做加权求和",
            edits=(Edit("attention_impl", "    output = attention(Q, K, V)",
                        "    output = attention(Q, K, K)"),),
            loses=frozenset({"test_self_attention", "test_value_scaling", "test_hand_example",
                             "test_conclusions"}),
            feedback=(mc.CATALOG["k_as_v"].label,)),
    Variant("weights_from_v", "self_attention 的权重用 V 打分：只改 W_v 权重也会变",
            edits=(Edit("attention_impl", "    weights = attention_weights(Q, K)",
                        "    weights = attention_weights(Q, V)"),),
            loses=frozenset({"test_self_attention", "test_value_scaling", "test_hand_example",
                             "test_conclusions", "test_weights_3Wq"}),
            feedback=(mc.CATALOG["weights_depend_on_v"].label,)),
]
