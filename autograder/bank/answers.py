"""What each graded cell's answer looks like in text: the values and formulas no visible
text of the release may state before that cell (issue 30, "no answer before it is asked").

``autograder build`` copies them into each assignment's manifest (``answers``: grade cell
-> texts); ``tests/test_leaks.py`` scans every release notebook's visible text (prose,
given code, visible test source and its assert messages) up to and including the cell
that asks, and fails on any of them. A text that is a number matches as a whole number
(``1.5`` is not found in ``1.53`` or ``21.5``); any other text matches as it is written.
Lecture numbers the question itself gives (0.670, 1.340 …) are not answers.
"""

from __future__ import annotations

__all__ = ["ANSWERS", "CONCLUSIONS", "answers_for"]

ANSWERS: dict[str, dict[str, tuple[str, ...]]] = {
    "q1_value_scaling": {
        # the one hand step asks for weights_1 and output_1; W_v = 3I leaves the weights at the
        # lecture's, so quoting them before the step gives weights_1 (and with it output_1) away
        "test_hand_output": ("2.009", "0.991", "2.010", "0.990", "[2.01, 0.99]",
                             "0.670 / 0.330", "[0.670, 0.330]", "weights_1 @ (X @ (3 * I))"),
        "test_output_scale_factor": ("1.5 倍", "1.5", "3/2", "np.linalg.norm(output_1) / np.linalg.norm"),
        "test_self_attention": ("attention_weights(X_3 @ W_qk", "attention(X_3 @ W_qk"),
        "test_apple_outputs": ("2.152", "0.284"),
        "test_apple_weights": ("0.576",),
        "test_weights_3Wq": ("attention_weights(X @ (3 * I), X @ I)",),
        # 拓展 A's written answer (keyed by its prompt: an extension's answer cell has no
        # grade id in the release): c is the inverse temperature, T = 1/c
        "md_written_temperature": ("inverse temperature $c$", "T = 1/c", "逆温度”的作用"),
        # 拓展 B: its function of c; the folded model answers of 拓展 A come before it
        "test_w11_of_c": ("1/(1 + e^{-c/\\sqrt{2}})", "e^{-c/\\sqrt{2}}"),
    },
    "q2_dk_growth": {
        "test_hand_aligned_scaled": ("14.14", "14.1", "10√2"),
        "test_independent_growth": ("恰好是 d_to/d_from", "√(d_to/d_from)", "np.sqrt(d_to / d_from)",
                                    "把方差的倍数当成了典型大小的倍数"),
        "test_aligned_growth": ("倍数是 1",),
        # the written answer's (2) and (3): aligned vectors do not cancel, and scaling does not
        # make their score independent of d_k
        "written_growth": ("以为方向差不多的向量也会正负抵消", "以为除以 √d_k 后打分就不再随 d_k 变化"),
        # 拓展 C.6 asks how a sharp softmax makes the gradient small
        "md_written_chain": ("每一项都接近 0",),
    },
    "q3_permutation": {
        # the one hand step: the new position 1's output with W_v_hand (its weights are the
        # lecture's, in the new order: quoting them in that order gives hand_weights away)
        "test_hand_output": ("2.340", "3.340", "2.3395", "3.3395", "[2.34, 3.34]", "[0.670, 0.330]",
                             "hand_weights @ (X_new @ W_v_hand)", "X_new @ W_v_hand"),
        "test_hand_swap": ("swapped_outputs[::-1]", "只是换了标签"),
        "test_multiset": ("0.497", "出现了几次", "的输出变了", "把多重集合当成了集合"),
    },
    "q4_single_token": {
        # the one hand weight: softmax of one score is 1 whatever the score
        "test_hand_weights": ("权重恒为 1", "权重都是 1", "e^{s}/e^{s}"),
        "test_hand_output": ("[2.0, 0.0]", "[2, 0]"),
        "test_attention_output": ("w @ (x @ W_v)", "输出 = xW_v", "输出 = x·W_v"),
        "test_qk_invariance": ("用到了 d_k 维的量",),
        # a message naming the missing W_v as the mistake gives 'output = x·W_v' away
        "test_linear_map": ("M = W_v", "return W_v", "忘了乘 W_v", "（输出 = x）"),
        # 拓展 A's residual subtracts the core's answer: naming it gives output = x·W_v away
        "test_residual_symbolic": ("再减去 $xW_v$", "输出 − x·W_v", "x_sym - x_sym * W_v_sym",
                                   "忘了乘 W_v"),
        "test_two_token_symbolic": ("\\sigma(\\Delta s)", "1/(1 + e^{-\\Delta s})"),
        # 拓展 C's written answer: a decoding step degenerates only when the cache holds one token
        "md_written_decode": ("以为一步解码也退化成只看自己",),
    },
    "q5_cost_scaling": {
        "test_entries_2": ("entries_2 == 4",),
        "test_entries_1000": ("10^6", "1000000", "1,000,000"),
        "test_table_ratio": ("16 倍", "= 16", "4^2", "4²"),
        "test_token_multipliers": ("1.50", "p_zh = 1.5"),
        "test_attention_multipliers": ("2.25", "1.94"),
        "test_relative_attention_cost": ("(b/a)²", "(b/a)^2", "(b / a) ** 2", "p² ="),
        "test_crossover_length": ("n = 6d", "24nd^2 + 4n^2d"),
        "test_layer_ratio": ("4.47", "6.95", "24nd^2 + 4n^2d"),
    },
}

#: Conclusions the release prints nowhere, not even after the cells that grade them: they
#: stood right under those cells, where a student working on the cell sees them (issue 30).
#: They live in the feedback, the exercises' folded model answers and docs/answers.md.
CONCLUSIONS: dict[str, tuple[str, ...]] = {
    "q1_value_scaling": ("T = 1/c", "inverse temperature"),
    "q3_permutation": ("0.497", "输出向量一模一样", "因果掩码打破了置换等变", "**不等于**"),
    "q4_single_token": ("\\sigma(\\Delta s)",),
    "q5_cost_scaling": ("4.47", "6.95", "n = 6d", "24nd^2 + 4n^2d", "p = 1.50"),
}


def answers_for(assignment: str) -> dict[str, list[str]]:
    """Grade cell -> the texts of its answer (JSON-ready, for the manifest)."""
    return {cell: list(texts) for cell, texts in ANSWERS.get(assignment, {}).items()}
