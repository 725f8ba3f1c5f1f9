"""The host decodes defensively: every trick of ``tests/hostile_decoding.py`` ends as the
student's failure of the check it reaches, quickly, never as a grader error or as points.

In-process (fast): the SymPy reader, the header and ``.npy`` guards, a fake child over a
``socket.socketpair()`` answering ``Child.get`` / ``Child.call`` with crafted bytes. The
property test over every registered check is ``tests/test_hostile_checks.py``; the batch
through the real sandbox is ``tests/test_hostile_decoding_batch.py``.
"""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import sympy as sp
from boundary import evaluate_across
from hostile_decoding import (
    CODE_MARK,
    HUGE_LEGAL,
    REPLIES,
    SREPR,
    VALUES,
    encoded,
    frame,
)

from autograder.bank import runner
from autograder.bank.lib.symbolic import is_equivalent
from autograder.engine.host import execute, npyread
from autograder.engine.host.decode import decode_from_child
from autograder.engine.host.hidden import CheckCall
from autograder.engine.host.proxy import Child
from autograder.engine.host.sympy_reader import SreprError, from_srepr
from autograder.engine.protocol import budgets, jsonguard, wire

# ------------------------------------------------------------------ the SymPy reader


@pytest.mark.parametrize("name", sorted(SREPR))
def test_the_sympy_reader_refuses_each_trick_at_once(name):
    start = time.monotonic()
    with pytest.raises(SreprError) as err:
        from_srepr(SREPR[name])
    assert time.monotonic() - start < 1.0
    assert any("\u4e00" <= ch <= "\u9fff" for ch in str(err.value))  # a Chinese reason


def test_a_huge_but_legal_expression_is_read_and_judged_quickly():
    text = sp.srepr(HUGE_LEGAL)
    start = time.monotonic()
    value = from_srepr(text)
    read = time.monotonic() - start
    outcome = evaluate_across("q1.w11_exact", {"w11_exact": value})
    assert outcome.status == "failed" and read < 2.0
    assert time.monotonic() - start < 15.0


@pytest.mark.parametrize("value", [sp.nan, sp.zoo, sp.oo, -sp.oo, sp.nan ** sp.Symbol("c"),
                                   sp.Integer(0) * sp.zoo])
def test_nan_and_infinities_are_equivalent_to_nothing(value):
    assert not is_equivalent(value, sp.Rational(67, 100))
    assert not is_equivalent(value, value)


def test_a_value_that_is_nan_at_a_point_differs_there():
    c = sp.Symbol("c")
    with sp.evaluate(False):
        sneaky = sp.Mul(sp.Integer(0), sp.Pow(c - c, -1)) + sp.exp(c)  # 0/0 at every point
    assert not is_equivalent(sneaky, sp.exp(c))


def test_the_helpers_refuse_non_finite_and_huge_values_with_a_reason():
    """Later code compares what a helper returns: ``nan > limit`` is False, so a helper
    that let NaN through would let it pass every ``if got > limit: fail(...)``."""
    from autograder.bank.lib.compare import CheckFailed, as_array, as_number
    from autograder.bank.lib.symbolic import as_expression, as_matrix

    c = sp.Symbol("c")
    refused = [(as_number, float("nan"), "有限"), (as_number, float("-inf"), "有限"),
               (as_number, 10**400, "浮点数的范围"), (as_array, [[10**400]], "浮点数的范围"),
               (as_array, np.array([0.5 + 1j]), "复数"), (as_array, np.array(["0.5"]), "字符串"),
               (as_expression, sp.nan**c, "NaN"), (as_expression, sp.Eq(c, 1), "关系式"),
               (as_expression, sp.true, "布尔"), (as_expression, sp.Interval(0, 1), "区间"),
               (as_matrix, sp.Matrix([[c, sp.zoo]]), "NaN"), (as_matrix, [["c"]], "str")]
    for helper, value, words in refused:
        with pytest.raises(CheckFailed, match=words):
            helper(value, "x")
    assert np.isnan(as_number(float("nan"), "x", finite=False))


def _first_random_point() -> sp.Rational:
    """Where ``is_equivalent`` evaluates first: its points are public (fixed seed)."""
    import random

    return sp.Rational(random.Random(20261130).randint(51, 299), 100)


def test_a_value_undefined_at_one_of_the_points_differs_there():
    """|x|/x - sign(x) is 0 everywhere but at 0, where it is NaN: aimed at a known point
    it once agreed with every answer (NaN compared as neither larger nor smaller)."""
    c, p = sp.Symbol("c"), _first_random_point()
    expected = 1 / (1 + sp.exp(-c / sp.sqrt(2)))
    assert not is_equivalent(expected + sp.Abs(c - p) / (c - p) - sp.sign(c - p), expected)


def test_an_infinite_branch_is_equivalent_to_nothing():
    """Right at every point the checks try, infinite elsewhere."""
    c = sp.Symbol("c")
    expected = 1 / (1 + sp.exp(-c / sp.sqrt(2)))
    assert not is_equivalent(sp.Piecewise((sp.zoo, c > 5), (expected, True)), expected)


@pytest.mark.parametrize("name, keyword", [("q1.output1_symbolic", "output1_symbolic"),
                                           ("q1.w11_exact", "w11_exact")])
def test_text_is_never_parsed_as_code(name, keyword):
    """``sp.Matrix([["..."]])`` and ``sympify("...")`` would run the text as Python."""
    Path(CODE_MARK).unlink(missing_ok=True)
    for trick in ("code_in_strings", "string"):
        assert evaluate_across(name, {keyword: VALUES[trick]()}).status == "failed"
    assert not is_equivalent("exp(1)", sp.E) and not is_equivalent([["1"]], sp.Integer(1))
    assert not Path(CODE_MARK).exists()


# ------------------------------------------------------------------ headers, arrays, values


def test_a_deep_header_is_refused_before_it_is_parsed(monkeypatch):
    def parse(*args, **kwargs):
        raise AssertionError("json.loads was reached")

    monkeypatch.setattr(jsonguard.json, "loads", parse)
    for depth in (200, 100_000):
        with pytest.raises(jsonguard.HeaderError, match="嵌套"):
            jsonguard.loads(b"[" * depth + b"]" * depth, budgets.VALUE_FRAME)
    many = b"[" + b",".join(b"0" for _ in range(1_100_000)) + b"]"
    with pytest.raises(jsonguard.HeaderError, match="个值"):
        jsonguard.loads(many, budgets.VALUE_FRAME)


def test_a_header_past_a_loose_budget_still_ends_as_a_malformed_message():
    loose = budgets.FrameBudget(json_bytes=1 << 20, json_depth=10**9, json_items=10**9,
                                blobs=0, total_bytes=1 << 20)
    with pytest.raises(jsonguard.HeaderError, match="嵌套太深"):  # the parser's RecursionError
        jsonguard.loads(b"[" * 100_000 + b"]" * 100_000, loose)


def test_brackets_inside_strings_do_not_count():
    text = json.dumps({"id": 1, "value": "[" * 500 + '\\"]' * 500}).encode()
    assert jsonguard.measure(text)[0] == 1
    assert jsonguard.loads(text, budgets.VALUE_FRAME)["id"] == 1


def test_an_npy_header_is_checked_before_anything_is_allocated():
    from hostile_decoding import lying_npy

    tracemalloc.start()
    for blob in (lying_npy((10**12,)), lying_npy((10**18,), "<U0", b""),
                 lying_npy((2, 2), "<f8", b"\0" * 8), lying_npy((1 << 40, 1 << 40))):
        with pytest.raises(npyread.NpyError):
            npyread.load(blob, budgets.VALUE)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1 << 20
    arr = npyread.load(lying_npy((1,), "<f8", np.float64(0.5).tobytes()), budgets.VALUE)
    assert arr.tolist() == [0.5] and arr.flags.writeable


def test_a_header_read_once_still_judges_every_blob_that_carries_it():
    """The header cache (``codec.npy_header``) changes no verdict: the same header over
    too few bytes, a version numpy's writer never uses, a cut or foreign header."""
    from hostile_decoding import lying_npy

    good = lying_npy((2,), "<f8", np.array([1.0, 2.0]).tobytes())
    assert npyread.load(good, budgets.VALUE).tolist() == [1.0, 2.0]
    for blob, says in ((good[:-8], "不符"), (good + b"\0" * 8, "不符"),
                       (good[:6] + b"\x03" + good[7:], "版本"),
                       (good[:20], "不是有效"), (b"PK\x03\x04" + good[4:], "不是有效"),
                       (good[:8] + b"\xff\xff" + good[10:], "不是有效")):
        with pytest.raises(npyread.NpyError, match=says):
            npyread.load(blob, budgets.VALUE)
    assert npyread.load(good, budgets.VALUE).tolist() == [1.0, 2.0]


_ARRAYS = [np.arange(6.0).reshape(2, 3), np.asfortranarray(np.arange(6).reshape(2, 3)),
           np.arange(10)[::2], np.ones((3, 2)).T, np.array([1, 2], dtype=">i4"),
           np.array(["注意力", "ab"]), np.array(b"xy"), np.float32(0.25), np.zeros((0, 3)),
           np.array(True), np.array([1 + 2j])]


@pytest.mark.parametrize("value", _ARRAYS, ids=repr)
def test_an_array_crosses_as_the_bytes_np_save_writes(value):
    from autograder.engine.protocol import codec

    buf = io.BytesIO()
    np.save(buf, np.asarray(value), allow_pickle=False)
    assert codec._npy(np.asarray(value)) == buf.getvalue()


@pytest.mark.parametrize("value", _ARRAYS, ids=repr)
def test_the_child_reads_the_host_s_arrays_as_np_load_does(value):
    from autograder.engine.protocol.codec import decode_from_host, encode_for_child

    blobs: list[bytes] = []
    back = decode_from_host(encode_for_child(value, blobs), blobs)
    buf = io.BytesIO()
    np.save(buf, np.asarray(value), allow_pickle=False)
    loaded = np.load(io.BytesIO(buf.getvalue()), allow_pickle=False)
    if isinstance(value, np.ndarray):
        assert back.flags.writeable and back.flags.f_contiguous == loaded.flags.f_contiguous
    assert type(back) is type(value) and back.dtype == value.dtype
    np.testing.assert_array_equal(back, value)


def test_one_node_budget_covers_a_whole_value():
    value = [[0.5] * 1000] * 1000  # a million numbers: the host's budget
    with pytest.raises(wire.WireError, match="太多"):
        decode_from_child(value, [], remote=lambda h, t: None)
    assert len(decode_from_child([[0.5] * 1000] * 999, [], remote=lambda h, t: None)) == 999


# ------------------------------------------------------------------ a fake child


class _FakeChild:
    """The child's end of a socketpair: answers each request with the next reply's bytes."""

    def __init__(self, answers: list) -> None:
        ours, self.theirs = socket.socketpair()
        # a process of our own to stand for the child's PID 1: it ignores SIGINT, and as
        # it is never reaped before the test ends, its PID cannot be reused meanwhile
        self.stand_in = subprocess.Popen(
            [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGINT, "
             "signal.SIG_IGN); time.sleep(120)"])
        self.child = Child(ours, self.stand_in.pid)
        self.answers = list(answers)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.answers:
            try:
                header, _ = wire.recv(self.theirs, limits=budgets.HOST_FRAME)
                self.theirs.sendall(self._bytes(self.answers.pop(0), header["id"]))
            except (OSError, wire.WireError):
                return

    @staticmethod
    def _bytes(answer, ident: int) -> bytes:
        if isinstance(answer, bytes):
            return answer
        if isinstance(answer, dict):
            return frame(json.dumps({"id": ident, **answer}).encode())
        return encoded(answer, ident)

    def close(self) -> None:
        self.child.kill("done")
        self.theirs.close()
        self.stand_in.kill()
        self.stand_in.wait()


@pytest.fixture
def fake_child():
    made = []

    def make(answers):
        made.append(_FakeChild(answers))
        return made[-1]

    yield make
    for fake in made:
        fake.close()


@pytest.fixture
def short_gets(monkeypatch):
    """The values come from the fake child's socket only; deadlines of a second (a silent
    child costs 1 s, then half a second of grace: the 2 s a real child gets are only
    waited through here), the host's limit past both."""
    from autograder.engine.host import proxy
    from autograder.engine.protocol.deadline import call_deadline

    monkeypatch.setattr(execute, "GET_SECONDS", 1.0)
    monkeypatch.setattr(proxy, "GRACE", 0.5)
    monkeypatch.setattr(execute, "FETCH_SECONDS", 2.5)
    monkeypatch.setattr(runner, "call_deadline", lambda _when: call_deadline(time.monotonic() + 1))


def _job() -> SimpleNamespace:
    return SimpleNamespace(student="fake", settings=SimpleNamespace(salt="fake"))


def _seconds(reply) -> float:
    """Silence costs the 1 s deadline and the grace; anything else is refused as soon as
    it is read (well before the deadline would end it anyway)."""
    return 3.0 if reply.name == "silence" else 2.5


@pytest.mark.parametrize("reply", REPLIES, ids=[r.name for r in REPLIES])
def test_a_crafted_reply_to_get_is_the_student_s_failure(fake_child, short_gets, reply):
    fake = fake_child([reply])
    start = time.monotonic()
    outcome = execute._evaluate(_job(), fake.child, CheckCall("q1.w11_exact",
                                                               {"w11_exact": "w11_exact"}))
    assert outcome.status == "failed", outcome
    assert time.monotonic() - start < _seconds(reply)
    assert any("\u4e00" <= ch <= "\u9fff" for ch in outcome.message)


@pytest.mark.parametrize("reply", REPLIES, ids=[r.name for r in REPLIES])
def test_a_crafted_reply_to_call_is_the_student_s_failure(fake_child, short_gets, reply):
    function = {"value": {"$": "function", "handle": 0, "type": "function"}}
    fake = fake_child([function, reply])
    start = time.monotonic()
    outcome = execute._evaluate(_job(), fake.child, CheckCall("q1.softmax",
                                                               {"softmax": "softmax"}))
    assert outcome.status == "failed", outcome
    assert time.monotonic() - start < _seconds(reply)


def test_decoding_too_slow_is_stopped_by_the_host_s_time_limit(fake_child, short_gets,
                                                                monkeypatch):
    import autograder.engine.host.decode as hostdecode

    def slow(*args, **kwargs):
        time.sleep(60)

    monkeypatch.setattr(hostdecode, "_dec_sympy", slow)
    monkeypatch.setitem(hostdecode._DECODERS, "sympy", slow)
    fake = fake_child([{"value": {"$": "sympy", "srepr": "Integer(1)"}}])
    start = time.monotonic()
    outcome = execute._evaluate(_job(), fake.child, CheckCall("q1.w11_exact",
                                                               {"w11_exact": "w11_exact"}))
    assert outcome.status == "failed" and "秒" in outcome.message
    assert time.monotonic() - start < execute.FETCH_SECONDS + 1


def test_a_fault_of_the_host_s_decoder_on_hostile_data_is_still_the_student_s(
        fake_child, short_gets, monkeypatch):
    import autograder.engine.host.decode as hostdecode

    def broken(*args, **kwargs):
        raise KeyError("a decoder bug")

    monkeypatch.setitem(hostdecode._DECODERS, "tuple", broken)
    fake = fake_child([{"value": {"$": "tuple", "items": []}}])
    outcome = execute._evaluate(_job(), fake.child, CheckCall("q1.w11_exact",
                                                               {"w11_exact": "w11_exact"}))
    assert outcome.status == "failed" and "无法解码" in outcome.message


def test_a_function_returning_what_is_not_data_is_told_so():
    outcome = evaluate_across("q1.softmax", {"softmax": lambda *args, **kwargs: object()})
    assert outcome.status == "failed" and "object 对象无法读取" in outcome.message


def test_a_time_limit_mid_message_ends_the_child(fake_child, short_gets):
    from autograder.engine.protocol.deadline import TimeLimit, time_limit

    fake = fake_child([frame(b'{"id": 1, "value": 1}')[:5]])  # half a message, then silence
    with pytest.raises(TimeLimit), time_limit(0.5):
        fake.child.get("x", seconds=30)
    assert not fake.child.alive  # its stream is lost: no later request may read it


def test_the_security_notes_quote_the_budgets_and_the_corpus():
    """docs/security.md's figures are the code's."""
    from hostile_decoding import CHILD_TRICKS

    text = (Path(__file__).parent.parent / "docs" / "security.md").read_text()
    section = " ".join(text.split("## Host decoding", 1)[1].split("\n## ", 1)[0].split())
    s, v, f = budgets.SYMPY, budgets.VALUE, budgets.VALUE_FRAME

    def n(number: int) -> str:
        return f"{number:,}".replace(",", " ")

    quoted = [f"{f.json_bytes >> 20} MB for a value", f"{budgets.RUN_FRAME.json_bytes >> 20} MB",
              f"nesting {f.json_depth}", f"{s.text_chars >> 10} kB of text",
              f"{n(s.nodes)} syntax nodes", f"{s.depth} levels",
              f"integers of {s.digits} digits", f"({n(s.bits)})",
              f"({n(s.exponent)}, each symbol worth 3)",
              f"at most {s.float_bits} bits", f"{v.depth} levels", f"{v.int_digits} digits",
              f"{v.array_items // 10**6} M elements", f"{v.array_bytes >> 20} MB",
              f"{budgets.FETCH_SECONDS:g} s under the host's", f"deadline {budgets.GET_SECONDS:g} s",
              f"{len(VALUES)} hostile values", f"{len(SREPR)} SymPy texts",
              f"{len(REPLIES)} raw replies", f"{len(CHILD_TRICKS) + 1} patched"]
    missing = [q for q in quoted if q not in section]
    assert not missing, missing
