"""The check-bank machinery: quiet, deterministic, explained, never crashing."""

from __future__ import annotations

import io
import sys
import warnings
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest

from autograder import bank
from autograder.bank import Context, checks_for, get_check, runner
from autograder.bank.lib.compare import CheckFailed
from autograder.bank.runner import GraderError, evaluate, run_check, seed_for, self_check
from autograder.settings import ASSIGNMENTS


def good_softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def noisy_softmax(z, axis=-1):
    warnings.warn("a harmless warning from the student's code", stacklevel=2)
    print("debug print", file=sys.stderr)
    return good_softmax(z, axis)


def naive_softmax(z, axis=-1):
    e = np.exp(np.asarray(z, dtype=float))  # overflows and warns for large z
    return e / e.sum(axis=axis, keepdims=True)


def test_passing_check_returns_none():
    assert run_check("q1.softmax", softmax=good_softmax) is None


@pytest.mark.parametrize("student", [noisy_softmax, naive_softmax])
def test_check_never_writes_to_stderr(student):
    err = io.StringIO()
    with redirect_stderr(err):
        try:
            run_check("q1.softmax_stable", softmax=student)
        except CheckFailed:
            pass
    assert err.getvalue() == ""


def test_failure_is_a_chinese_assertion_error_naming_the_misconception():
    with pytest.raises(AssertionError, match="softmax 数值溢出"):
        run_check("q1.softmax_stable", softmax=naive_softmax)


def test_failure_renders_without_the_graders_traceback():
    with pytest.raises(CheckFailed) as info:
        run_check("q1.softmax_stable", softmax=naive_softmax)
    rendered = "\n".join(info.value._render_traceback_())
    assert "reference" not in rendered and "File " not in rendered
    assert info.value.__cause__ is None and info.value.__suppress_context__


@pytest.mark.parametrize("value, message", [
    (None, "应是一个函数"),
    ("softmax", "应是一个函数"),
    (lambda z, axis=-1: None, "返回了 None"),
    (lambda z, axis=-1: "0.5", "应是数值数组"),
    (lambda z, axis=-1: 1 / 0, "ZeroDivisionError"),
])
def test_broken_answers_get_a_clear_message(value, message):
    with pytest.raises(CheckFailed, match=message):
        run_check("q1.softmax", softmax=value)


def test_not_implemented_is_reported_as_such():
    def stub(z, axis=-1):
        raise NotImplementedError()

    with pytest.raises(CheckFailed, match="还没有实现"):
        run_check("q1.softmax", softmax=stub)


def test_a_broken_check_is_a_grader_error_not_a_students_failure():
    outcome = evaluate("q1.softmax", {})  # the check needs `softmax`: our mistake, not theirs
    assert outcome.status == "error" and "TypeError" in outcome.detail
    assert "不是你的答案的问题" in outcome.message
    with pytest.raises(GraderError):
        run_check("q1.softmax")


def test_a_student_catching_exception_cannot_swallow_the_time_limit(monkeypatch):
    monkeypatch.setattr(bank, "_REGISTRY", dict(bank._REGISTRY))
    short = bank.Check("q1.softmax_stable", "慢", get_check("q1.softmax_stable").func, seconds=0.3)
    monkeypatch.setitem(bank._REGISTRY, "q1.softmax_stable", short)

    def stubborn(z, axis=-1):
        while True:
            try:
                while True:
                    pass
            except Exception:  # noqa: BLE001 - exactly what a hostile answer would do
                continue

    outcome = evaluate("q1.softmax_stable", {"softmax": stubborn}, seed=1)
    assert outcome.status == "failed" and "运行超过" in outcome.message


def test_looping_answer_is_stopped_with_a_message(monkeypatch):
    monkeypatch.setattr(bank, "_REGISTRY", dict(bank._REGISTRY))
    slow = bank.Check("q1.softmax", "慢", get_check("q1.softmax").func, seconds=0.3)
    monkeypatch.setitem(bank._REGISTRY, "q1.softmax", slow)

    def forever(z, axis=-1):
        while True:
            pass

    with pytest.raises(CheckFailed, match="运行超过"):
        run_check("q1.softmax", softmax=forever)


def test_seed_is_stable_and_differs_between_students_checks_and_salts():
    first = seed_for("q1.softmax", student="alice", salt="s")
    assert seed_for("q1.softmax", student="alice", salt="s") == first
    assert seed_for("q1.attention", student="alice", salt="s") != first
    assert seed_for("q1.softmax", student="bob", salt="s") != first
    assert seed_for("q1.softmax", student="alice", salt="t") != first


def test_in_kernel_seed_follows_nbgraders_autograded_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("AUTOGRADER_STUDENT", raising=False)
    monkeypatch.delenv("AUTOGRADER_SALT", raising=False)
    folder = tmp_path / "autograded" / "carol" / "q1_value_scaling"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    assert runner._kernel_seed("q1.softmax") == seed_for("q1.softmax", student="carol")


def test_context_draws_the_same_inputs_for_the_same_seed():
    a, b = Context("q1.softmax", seed=5), Context("q1.softmax", seed=5)
    np.testing.assert_array_equal(a.randn(3, 2), b.randn(3, 2))
    assert a.dims(2, 9, 3) == b.dims(2, 9, 3)


def test_self_check_prints_verdicts_and_never_raises():
    out = io.StringIO()
    with redirect_stdout(out):
        assert self_check("q1.softmax", softmax=good_softmax) is True
        assert self_check("q1.softmax_stable", softmax=naive_softmax) is False
    text = out.getvalue()
    assert "✅ 通过" in text and "❌ 未通过" in text and "数值溢出" in text


def test_unknown_check_is_a_key_error():
    with pytest.raises(KeyError):
        get_check("q9.nothing")


def test_every_assignment_module_registers_titled_checks():
    for assignment in ASSIGNMENTS:
        try:
            checks = checks_for(assignment)
        except ModuleNotFoundError:
            continue  # an assignment still being written
        assert checks, assignment
        assert all(c.title and c.assignment == assignment for c in checks)
