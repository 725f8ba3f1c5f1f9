"""q4_single_token's extensions (拓展 A–C): what each check accepts, what it names, and
where its hidden inputs lie. The sample class and the seed sweep of every mistake,
extensions' included, are in test_bank_q4.py."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from autograder.bank import Context, q4_ext
from autograder.bank.lib.compare import CheckFailed
from autograder.bank.lib.misconceptions import CATALOG
from autograder.bank.runner import run_check

S = sp.Symbol("s")


def _fails(name: str, match: str | None = None, **values) -> str:
    with pytest.raises(CheckFailed, match=match) as err:
        run_check(name, **values)
    return str(err.value)


# ------------------------------------------------------------------ 拓展 A: SymPy


@pytest.mark.parametrize("form", [
    1, sp.Integer(1), sp.exp(S) / sp.exp(S), sp.Matrix([[1]]),
    sp.exp(sp.Symbol("s", real=True)) / sp.Add(sp.exp(sp.Symbol("s", real=True))),
    sp.Mul(sp.exp(S), sp.Pow(sp.exp(S), -1), evaluate=False),
    (sp.cosh(S) + sp.sinh(S)) / sp.exp(S),
])
def test_softmax_symbolic_accepts_any_equivalent_form(form):
    run_check("q4.softmax_symbolic", softmax_single_symbolic=form)


@pytest.mark.parametrize("form, words", [
    (S, CATALOG["raw_scores"].label), (sp.exp(S), CATALOG["exp_without_normalising"].label),
    (1.0, "浮点数"), (sp.Rational(1, 2), "不等价"), (sp.Symbol("t"), "未预期的符号"),
])
def test_softmax_symbolic_wrong_answers_are_explained(form, words):
    _fails("q4.softmax_symbolic", words, softmax_single_symbolic=form)


def _symbolic_inputs():
    x = sp.Matrix([sp.symbols("x1 x2")])
    W = {w: sp.Matrix(2, 2, sp.symbols(f"{w}11 {w}12 {w}21 {w}22")) for w in "qkv"}
    return x, W


@pytest.mark.parametrize("make", [
    lambda x, W: sp.zeros(1, 2),
    lambda x, W: sp.zeros(2, 1),
    lambda x, W: (sp.sin(x[0]) ** 2 + sp.cos(x[0]) ** 2 - 1) * x * W["v"],
    lambda x, W: [[0, 0]],
])
def test_residual_symbolic_accepts_any_form_of_zero(make):
    x, W = _symbolic_inputs()
    run_check("q4.residual_symbolic", symbolic_single_token_residual=make(x, W))


@pytest.mark.parametrize("make, words", [
    (lambda x, W: x - x * W["v"], CATALOG["output_is_x"].label),
    (lambda x, W: x * W["q"] - x * W["v"], CATALOG["q_as_v"].label),
    (lambda x, W: ((x * W["q"] * (x * W["k"]).T)[0, 0] / sp.sqrt(2) - 1) * x * W["v"],
     CATALOG["raw_scores"].label),
    (lambda x, W: sp.zeros(2, 2), "形状"),
    (lambda x, W: sp.Matrix([[0.0, 0]]), "浮点数"),
])
def test_residual_symbolic_wrong_answers_are_explained(make, words):
    x, W = _symbolic_inputs()
    _fails("q4.residual_symbolic", words, symbolic_single_token_residual=make(x, W))


def test_residual_symbols_are_matched_by_name():
    x = sp.Matrix([sp.symbols("x1 x2", real=True)])
    W_v = sp.Matrix(2, 2, sp.symbols("v11 v12 v21 v22", positive=True))
    run_check("q4.residual_symbolic", symbolic_single_token_residual=x * W_v - x * W_v)
    _fails("q4.residual_symbolic", CATALOG["output_is_x"].label,
           symbolic_single_token_residual=x - x * W_v)


# ------------------------------------------------------------------ 拓展 B: two tokens


def _stable_sigmoid(d):
    d = np.asarray(d, dtype=float)
    e = np.exp(-np.abs(d))
    return np.where(d >= 0, 1 / (1 + e), e / (1 + e))


@pytest.mark.parametrize("right", [
    _stable_sigmoid,
    lambda d: np.exp(-np.logaddexp(0.0, -np.asarray(d))),
    lambda d: 1 / (1 + np.exp(-np.asarray(d))),  # overflows to inf on the way, ends exact
    lambda d: (np.tanh(np.asarray(d) / 2) + 1) / 2,
    lambda d: list(_stable_sigmoid(d).tolist()),
])
def test_two_token_weight_accepts_correct_forms(right):
    run_check("q4.two_token_weight", two_token_weight=right)


@pytest.mark.parametrize("wrong, words", [
    (lambda d: _stable_sigmoid(-np.asarray(d)), "Δs 的方向弄反了"),
    (lambda d: np.exp(d) / (np.exp(d) + 1), "两个 token 的权重数值溢出"),
    (lambda d: np.exp(d), CATALOG["exp_without_normalising"].label),
    (lambda d: np.ones_like(d), "不一致"),
    (lambda d: float(_stable_sigmoid(np.ravel(d))[0]), "形状"),
    (lambda d: _stable_sigmoid(np.asarray(d) / np.sqrt(2)), "不一致"),
])
def test_two_token_weight_wrong_answers_are_explained(wrong, words):
    _fails("q4.two_token_weight", words, two_token_weight=wrong)


D = sp.Symbol("delta")
S1, S2 = sp.symbols("s1 s2")


@pytest.mark.parametrize("form", [
    1 / (1 + sp.exp(-D)), sp.exp(D) / (sp.exp(D) + 1), (sp.tanh(D / 2) + 1) / 2,
    (sp.exp(S1) / (sp.exp(S1) + sp.exp(S2))).subs(S1, S2 + D),
    1 / (1 + sp.exp(-sp.Symbol("delta", real=True))),
])
def test_two_token_symbolic_accepts_any_equivalent_form(form):
    run_check("q4.two_token_symbolic", two_token_weight_symbolic=form)


@pytest.mark.parametrize("form, words", [
    (1 / (1 + sp.exp(D)), "Δs 的方向弄反了"),
    (sp.exp(D), CATALOG["exp_without_normalising"].label),
    (sp.exp(S1) / (sp.exp(S1) + sp.exp(S2)), "s1, s2"),
    (1 / (1 + sp.exp(-1.0 * D)), "浮点数"),
    (sp.Rational(1, 2), "不等价"),
    ("1/(1+exp(-delta))", "字符串"),
])
def test_two_token_symbolic_wrong_answers_are_explained(form, words):
    _fails("q4.two_token_symbolic", words, two_token_weight_symbolic=form)


def test_the_sign_message_does_not_give_the_formula():
    message = _fails("q4.two_token_symbolic", two_token_weight_symbolic=1 / (1 + sp.exp(D)))
    assert "期望" not in message and "e^(−delta)" not in message


# ------------------------------------------------------------------ 拓展 C: decoding with a KV cache


def _decode(q, K, V, axis=-1, scale=True):
    q, K, V = np.atleast_2d(q), np.asarray(K), np.asarray(V)
    s = q @ K.T / (np.sqrt(K.shape[-1]) if scale else 1)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=axis, keepdims=True)) @ V


@pytest.mark.parametrize("wrong, words", [
    (lambda q, K, V: np.asarray(V)[-1:], CATALOG["decode_degenerate"].label),
    (lambda q, K, V: _decode(q, K, V, axis=0), CATALOG["softmax_query_axis"].label),
    (lambda q, K, V: _decode(q, K, V, scale=False), CATALOG["no_scaling"].label),
    (lambda q, K, V: np.asarray(V).mean(axis=0, keepdims=True), "不一致"),
    (lambda q, K, V: _decode(q, K, V)[0], "形状"),
])
def test_decode_step_wrong_answers_are_explained(wrong, words):
    _fails("q4.decode_step", words, decode_step=wrong)


def test_decode_step_checks_the_degenerate_cache_too():
    """Right for t > 1, wrong for t = 1: the one-token cache is part of the check."""
    def no_single(q, K, V):
        return np.zeros((1, np.shape(V)[1])) if np.shape(K)[0] == 1 else _decode(q, K, V)

    _fails("q4.decode_step", "t=1", decode_step=no_single)


def _kv(decode=_decode, cache=lambda K, V, i: (K[: i + 1], V[: i + 1])):
    def kv_cache_decode(X, W_q, W_k, W_v):
        X = np.asarray(X, dtype=float)
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        return np.vstack([decode(Q[i : i + 1], *cache(K, V, i)) for i in range(len(X))])

    return kv_cache_decode


def test_kv_cache_decode_accepts_the_loop():
    run_check("q4.kv_cache_decode", kv_cache_decode=_kv())


@pytest.mark.parametrize("wrong, words", [
    (_kv(cache=lambda K, V, i: (K, V)), "解码时看到了后面的 token"),
    (_kv(cache=lambda K, V, i: (K[:i], V[:i])), "缓存里漏了当前 token 自己"),
    (lambda X, W_q, W_k, W_v: (np.asarray(X) @ W_v)[1:], "缓存里漏了当前 token 自己"),
    (_kv(decode=lambda q, K, V: np.asarray(V)[-1:]), CATALOG["decode_degenerate"].label),
    (_kv(decode=lambda q, K, V: _decode(q, K, V, axis=0)), CATALOG["softmax_query_axis"].label),
    (_kv(decode=lambda q, K, V: _decode(q, K, V, scale=False)), CATALOG["no_scaling"].label),
    (_kv(cache=lambda K, V, i: (K[max(i, 1) - 1 : i + 1], V[max(i, 1) - 1 : i + 1]) if i else
         (K[:2], V[:2])), "位置 1 的输出不对"),
])
def test_kv_cache_decode_wrong_answers_are_explained(wrong, words):
    _fails("q4.kv_cache_decode", words, kv_cache_decode=wrong)


def _max_weight(scores: np.ndarray) -> float:
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return float((w / w.sum(axis=-1, keepdims=True)).max())


def test_decoding_inputs_are_spread_but_not_saturated():
    """Over 200 seeds the scaled scores of every decoding case spread by SCORE_SPREAD, so
    no weight row is one-hot (a softmax without 1/√d_k could pass as a saturated one)."""
    largest = 0.0
    for seed in range(200):
        ctx = Context("q4.decode_step", seed=seed)
        for t in (2, 5, 8):
            q, K, _ = q4_ext._decode_inputs(ctx, t)
            scores = q @ K.T / np.sqrt(K.shape[1])
            assert np.isclose(np.std(scores), q4_ext.SCORE_SPREAD)
            largest = max(largest, _max_weight(scores))
        X, W_q, W_k, _ = q4_ext._kv_inputs(ctx, 5)
        scores = (X @ W_q) @ (X @ W_k).T / np.sqrt(W_k.shape[1])
        assert np.isclose(np.std(scores[np.tril_indices(5)]), q4_ext.SCORE_SPREAD)
    assert largest < 1 - 1e-4, largest


def test_the_old_decoding_inputs_were_saturated():
    """Why the spread is set: the kv inputs drawn as before (W_q = 2·randn) give weight
    rows within 1e-6 of one-hot on some seeds, where 1/√d_k hardly matters."""
    saturated = 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        d_model, d_k = rng.choice(np.arange(2, 8), size=2, replace=False)
        X, W_q, W_k = rng.standard_normal((5, d_model)), 2 * rng.standard_normal((d_model, d_k)), \
            rng.standard_normal((d_model, d_k))
        scores = np.where(np.tri(5, dtype=bool), (X @ W_q) @ (X @ W_k).T / np.sqrt(d_k), -np.inf)
        saturated += _max_weight(scores[1:]) > 1 - 1e-6
    assert saturated > 0


def test_the_spread_is_what_catches_decoding_without_scaling(monkeypatch):
    """Shown to fail when the guard is removed: with saturated decoding scores (spread 20
    instead of SCORE_SPREAD) a decode_step without 1/√d_k passes on some of 100 seeds
    (36 of 200 when measured); with the spread it is lost on all 200 (test_bank_q4)."""
    import seeds
    from helpers import solution_namespace

    from autograder.samples import q4 as samples_q4

    variant = next(v for v in samples_q4.MISTAKES if v.name == "decode_no_scaling")
    solution_namespace("q4_single_token", variant)
    monkeypatch.setattr(seeds, "visible_failures", lambda *args: {})
    monkeypatch.setattr(q4_ext, "SCORE_SPREAD", 20.0)
    survived = seeds.surviving_seeds("q4_single_token", variant, cells=["test_decode_step"],
                                     seeds=range(100))
    assert survived["test_decode_step"]
