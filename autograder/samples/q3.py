"""Sample students of q3: correct alternatives and named mistakes.

Each mistake is the source solution with ``edits`` applied; it must lose exactly the
cells in ``loses`` and its feedback must name ``feedback``. Host-side only: nothing
here is loaded where student code runs."""

from __future__ import annotations

from ..bank.lib import misconceptions as mc
from ..bank.q3 import (
    ATOL_IGNORED,
    CHECKER_INVERSE,
    EXACT_EQUALITY,
    FORGOT_SWAP,
    GLOBAL_MAX,
    INVARIANCE,
    MULTISET,
    RTOL_KEPT,
)
from ..bank.q3_context import CONTEXT_COUNTS
from ..bank.q3_ext import (
    BY_POSITION,
    CAUSAL_WRONG_SIDE,
    FULL_ROW_FILL,
    FULL_ROW_NAN,
    MASK_AFTER_SOFTMAX,
    PE_EXPONENT,
    PE_MISSING,
    PE_SWAPPED,
)
from ..bank.q3_hand import (
    EXP_OF_ZERO,
    KEYS_NOT_SWAPPED,
    OUTPUT_LECTURE_V,
    PROPORTIONAL,
    SELF_EXCLUDED,
    V_NOT_SWAPPED,
)
from ..bank.q3_symbolic import INVERSE_P
from .variants import Edit, Variant

_PE_OLD = ("    pos = np.arange(n)[:, None]\n    i = np.arange(d)[None, :] // 2\n"
           "    angles = pos / np.power(10000.0, 2 * i / d)\n    PE = np.zeros((n, d))\n"
           "    PE[:, 0::2] = np.sin(angles[:, 0::2])\n    PE[:, 1::2] = np.cos(angles[:, 1::2])")
_CHECK = "    return bool(lhs.shape == rhs.shape and np.allclose(lhs, rhs, rtol=0, atol=atol))"
_CAUSAL_OLD = ("    future = np.triu(np.ones(scores.shape, dtype=bool), k=1)  # j > i\n"
               "    scores = np.where(future, -np.inf, scores)\n")
_MASK_SHIFT = ("    scores = np.where(seen, scores - np.where(seen, scores, 0).max(axis=-1, keepdims=True),"
               " -np.inf)")
_MASK_NORM = "    weights = weights / np.where(seen, weights.sum(axis=-1, keepdims=True), 1.0)"
_NAIVE_MASK = (Edit("masked_impl", _MASK_SHIFT, "    scores = scores - scores.max(axis=-1, keepdims=True)"),
               Edit("masked_impl", _MASK_NORM, "    weights = weights / weights.sum(axis=-1, keepdims=True)"))

ALTERNATIVES = [
    Variant("loops_einsum", "手算时填保留 3 位小数的数；einsum 与显式循环；用最大误差判断等变", edits=(
        Edit("hand_output_impl", "hand_weights = hand_exps / hand_exps.sum()", "hand_weights = np.array([0.670, 0.330])"),
        Edit("hand_output_impl", "hand_output = hand_weights @ (X_new @ W_v_hand)",
             "hand_output = np.array([0.670 * 3 + 0.330 * 1, 0.670 * 4 + 0.330 * 2])"),
        Edit("attention_impl", "    scores = Q @ K.T / np.sqrt(K.shape[-1])",
             "    scores = np.einsum('id,jd->ij', Q, K) / np.sqrt(K.shape[-1])"),
        Edit("perm_impl", "    return np.eye(len(perm))[perm]",
             "    n = len(perm)\n    P = np.zeros((n, n), dtype=int)\n"
             "    for i, j in enumerate(perm):\n        P[i, j] = 1\n    return P"),
        Edit("checker_impl", _CHECK,
             "    if lhs.shape != rhs.shape:\n        return False\n"
             "    return bool(np.max(np.abs(lhs - rhs)) <= atol)"),
        Edit("pe_impl", _PE_OLD,
             "    PE = np.zeros((n, d))\n    for pos in range(n):\n        for j in range(d):\n"
             "            angle = pos / 10000 ** (2 * (j // 2) / d)\n"
             "            PE[pos, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)"),
        Edit("multiset_impl", "bites_weight_on_man = float(rbr_weights[1, 0] + rbr_weights[1, 2])",
             "bites_weight_on_man = 1.0 - rbr_weights[1, 1]  # 权重之和为 1"),
        Edit("causal_impl", _CAUSAL_OLD,
             "    for i in range(scores.shape[0]):\n        for j in range(i + 1, scores.shape[1]):\n"
             "            scores[i, j] = -np.inf\n"),
        Edit("masked_impl", "    weights = np.exp(scores)  # 整行被遮住时全是 e^(-inf) = 0\n" + _MASK_NORM,
             "    weights = np.zeros_like(scores)\n    for i in range(len(scores)):\n"
             "        if seen[i, 0]:\n            e = np.exp(scores[i] - scores[i][allowed[i]].max())\n"
             "            e[~allowed[i]] = 0.0\n            weights[i] = e / e.sum()"),
        Edit("symbolic_impl", "    E = scores.applyfunc(sp.exp)\n"
             "    weights = sp.Matrix(E.rows, E.cols, lambda i, j: E[i, j] / sum(E.row(i)))",
             "    rows = []\n    for i in range(scores.rows):\n"
             "        exps = [sp.exp(s) for s in scores.row(i)]\n"
             "        rows.append([e / sp.Add(*exps) for e in exps])\n"
             "    weights = sp.Matrix(rows)"),
    )),
    Variant("slices_div_term", "手算用 math；log-sum-exp 的 softmax；div_term 写法的位置编码；"
            "P 由花式索引赋值；因果掩码用有限的大负数", edits=(
        Edit("hand_output_impl", "hand_scores = X_new[0] @ X_new.T", "hand_scores = [1.0, 0.0]"),
        Edit("hand_output_impl", "np.exp(hand_scores / np.sqrt(2))",
             "[math.exp(s / math.sqrt(2)) for s in hand_scores]"),
        Edit("hand_output_impl", "hand_exps / hand_exps.sum()", "np.array(hand_exps) / sum(hand_exps)"),
        Edit("hand_output_impl", "hand_weights @ (X_new @ W_v_hand)",
             "hand_weights[0] * W_v_hand[1] + hand_weights[1] * W_v_hand[0]  # V1' = x2·W_v_hand"),
        Edit("attention_impl", "    scores = scores - scores.max(axis=-1, keepdims=True)\n"
             "    weights = np.exp(scores)\n    weights = weights / weights.sum(axis=-1, keepdims=True)",
             "    lse = scores.max(axis=-1, keepdims=True)\n"
             "    lse = lse + np.log(np.exp(scores - lse).sum(axis=-1, keepdims=True))\n"
             "    weights = np.exp(scores - lse)"),
        Edit("perm_impl", "    return np.eye(len(perm))[perm]",
             "    n = len(perm)\n    P = np.zeros((n, n))\n    P[np.arange(n), list(perm)] = 1.0\n"
             "    return P"),
        Edit("hand_swap_impl", "self_attention(X_new, W_q, W_k, W_v)", "self_attention(X[::-1], W_q, W_k, W_v)"),
        Edit("checker_impl", _CHECK,
             "    return lhs.shape == rhs.shape and bool(np.all(np.abs(lhs - rhs) <= atol))"),
        Edit("pe_impl", _PE_OLD,
             "    position = np.arange(n, dtype=float)[:, None]\n"
             "    div_term = np.exp(np.arange(0, d, 2) * (-np.log(10000.0) / d))\n"
             "    PE = np.zeros((n, d))\n    PE[:, 0::2] = np.sin(position * div_term)\n"
             "    PE[:, 1::2] = np.cos(position * div_term[: d // 2])"),
        Edit("causal_impl", _CAUSAL_OLD,
             "    scores = np.where(np.tril(np.ones(scores.shape, dtype=bool)), scores, -1e30)\n"),
        Edit("masked_impl", _MASK_SHIFT, "    scores = scores - np.max(np.where(seen, scores, 0.0), axis=-1, keepdims=True)"),
        Edit("masked_impl", _MASK_NORM,
             "    total = weights.sum(axis=-1, keepdims=True)\n"
             "    weights = np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)"),
        Edit("residual_impl", "P2 * symbolic_self_attention(X_sym, W_q_sym, W_k_sym, W_v_sym)[0]",
             "symbolic_self_attention(X_sym, W_q_sym, W_k_sym, W_v_sym)[0][[1, 0], :]"),
        Edit("multiset_impl", "repeat_matters = output_changed(X, 1, X_rbr, 1, W_q, W_k, W_v)",
             "repeat_matters = np.abs(rbr_outputs[1] - original_outputs[1]).max() > 1e-9"),
    )),
]


def _mistake(name: str, description: str, edits: tuple[Edit, ...], loses: set[str],
             *labels: mc.Misconception, visible: bool = True) -> Variant:
    return Variant(name, description, edits=edits, loses=frozenset(loses),
                   feedback=tuple(m.label for m in labels), visible=visible)


_CHECKER = {"test_equivariance_checker"}
_TOLERANCE = {"test_equivariance_tolerance"}

MISTAKES = [
    # ---------------------------------------------------------------- the hand step
    # A slip in the weights is carried forward by test_hand_output (the output follows
    # from the student's own hand_weights) and lost where the code confirms them.
    _mistake("keys_not_swapped", "手算打分时 Key 仍按原来的顺序排",
             (Edit("hand_output_impl", "hand_scores = X_new[0] @ X_new.T", "hand_scores = X_new[0] @ X.T"),),
             {"test_hand_swap"}, KEYS_NOT_SWAPPED, visible=False),
    _mistake("hand_no_scaling", "手算时忘了除以 √d_k",
             (Edit("hand_output_impl", "np.exp(hand_scores / np.sqrt(2))", "np.exp(hand_scores)"),),
             {"test_hand_swap"}, mc.CATALOG["no_scaling"], visible=False),
    _mistake("hand_exp_of_zero", "手算时以为 e⁰ = 0",
             (Edit("hand_output_impl", "np.exp(hand_scores / np.sqrt(2))",
                   "np.where(hand_scores == 0, 0.0, np.exp(hand_scores / np.sqrt(2)))"),),
             {"test_hand_swap"}, EXP_OF_ZERO, visible=False),
    _mistake("hand_self_excluded", "softmax 的分母漏掉了这个词自己",
             (Edit("hand_output_impl", "hand_exps / hand_exps.sum()", "hand_exps / hand_exps[1]"),),
             {"test_hand_output", "test_hand_swap"}, SELF_EXCLUDED),
    _mistake("hand_weights_proportional", "权重按打分的比例分配，没有经过 exp",
             (Edit("hand_output_impl", "hand_exps / hand_exps.sum()", "hand_scores / hand_scores.sum()"),),
             {"test_hand_swap"}, PROPORTIONAL, visible=False),
    _mistake("hand_v_not_swapped", "加权求和时 Value 仍按原来的顺序",
             (Edit("hand_output_impl", "hand_weights @ (X_new @ W_v_hand)", "hand_weights @ (X @ W_v_hand)"),),
             {"test_hand_output"}, V_NOT_SWAPPED, visible=False),
    _mistake("hand_lecture_v", "输出照抄讲义 W_v = 2I 时原来位置 2 的输出",
             (Edit("hand_output_impl", "hand_weights @ (X_new @ W_v_hand)", "np.array([0.660, 1.340])"),),
             {"test_hand_output"}, OUTPUT_LECTURE_V, visible=False),
    # ---------------------------------------------------------------- the context task
    _mistake("output_changed_asserted", "不算，直接写结论：output_changed 总返回 True（swap_matches 跟着错）",
             (Edit("hand_swap_impl", "    out_a, _ = self_attention(X_a, W_q, W_k, W_v)\n"
                   "    out_b, _ = self_attention(X_b, W_q, W_k, W_v)\n"
                   "    return bool(not np.allclose(out_a[i], out_b[j], rtol=0, atol=1e-6))",
                   "    return True"),),
             {"test_output_changed", "test_hand_swap"}, visible=False),
    _mistake("checker_no_shape_check", "检查器不先比较形状：两边形状不同时 np.allclose 出错（或广播）",
             (Edit("checker_impl", "    return bool(lhs.shape == rhs.shape and np.allclose(lhs, rhs, rtol=0, atol=atol))",
                   "    return bool(np.allclose(lhs, rhs, rtol=0, atol=atol))"),),
             {"test_equivariance_checker"}, visible=False),
    _mistake("output_changed_by_length", "以为句子长度（词的个数）一变，输出就变：只比较两句的长度",
             (Edit("hand_swap_impl", "    return bool(not np.allclose(out_a[i], out_b[j], rtol=0, atol=1e-6))",
                   "    return len(out_a) != len(out_b)"),),
             {"test_output_changed"}, CONTEXT_COUNTS, visible=False),
    # ---------------------------------------------------------------- own attention
    _mistake("naive_softmax", "softmax 不减最大值：打分上千时溢出",
             (Edit("attention_impl", "    scores = scores - scores.max(axis=-1, keepdims=True)\n", ""),),
             {"test_self_attention_stable"}, mc.CATALOG["naive_softmax_overflow"]),
    _mistake("global_max", "softmax 减去的是整张打分表的最大值",
             (Edit("attention_impl", "scores.max(axis=-1, keepdims=True)", "scores.max()"),),
             {"test_self_attention_stable"}, GLOBAL_MAX),
    _mistake("no_scaling", "self_attention 的打分没有除以 √d_k",
             (Edit("attention_impl", "    scores = Q @ K.T / np.sqrt(K.shape[-1])", "    scores = Q @ K.T"),),
             {"test_self_attention"}, mc.CATALOG["no_scaling"]),
    _mistake("forgot_swap", "用代码确认时仍把交换前的 X 交给 self_attention",
             (Edit("hand_swap_impl", "self_attention(X_new, W_q, W_k, W_v)", "self_attention(X, W_q, W_k, W_v)"),),
             {"test_hand_swap"}, FORGOT_SWAP),
    # ---------------------------------------------------------------- the checker
    _mistake("invariance_not_equivariance", "比较 f(X[perm]) 与 f(X)，而不是 f(X)[perm]",
             (Edit("checker_impl", "    rhs = np.asarray(f(X))[perm]", "    rhs = np.asarray(f(X))"),),
             _CHECKER | _TOLERANCE, INVARIANCE),
    _mistake("checker_inverse_perm", "比较 f(X[perm]) 与 f(X)[argsort(perm)]",
             (Edit("checker_impl", "np.asarray(f(X))[perm]", "np.asarray(f(X))[np.argsort(perm)]"),),
             _CHECKER, CHECKER_INVERSE),
    _mistake("allclose_default_rtol", "np.allclose(a, b, atol=atol)：保留了默认的 rtol",
             (Edit("checker_impl", "rtol=0, atol=atol", "atol=atol"),), _TOLERANCE, RTOL_KEPT),
    _mistake("atol_ignored", "容差写死成 1e-8，没有用参数 atol",
             (Edit("checker_impl", "rtol=0, atol=atol", "rtol=0, atol=1e-8"),), _TOLERANCE, ATOL_IGNORED),
    _mistake("multiset_as_set", "“人咬人”里只算了一个“人”的权重（当成集合）",
             (Edit("multiset_impl", "float(rbr_weights[1, 0] + rbr_weights[1, 2])", "float(rbr_weights[1, 0])"),),
             {"test_multiset"}, MULTISET),
    # ---------------------------------------------------------------- extensions
    _mistake("pe_sin_cos_swapped", "位置编码偶数列放 cos、奇数列放 sin",
             (Edit("pe_impl", "    PE[:, 0::2] = np.sin(angles[:, 0::2])\n"
                   "    PE[:, 1::2] = np.cos(angles[:, 1::2])",
                   "    PE[:, 0::2] = np.cos(angles[:, 0::2])\n"
                   "    PE[:, 1::2] = np.sin(angles[:, 1::2])"),),
             {"test_positional_encoding"}, PE_SWAPPED),
    _mistake("pe_exponent_i_over_d", "位置编码的指数 2i/d 写成 i/d",
             (Edit("pe_impl", "np.power(10000.0, 2 * i / d)", "np.power(10000.0, i / d)"),),
             {"test_positional_encoding"}, PE_EXPONENT),
    _mistake("pe_not_added", "self_attention_with_positions 忘了加位置编码",
             (Edit("with_positions_impl", "self_attention(X + sinusoidal_positional_encoding(n, d_model), W_q, W_k, W_v)",
                   "self_attention(X, W_q, W_k, W_v)"),),
             {"test_attention_with_positions", "test_dog_bites_man"}, PE_MISSING),
    _mistake("compare_by_position", "狗咬人 / 人咬狗 按行号而不是按词比较输出",
             (Edit("dog_impl", "np.allclose(out_mbd[word_order], out_dbm)", "np.allclose(out_mbd, out_dbm)"),),
             {"test_dog_bites_man"}, BY_POSITION),
    _mistake("causal_wrong_side", "因果掩码遮住了 j < i（过去）而不是 j > i",
             (Edit("causal_impl", "np.triu(np.ones(scores.shape, dtype=bool), k=1)",
                   "np.tril(np.ones(scores.shape, dtype=bool), k=-1)"),),
             {"test_causal_attention"}, CAUSAL_WRONG_SIDE),
    _mistake("mask_after_softmax", "softmax 之后才把未来位置的权重置 0",
             (Edit("causal_impl", "    scores = np.where(future, -np.inf, scores)\n", ""),
              Edit("causal_impl", "    weights = weights / weights.sum(axis=-1, keepdims=True)\n",
                   "    weights = weights / weights.sum(axis=-1, keepdims=True)\n"
                   "    weights = np.where(future, 0.0, weights)\n")),
             {"test_causal_attention"}, MASK_AFTER_SOFTMAX),
    _mistake("fully_masked_nan", "照搬因果掩码的写法：整行被遮住时得到 NaN",
             _NAIVE_MASK, {"test_masked_attention"}, FULL_ROW_NAN),
    _mistake("fully_masked_fill", "用 −1e9 代替 −∞：整行被遮住时平均地看所有位置",
             (Edit("masked_impl", "K.shape[-1]), -np.inf)", "K.shape[-1]), -1e9)"), *_NAIVE_MASK),
             {"test_masked_attention"}, FULL_ROW_FILL),
    _mistake("inverse_permutation", "P 建成了逆置换：P @ X 等于 X[argsort(perm)]",
             (Edit("perm_impl", "    return np.eye(len(perm))[perm]", "    return np.eye(len(perm))[:, perm]"),),
             {"test_permutation_matrix"}, INVERSE_P),
    # last: tests/test_samples.py grades the last mistake in the real sandbox, where the
    # rounding probe must round as it did in the host
    _mistake("exact_equality", "用 np.array_equal 判断，没有容差",
             (Edit("checker_impl", "np.allclose(lhs, rhs, rtol=0, atol=atol)", "np.array_equal(lhs, rhs)"),),
             _CHECKER | _TOLERANCE, EXACT_EQUALITY),
]
