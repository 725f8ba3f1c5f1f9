"""Issue 30: a diagnosis (【label】) names what the student did only when its variant, and
no other, reproduces the student's values; otherwise the message says what differed.
Each of the three labels that misled is tested here; each test fails on the old code."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import solution_namespace, visible_failures

from autograder.bank.lib import misconceptions as mc
from autograder.bank.runner import evaluate
from autograder.samples import q1 as samples_q1

SEEDS = range(40)
DV = mc.CATALOG["scale_sqrt_dv"].label
DK = mc.CATALOG["divide_by_dk"].label
N = mc.CATALOG["dk_is_n"].label
NAIVE = mc.CATALOG["naive_softmax_overflow"].label


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _weights(d_k_of):
    """attention_weights with d_k read from K by ``d_k_of`` (a student's misreading)."""
    def attention_weights(Q, K):
        Q, K = np.asarray(Q, dtype=float), np.asarray(K, dtype=float)
        return _softmax(Q @ K.T / np.sqrt(d_k_of(K)))
    return attention_weights


def _self_attention(d_k_of):
    def self_attention(X, W_q, W_k, W_v):
        X = np.asarray(X, dtype=float)
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        w = _softmax(Q @ K.T / np.sqrt(d_k_of(K)))
        return w @ V, w
    return self_attention


def _messages(check: str, **values) -> list[str]:
    out = [evaluate(check, values, seed=seed) for seed in SEEDS]
    assert not any(o.passed for o in out)
    return [o.message + o.detail for o in out]


@pytest.mark.parametrize("check, keyword, make", [
    ("q1.attention_weights", "attention_weights", _weights),
    ("q1.self_attention", "self_attention", _self_attention),
    ("q3.self_attention", "self_attention", _self_attention),
])
def test_d_k_as_the_number_of_axes_is_not_called_scaling_by_d_v(check, keyword, make):
    """d_k = K.ndim (= 2) reproduced √d_v scaling whenever the hidden d_v was 2."""
    for message in _messages(check, **{keyword: make(lambda K: K.ndim)}):
        assert DV not in message and DK not in message


@pytest.mark.parametrize("check, keyword, make", [
    ("q1.attention_weights", "attention_weights", _weights),
    ("q1.self_attention", "self_attention", _self_attention),
    ("q3.self_attention", "self_attention", _self_attention),
])
def test_d_k_as_the_number_of_keys_is_named_as_such(check, keyword, make):
    """d_k = n_k was called "除以 d_k 而不是 √d_k" when n_k happened to be d_k²."""
    for message in _messages(check, **{keyword: make(lambda K: K.shape[0])}):
        assert N in message and DK not in message


def test_a_global_max_softmax_is_not_called_a_softmax_without_the_max():
    """The naive softmax matched any result with a NaN in it: a softmax that subtracts the
    whole table's maximum was told it "直接计算 exp(z)"."""
    z = np.array([[1e4, 0.0, -5.0], [-2000.0, -2001.0, -2003.0]])
    with np.errstate(all="ignore"):
        e = np.exp(z - z.max())
        global_max = e / e.sum(axis=-1, keepdims=True)
    assert np.isnan(global_max[1]).all() and np.isfinite(global_max[0]).all()
    assert mc.match(global_max, {"naive_softmax_overflow": mc.naive_softmax(z)}) is None
    assert mc.match(mc.naive_softmax(z), {"naive_softmax_overflow": mc.naive_softmax(z)})


def test_two_variants_that_agree_name_neither():
    w = np.array([[0.5, 0.5]])
    assert mc.match(w, {"no_scaling": w, "divide_by_dk": w.copy()}) is None
    assert NAIVE not in (mc.match(w, {"no_scaling": w}) or "")


@pytest.mark.parametrize("name", ["no_sqrt_dk", "softmax_wrong_axis", "weights_from_v"])
def test_a_wrong_self_attention_is_not_told_it_used_k_as_v(name):
    """The visible test_self_attention appended 【把 K 当成了 V】 to every wrong output."""
    variant = next(v for v in samples_q1.MISTAKES if v.name == name)
    message = visible_failures("q1_value_scaling", variant).get("test_self_attention", "")
    assert mc.CATALOG["k_as_v"].label not in message


def test_k_as_v_is_still_named_where_it_is_what_the_student_did():
    from helpers import grade_namespace
    variant = next(v for v in samples_q1.MISTAKES if v.name == "k_as_v")
    verdicts = grade_namespace("q1_value_scaling", solution_namespace("q1_value_scaling", variant))
    assert mc.CATALOG["k_as_v"].label in verdicts["test_self_attention"]
