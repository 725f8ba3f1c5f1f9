"""The catalog of known-wrong ways to compute attention, and how to recognise them.

When a student's attention result is wrong, the grader recomputes each wrong variant
on the same hidden inputs and names the one the result matches. Names are stable keys
(used by tests and by the demo's sample students); descriptions are the Chinese text
shown in feedback, and always contain the Chinese name in 【】 so feedback can be
searched for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from . import reference as ref

__all__ = ["Misconception", "CATALOG", "register", "named_in", "attention_variants", "softmax_variants",
           "weights_variants", "match", "diagnoser", "naive_softmax"]


@dataclass(frozen=True)
class Misconception:
    """A named wrong idea: ``key`` is stable, ``label`` and ``explain`` are shown to students."""

    key: str
    label: str
    explain: str

    def describe(self) -> str:
        return f"【{self.label}】{self.explain}"


_ENTRIES = [
    Misconception("no_scaling", "缺少 1/√d_k 缩放",
                  "打分 Q·Kᵀ 没有除以 √d_k。d_k 大时点积很大，softmax 会过度尖锐。"),
    Misconception("divide_by_dk", "除以 d_k 而不是 √d_k",
                  "打分除以了 d_k。点积的标准差按 √d_k 增长，应除以 √d_k。"),
    Misconception("scale_sqrt_dmodel", "按 √d_model 缩放",
                  "用了 √d_model 缩放。讲义中 d_k 是 Key 的维度 K.shape[-1]，不是输入维度。"),
    Misconception("dk_is_n", "把 d_k 当成了 token 个数",
                  "缩放用的是 Key 的个数 n_k（K.shape[0]），不是 Key 的维度 d_k = K.shape[-1]。"
                  "讲义的例子里 n = d_k = 2，两者恰好相同。"),
    Misconception("scale_sqrt_dv", "按 √d_v 缩放",
                  "用了 Value 的维度 √d_v 缩放。应使用 Key 的维度 d_k = K.shape[-1]。"),
    Misconception("softmax_query_axis", "softmax 方向错误（沿 Query 方向）",
                  "softmax 沿着 Query（axis=0）归一化了。应对每个 Query 在所有 Key 上归一化，"
                  "即每一行权重之和为 1（axis=-1）。"),
    Misconception("naive_softmax_overflow", "softmax 数值溢出",
                  "softmax 直接计算 exp(z)，分数很大时溢出得到 NaN/inf。应先减去每行最大值再取 exp。"),
    # registered here (not in q3) so q1's softmax checks name it too; the key stays q3's
    Misconception("q3_global_max", "减去了整张打分表的最大值",
                  "数值稳定的 softmax 要减去**每一行自己的**最大值。减去整张表的最大值时，如果某一行的打分都"
                  "比全表最大值小很多（小 745 以上），这一行的 e 的指数全部下溢成 0，得到 0/0 = NaN。"),
    Misconception("raw_scores", "忘了 softmax",
                  "直接用打分（未经 softmax）去加权 V。权重应当非负且每行和为 1。"),
    Misconception("weights_instead_of_output", "返回了权重而不是输出",
                  "返回的是注意力权重矩阵，而题目要的是加权求和后的输出 weights·V。"),
    Misconception("k_as_v", "把 K 当成了 V",
                  "加权求和用了 K。Q/K 决定“看哪里”，V 决定“取什么”，输出应是 weights·V。"),
    Misconception("q_as_v", "把 Q 当成了 V",
                  "加权求和用了 Q。输出应是 weights·V。"),
    Misconception("transposed_output", "输出被转置",
                  "输出的形状应为 (n_q, d_v)，得到的是它的转置。"),
    Misconception("transposed_weights", "权重被转置",
                  "权重矩阵行对应 Query、列对应 Key；得到的是它的转置（例如用了 K·Qᵀ）。"),
    Misconception("exp_without_normalising", "softmax 没有归一化",
                  "只算了 exp(z)，没有除以总和，结果之和不为 1。"),
    Misconception("global_normalisation", "softmax 对全部元素归一化",
                  "把所有元素一起归一化（全表之和为 1），而不是沿指定的 axis 归一化。"),
    Misconception("weights_depend_on_v", "权重随 W_v 改变",
                  "只改变 W_v 时权重却变了。权重只由 Q 和 K 决定（看哪里），V 只决定取什么。"),
    Misconception("output_not_linear_in_v", "输出没有随 W_v 线性缩放",
                  "W_v 放大 c 倍时，输出应恰好放大 c 倍（权重不变，V 放大 c 倍）。"),
]

#: Every misconception the bank knows, keyed by stable name. Assignment modules add
#: their own with :func:`register` when they are imported.
CATALOG: dict[str, Misconception] = {m.key: m for m in _ENTRIES}


def register(key: str, label: str, explain: str) -> Misconception:
    """Add an assignment-specific misconception to :data:`CATALOG` and return it."""
    entry = Misconception(key, label, explain)
    if CATALOG.get(key, entry) != entry:
        raise ValueError(f"misconception {key!r} registered twice with different text")
    CATALOG[key] = entry
    return entry


def named_in(message: str) -> list[Misconception]:
    """The registered misconceptions a failure message names (each once, in the order the
    message names them): a description always carries its label in 【】."""
    found = sorted((at, m.key) for m in CATALOG.values()
                   if (at := message.find(f"【{m.label}】")) >= 0)
    return [CATALOG[key] for _at, key in found]


def naive_softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    with np.errstate(all="ignore"):
        e = np.exp(z)
        return e / np.sum(e, axis=axis, keepdims=True)


def softmax_variants(z: np.ndarray, axis: int = -1) -> dict[str, np.ndarray]:
    """Wrong softmax results on ``z`` keyed by misconception."""
    z = np.asarray(z, dtype=np.float64)
    other = 0 if (axis % z.ndim) != 0 else (1 if z.ndim > 1 else None)
    with np.errstate(all="ignore"):
        whole = np.exp(z - np.max(z))
        global_max = whole / np.sum(whole, axis=axis, keepdims=True)
    out = {
        # before the naive softmax: that one matches any result with a NaN in it
        "q3_global_max": global_max,
        "naive_softmax_overflow": naive_softmax(z, axis),
        "global_normalisation": ref.softmax(z.ravel()).reshape(z.shape),
    }
    with np.errstate(all="ignore"):
        out["exp_without_normalising"] = np.exp(z)
    if other is not None:
        out["softmax_query_axis"] = ref.softmax(z, axis=other)
    return out


def attention_variants(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, d_model: int | None = None
) -> dict[str, np.ndarray]:
    """Wrong attention outputs on the same inputs, keyed by misconception."""
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    s = Q @ K.T
    d_k, d_v = K.shape[-1], V.shape[-1]
    w = ref.softmax(s / np.sqrt(d_k))
    out = {
        "no_scaling": ref.softmax(s) @ V,
        "divide_by_dk": ref.softmax(s / d_k) @ V,
        "dk_is_n": ref.softmax(s / np.sqrt(K.shape[0])) @ V,
        "scale_sqrt_dv": ref.softmax(s / np.sqrt(d_v)) @ V,
        "softmax_query_axis": ref.softmax(s / np.sqrt(d_k), axis=0) @ V,
        "naive_softmax_overflow": naive_softmax(s / np.sqrt(d_k)) @ V,
        "raw_scores": (s / np.sqrt(d_k)) @ V,
        "weights_instead_of_output": w,
        "transposed_output": (w @ V).T,
    }
    out["k_as_v"] = w @ K
    if Q.shape[0] == K.shape[0]:
        out["q_as_v"] = w @ Q
    if d_model is not None:
        out["scale_sqrt_dmodel"] = ref.softmax(s / np.sqrt(d_model)) @ V
    return out


def weights_variants(Q: np.ndarray, K: np.ndarray, d_model: int | None = None) -> dict[str, np.ndarray]:
    """Wrong attention weights on the same inputs, keyed by misconception."""
    Q, K = np.asarray(Q, dtype=np.float64), np.asarray(K, dtype=np.float64)
    s = Q @ K.T
    d_k = K.shape[-1]
    out = {
        "no_scaling": ref.softmax(s),
        "divide_by_dk": ref.softmax(s / d_k),
        "dk_is_n": ref.softmax(s / np.sqrt(K.shape[0])),
        "softmax_query_axis": ref.softmax(s / np.sqrt(d_k), axis=0),
        "naive_softmax_overflow": naive_softmax(s / np.sqrt(d_k)),
        "raw_scores": s / np.sqrt(d_k),
        "transposed_weights": ref.softmax(s / np.sqrt(d_k)).T,
    }
    if d_model is not None:
        out["scale_sqrt_dmodel"] = ref.softmax(s / np.sqrt(d_model))
    return out


def _reproduces(arr: np.ndarray, wrong: np.ndarray, rtol: float, atol: float) -> bool:
    """``arr`` is ``wrong``: same shape, non-finite in exactly the same places (a result
    that overflowed somewhere else came from another formula), close everywhere else."""
    if arr.shape != wrong.shape:
        return False
    bad = ~np.isfinite(wrong)
    if not np.array_equal(bad, ~np.isfinite(arr)):
        return False
    return bool(np.allclose(arr[~bad], wrong[~bad], rtol=rtol, atol=atol))


def match(
    actual: object, variants: Mapping[str, np.ndarray], *, rtol: float = 1e-5, atol: float = 1e-7
) -> str | None:
    """The Chinese description of the one variant ``actual`` reproduces, else ``None``.

    A diagnosis names what the student did only when its variant reproduces the student's
    values: NaN and inf where the variant has them, and nowhere else. When two different
    variants reproduce them (the inputs could not tell the formulas apart), none is named.
    """
    try:
        arr = np.asarray(actual, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    found = {key for key, wrong in variants.items() if _reproduces(arr, wrong, rtol, atol)}
    return CATALOG[found.pop()].describe() if len(found) == 1 else None


def diagnoser(variants: Mapping[str, np.ndarray]) -> Callable[[np.ndarray], str | None]:
    """A ``diagnose`` callback for :func:`autograder.bank.lib.compare.assert_close`."""
    return lambda arr: match(arr, variants)
