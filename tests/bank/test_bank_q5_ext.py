"""Fast tests of the checks of q5's 拓展 (a whole layer, storage, extreme tokenizers,
timing): each names its misconception (no kernels, no notebook). The sample students of the
拓展, the timing rule the notebook states and the 200-seed sweeps are in test_bank_q5.py."""

from __future__ import annotations

import re

import numpy as np
import pytest
import sympy as sp

from autograder.bank import q5, q5_ext
from autograder.bank.lib.compare import CheckFailed
from autograder.bank.runner import run_check

SYMBOLIC = {"q5.crossover_length": "crossover_length", "q5.layer_ratio": "layer_ratio"}


def _fails(name: str, **values) -> str:
    with pytest.raises(CheckFailed) as err:
        run_check(name, **values)
    return str(err.value)


def test_measure_attention_seconds_fails_a_timer_around_nothing_at_any_ratio():
    def empty(ns, d, repeats, rng):   # what an empty timer reads: microseconds, 20x apart
        return np.where(np.asarray(ns) > 100, 2e-6, 1e-7)

    with pytest.raises(CheckFailed, match=q5_ext.TIMER_EMPTY.label):
        run_check("q5.measure_attention_seconds", measure_attention_seconds=empty)


def test_measure_attention_seconds_judges_a_reading_below_the_floor_at_once():
    """No load makes a real call faster than the floor, so such a reading is not measured
    again (a timer around nothing cost the sweep 18 attention calls a seed); a reading
    above the floor but too close to the small n's is measured again, up to 3 times."""
    calls = []

    def timer(reading):
        def measure(ns, d, repeats, rng):
            calls.append(len(ns))
            return np.where(np.asarray(ns) > 100, reading, 1e-5)
        return measure

    for reading, attempts in ((2e-6, 1), (6e-5, q5_ext.TIMING_ATTEMPTS)):
        calls.clear()
        with pytest.raises(CheckFailed, match=q5_ext.TIMER_EMPTY.label):
            run_check("q5.measure_attention_seconds", measure_attention_seconds=timer(reading))
        assert calls[3:] == [2] * attempts, (reading, calls)


def test_measure_attention_seconds_passes_a_cached_table_read_under_load():
    """Readings measured in this suite for n = 3 and n = 519 (the table fits in the cache):
    16 us and 1 ms, a ratio of 62. The old rule (100 times, no floor) failed this correct timer."""
    def cached(ns, d, repeats, rng):
        return np.where(np.asarray(ns) > 100, 1.0e-3, 1.6e-5)

    run_check("q5.measure_attention_seconds", measure_attention_seconds=cached)



def _layer(n, d, linear=24, quadratic=4):
    return linear * n * d * d + quadratic * n * n * d


@pytest.mark.parametrize("formula, label", [
    (lambda n, d: _layer(n, d, 8, 4), q5_ext.LAYER_NO_FFN),
    (lambda n, d: _layer(n, d, 6, 4), q5_ext.LAYER_ATTENTION_ONLY),
    (lambda n, d: _layer(n, d, 22, 4), q5_ext.LAYER_NO_OUTPUT),
    (lambda n, d: _layer(n, d, 12, 4), q5_ext.LAYER_FFN_WIDTH),
    (lambda n, d: _layer(n, d) // 2, q5_ext.LAYER_HALF),
    (lambda n, d: _layer(n, d, 24, 2), q5_ext.LAYER_NO_WEIGHTED_SUM),
    (lambda n, d: 28 * n * d * d, q5_ext.LAYER_ND2),
    (lambda n, d: q5._wrap32(_layer(n, d)), q5.INT32_OVERFLOW),
])
def test_layer_flops_names_mistake(formula, label):
    with pytest.raises(CheckFailed, match=label.label):
        run_check("q5.layer_flops", layer_flops=formula)


def test_layer_flops_refuses_floats():
    with pytest.raises(CheckFailed, match="浮点数"):
        run_check("q5.layer_flops", layer_flops=lambda n, d: float(_layer(n, d)))


D_POS, D_PLAIN = sp.Symbol("d", positive=True), sp.Symbol("d")


@pytest.mark.parametrize("value", [6 * D_POS, 6 * D_PLAIN, 6.0 * D_PLAIN, sp.Float(6) * D_POS])
def test_crossover_length_accepts_exact_and_float_coefficients(value):
    run_check("q5.crossover_length", crossover_length=value)


@pytest.mark.parametrize("value, match", [
    ([6 * D_PLAIN], "列表"),
    (1.5 * D_PLAIN, q5_ext.LAYER_ATTENTION_ONLY.label),
    (sp.Rational(3, 2) * D_POS, q5_ext.LAYER_ATTENTION_ONLY.label),
    (2 * D_PLAIN, q5_ext.LAYER_NO_FFN.label),
    (12 * D_PLAIN, q5_ext.LAYER_NO_WEIGHTED_SUM.label),
    (sp.Integer(0), "常数"),
    (0 * D_PLAIN + sp.Integer(0), "常数"),
    (6 * sp.Symbol("n"), "只含符号 d"),
    (sp.Eq(sp.Symbol("n"), 6 * D_PLAIN), "方程"),
])
def test_crossover_length_explains_wrong_answers(value, match):
    message = _fails("q5.crossover_length", crossover_length=value)
    assert re.search(match, message)
    assert "0.7071" not in message and "sp.exp" not in message


@pytest.mark.parametrize("name", sorted(SYMBOLIC))
@pytest.mark.parametrize("value", [None, "6*d", 4.47, [sp.Symbol("d")]], ids=["None", "str", "float", "list"])
def test_symbolic_answers_get_their_own_messages(name, value):
    """No message borrowed from another question (issue #13): q5 never asks for exact values."""
    message = _fails(name, **{SYMBOLIC[name]: value})
    assert "0.7071" not in message and "sp.exp" not in message and "精确" not in message


def _ratio(d, linear=24, quadratic=4):
    return 4 * (linear * d + quadratic * 4000) / (linear * d + quadratic * 1000)


@pytest.mark.parametrize("value", [
    _ratio(D_POS), _ratio(D_PLAIN), 4 * (6.0 * D_PLAIN + 4000) / (6 * D_PLAIN + 1000),
    sp.simplify(_ratio(D_PLAIN)),
])
def test_layer_ratio_accepts_equivalent_forms(value):
    run_check("q5.layer_ratio", layer_ratio=value)


@pytest.mark.parametrize("value, match", [
    (sp.Integer(16), q5_ext.RATIO_TABLE_ONLY.label),
    (16.0, q5_ext.RATIO_TABLE_ONLY.label),
    (sp.Integer(4), q5.RATIO_LINEAR.label),
    (_ratio(D_PLAIN, 6, 4), q5_ext.LAYER_ATTENTION_ONLY.label),
    (_ratio(D_PLAIN, 8, 4), q5_ext.LAYER_NO_FFN.label),
    (1 / _ratio(D_PLAIN), q5.RATIO_REVERSED.label),
    (_ratio(sp.Symbol("n")), "只含符号 d"),
])
def test_layer_ratio_explains_wrong_answers(value, match):
    with pytest.raises(CheckFailed, match=match):
        run_check("q5.layer_ratio", layer_ratio=value)


def test_the_figures_of_the_layer_model():
    """d = 4096: a whole layer becomes about 4.5 times as large; the old attention-only model
    gives 10.8 at d = 512; the crossover is 6d."""
    assert round(q5_ext._layer_ratio(4096), 1) == 4.5
    assert round(q5_ext._layer_ratio(512, 6, 4), 1) == 10.8
    assert q5_ext.layer_model(6 * 512, 512, 24, 0) == q5_ext.layer_model(6 * 512, 512, 0, 4)


@pytest.mark.parametrize("formula, label", [
    (lambda n, L, d, dtype="float16": 2 * n * n * L * d * np.dtype(dtype).itemsize, q5_ext.KV_QUADRATIC),
    (lambda n, L, d, dtype="float16": n * L * d * np.dtype(dtype).itemsize, q5_ext.KV_ONE_TENSOR),
    (lambda n, L, d, dtype="float16": 2 * n * d * np.dtype(dtype).itemsize, q5_ext.KV_NO_LAYERS),
    (lambda n, L, d, dtype="float16": 16 * n * L * d * np.dtype(dtype).itemsize, q5.BITS_AS_BYTES),
])
def test_kv_cache_bytes_names_mistake(formula, label):
    with pytest.raises(CheckFailed, match=label.label):
        run_check("q5.kv_cache_bytes", kv_cache_bytes=formula)


def test_kv_cache_bytes_default_is_float16():
    def default_float32(n, n_layers, d_model, dtype="float32"):
        return 2 * n * n_layers * d_model * np.dtype(dtype).itemsize

    with pytest.raises(CheckFailed, match="默认 float16"):
        run_check("q5.kv_cache_bytes", kv_cache_bytes=default_float32)


def test_loglog_slope_two_point_estimate_passes():
    def endpoints(ns, costs):
        ns, costs = np.asarray(ns, float), np.asarray(costs, float)
        return np.log(costs[-1] / costs[0]) / np.log(ns[-1] / ns[0])

    run_check("q5.loglog_slope", loglog_slope=endpoints)


@pytest.mark.parametrize("formula, label", [
    (lambda ns, c: np.polyfit(np.log(c), np.log(ns), 1)[0], q5_ext.LOGLOG_SWAPPED),
    (lambda ns, c: np.polyfit(np.log10(ns), np.log(c), 1)[0], q5_ext.LOGLOG_ONE_AXIS),
])
def test_loglog_slope_names_mistake(formula, label):
    with pytest.raises(CheckFailed, match=label.label):
        run_check("q5.loglog_slope", loglog_slope=formula)


@pytest.mark.parametrize("returned", [np.zeros(3), -np.ones(3), np.ones((3, 1)), np.array([np.nan] * 3)],
                         ids=["zeros", "negative", "column", "nan"])
def test_measure_attention_seconds_shape_and_sign(returned):
    def measure(ns, d, repeats, rng):
        return np.resize(returned, (len(ns),) + returned.shape[1:])

    with pytest.raises(CheckFailed):
        run_check("q5.measure_attention_seconds", measure_attention_seconds=measure)


def test_measure_attention_seconds_ignores_speed():
    def slow_but_fine(ns, d, repeats, rng):
        return 1e-3 * np.asarray(ns, dtype=float) ** 2

    run_check("q5.measure_attention_seconds", measure_attention_seconds=slow_but_fine)


def test_measure_attention_seconds_needs_larger_n_to_take_longer():
    def constant(ns, d, repeats, rng):
        return np.full(len(ns), 1e-3)

    with pytest.raises(CheckFailed, match=q5_ext.TIMER_EMPTY.label):
        run_check("q5.measure_attention_seconds", measure_attention_seconds=constant)


@pytest.mark.parametrize("formula, label", [
    (lambda a, b: b / a, q5.RATIO_LINEAR),
    (lambda a, b: (b / a) ** 3, q5.RATIO_CUBIC),
])
def test_relative_attention_cost_names_mistake(formula, label):
    with pytest.raises(CheckFailed, match=label.label):
        run_check("q5.relative_attention_cost", relative_attention_cost=formula)
