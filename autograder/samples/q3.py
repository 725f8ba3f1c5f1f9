"""Sample students of q3: correct alternatives and named mistakes.

Each mistake is the source solution with ``edits`` applied; it must lose exactly the
cells in ``loses`` and its feedback must name ``feedback``. Host-side only: nothing
here is loaded where student code runs."""

from __future__ import annotations

from ..bank.q3 import BY_POSITION, INVARIANCE, INVERSE_P, MULTISET, PE_EXPONENT, PE_SWAPPED
from ..variants import Edit, Variant

ALTERNATIVES = [
    Variant("loops_einsum", "显式循环与 einsum：逐元素构造 P 与位置编码，用最大误差判断等变", edits=(
        Edit("attention_impl", "    scores = Q @ K.T / np.sqrt(K.shape[-1])",
             "    scores = np.einsum('id,jd->ij', Q, K) / np.sqrt(K.shape[-1])"),
        Edit("perm_impl", "    return np.eye(len(perm))[perm]",
             "    n = len(perm)\n    P = np.zeros((n, n), dtype=int)\n"
             "    for i, j in enumerate(perm):\n        P[i, j] = 1\n    return P"),
        Edit("checker_impl", "    return bool(lhs.shape == rhs.shape and np.allclose(lhs, rhs, rtol=0, atol=atol))",
             "    if lhs.shape != rhs.shape:\n        return False\n"
             "    return bool(np.max(np.abs(lhs - rhs)) <= atol)"),
        Edit("pe_impl", "    pos = np.arange(n)[:, None]\n    i = np.arange(d)[None, :] // 2\n"
             "    angles = pos / np.power(10000.0, 2 * i / d)\n    PE = np.zeros((n, d))\n"
             "    PE[:, 0::2] = np.sin(angles[:, 0::2])\n    PE[:, 1::2] = np.cos(angles[:, 1::2])",
             "    PE = np.zeros((n, d))\n    for pos in range(n):\n        for j in range(d):\n"
             "            angle = pos / 10000 ** (2 * (j // 2) / d)\n"
             "            PE[pos, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)"),
        Edit("multiset_impl", "bites_weight_on_man = float(rbr_weights[1, 0] + rbr_weights[1, 2])",
             "bites_weight_on_man = 1.0 - rbr_weights[1, 1]  # 权重之和为 1"),
        Edit("symbolic_impl", "    E = scores.applyfunc(sp.exp)\n"
             "    weights = sp.Matrix(E.rows, E.cols, lambda i, j: E[i, j] / sum(E.row(i)))",
             "    rows = []\n    for i in range(scores.rows):\n"
             "        exps = [sp.exp(s) for s in scores.row(i)]\n"
             "        rows.append([e / sp.Add(*exps) for e in exps])\n"
             "    weights = sp.Matrix(rows)"),
    )),
    Variant("slices_div_term", "div_term 写法的位置编码（奇数 d 切片），P 由花式索引赋值，用 X[::-1] 交换", edits=(
        Edit("attention_impl", "    scores = scores - scores.max(axis=-1, keepdims=True)\n"
             "    weights = np.exp(scores)\n    weights = weights / weights.sum(axis=-1, keepdims=True)",
             "    lse = scores.max(axis=-1, keepdims=True)\n"
             "    lse = lse + np.log(np.exp(scores - lse).sum(axis=-1, keepdims=True))\n"
             "    weights = np.exp(scores - lse)"),
        Edit("perm_impl", "    return np.eye(len(perm))[perm]",
             "    n = len(perm)\n    P = np.zeros((n, n))\n    P[np.arange(n), list(perm)] = 1.0\n"
             "    return P"),
        Edit("hand_swap_impl", "X_swapped = X[[1, 0]]", "X_swapped = X[::-1]"),
        Edit("checker_impl", "    return bool(lhs.shape == rhs.shape and np.allclose(lhs, rhs, rtol=0, atol=atol))",
             "    return lhs.shape == rhs.shape and bool(np.allclose(lhs, rhs, atol=atol))"),
        Edit("pe_impl", "    pos = np.arange(n)[:, None]\n    i = np.arange(d)[None, :] // 2\n"
             "    angles = pos / np.power(10000.0, 2 * i / d)\n    PE = np.zeros((n, d))\n"
             "    PE[:, 0::2] = np.sin(angles[:, 0::2])\n    PE[:, 1::2] = np.cos(angles[:, 1::2])",
             "    position = np.arange(n, dtype=float)[:, None]\n"
             "    div_term = np.exp(np.arange(0, d, 2) * (-np.log(10000.0) / d))\n"
             "    PE = np.zeros((n, d))\n    PE[:, 0::2] = np.sin(position * div_term)\n"
             "    PE[:, 1::2] = np.cos(position * div_term[: d // 2])"),
        Edit("residual_impl", "P2 * symbolic_self_attention(X_sym, W_q_sym, W_k_sym, W_v_sym)[0]",
             "symbolic_self_attention(X_sym, W_q_sym, W_k_sym, W_v_sym)[0][[1, 0], :]"),
        Edit("multiset_impl", "repeat_matters = bool(not np.allclose(rbr_outputs[1], original_outputs[1]))",
             "repeat_matters = np.abs(rbr_outputs[1] - original_outputs[1]).max() > 1e-9"),
    )),
]

_PE_CELLS = frozenset({"test_positional_encoding", "test_attention_with_positions"})

MISTAKES = [
    Variant("inverse_permutation", "P 建成了逆置换：P @ X 等于 X[argsort(perm)]",
            edits=(Edit("perm_impl", "    return np.eye(len(perm))[perm]",
                        "    return np.eye(len(perm))[:, perm]"),),
            loses=frozenset({"test_permutation_matrix"}), feedback=(INVERSE_P.label,)),
    Variant("invariance_not_equivariance", "比较 f(X[perm]) 与 f(X)，而不是 f(X)[perm]",
            edits=(Edit("checker_impl", "    rhs = np.asarray(f(X))[perm]",
                        "    rhs = np.asarray(f(X))"),),
            loses=frozenset({"test_equivariance_checker"}), feedback=(INVARIANCE.label,)),
    Variant("pe_sin_cos_swapped", "位置编码偶数列放 cos、奇数列放 sin",
            edits=(Edit("pe_impl", "    PE[:, 0::2] = np.sin(angles[:, 0::2])\n"
                        "    PE[:, 1::2] = np.cos(angles[:, 1::2])",
                        "    PE[:, 0::2] = np.cos(angles[:, 0::2])\n"
                        "    PE[:, 1::2] = np.sin(angles[:, 1::2])"),),
            loses=_PE_CELLS, feedback=(PE_SWAPPED.label,)),
    Variant("pe_exponent_i_over_d", "位置编码的指数 2i/d 写成 i/d",
            edits=(Edit("pe_impl", "np.power(10000.0, 2 * i / d)", "np.power(10000.0, i / d)"),),
            loses=_PE_CELLS, feedback=(PE_EXPONENT.label,)),
    Variant("multiset_as_set", "“人咬人”里只算了一个“人”的权重（当成集合）",
            edits=(Edit("multiset_impl", "float(rbr_weights[1, 0] + rbr_weights[1, 2])",
                        "float(rbr_weights[1, 0])"),),
            loses=frozenset({"test_multiset"}), feedback=(MULTISET.label,)),
    Variant("compare_by_position", "狗咬人 / 人咬狗 按行号而不是按词比较输出",
            edits=(Edit("dog_impl", "np.allclose(out_mbd[word_order], out_dbm)",
                        "np.allclose(out_mbd, out_dbm)"),),
            loses=frozenset({"test_dog_bites_man"}), feedback=(BY_POSITION.label,)),
]
