"""The engine's parts, each on its own: the wire, the SymPy reader, hidden regions,
outputs, and the sandbox's walls as seen from inside a child."""

from __future__ import annotations

import io
import time
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from autograder.engine.child import studentuser
from autograder.engine.host import decode
from autograder.engine.host.hidden import check_calls
from autograder.engine.host.outputs import clean_outputs
from autograder.engine.host.sympy_reader import SreprError, from_srepr
from autograder.engine.host.zygote_link import Zygote, ZygoteError
from autograder.engine.protocol import codec, wire
from autograder.engine.protocol.deadline import call_deadline
from autograder.engine.protocol.faults import ChildGone, Interrupted, Missing, Raised
from autograder.engine.protocol.limits import SandboxLimits
from autograder.engine.protocol.testfn import TestFunction
from autograder.errors import HiddenTestError

# ------------------------------------------------------------------ the wire


def _roundtrip(value):
    blobs: list[bytes] = []
    handles = codec.HandleTable()
    encoded = codec.encode_for_host(value, blobs, handles)
    return decode.decode_from_child(encoded, blobs, remote=lambda h, t: ("remote", h, t))


@pytest.mark.parametrize("value", [
    None, True, 3, -2**70, 1.5, float("inf"), "文字", [1, [2.0]], (1, "a"), {"k": (1, 2)},
    np.arange(6, dtype=np.int32).reshape(2, 3), np.float32(1.25), np.bool_(True), 1 + 2j,
])
def test_data_crosses_unchanged(value):
    back = _roundtrip(value)
    if isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and np.array_equal(back, value)
    else:
        assert back == value and type(back) is type(value)


def test_sympy_crosses_as_srepr():
    c = sp.Symbol("c", positive=True)
    value = sp.Matrix([[c * sp.exp(1 / sp.sqrt(2)), sp.Rational(1, 3)]])
    back = _roundtrip(value)
    assert sp.simplify(back - value) == sp.zeros(1, 2)
    assert next(iter(back.free_symbols)).is_positive


def test_what_is_not_data_arrives_opaque_or_as_a_handle():
    class Rigged:
        def __eq__(self, other):
            return True

        def __array__(self, dtype=None, copy=None):
            raise RuntimeError("no")

    assert isinstance(_roundtrip(Rigged()), codec.Opaque)
    assert _roundtrip(len)[0] == "remote"
    sub = np.arange(3.0).view(type("Sub", (np.ndarray,), {"__eq__": lambda s, o: True}))
    assert type(_roundtrip(sub)) is np.ndarray


@pytest.mark.parametrize("bad", [
    {"$": "eval", "code": "1"}, {"$": "ndarray", "blob": 5}, {"$": "int", "v": "1" * 5000},
    {"$": "float", "v": "1e9999x"}, {"$": "dict", "items": [[[1], 2]]}, {"$": "tuple"},
    {"$": "function", "handle": True}, {"$": "sympy", "srepr": "__import__('os')"},
])
def test_the_host_refuses_malformed_values(bad):
    with pytest.raises(wire.WireError):
        decode.decode_from_child(bad, [], remote=lambda h, t: None)


def test_object_arrays_and_pickles_are_refused():
    buf = io.BytesIO()
    np.save(buf, np.array([object()], dtype=object), allow_pickle=True)
    with pytest.raises(wire.WireError):
        decode.decode_from_child({"$": "ndarray", "blob": 0}, [buf.getvalue()],
                               remote=lambda h, t: None)


def test_arguments_for_student_code_include_generators_and_test_functions():
    rng = np.random.default_rng(7)
    f = TestFunction("def f(Z):\n    return np.tanh(Z) + bump\n", "tanh", data={"bump": 1.0})
    blobs: list[bytes] = []
    encoded = codec.encode_for_child([rng, f, np.eye(2)], blobs)
    rng2, f2, eye = codec.decode_from_host(encoded, blobs)
    assert rng2.integers(1000) == np.random.default_rng(7).integers(1000)
    assert np.allclose(f2(np.zeros(2)), 1.0) and np.array_equal(eye, np.eye(2))
    with pytest.raises(wire.WireError):
        codec.encode_for_child(lambda z: z, [])


# ------------------------------------------------------------------ SymPy reader


@pytest.mark.parametrize("text", [
    "__import__('os').system('true')", "Symbol('x').__class__", "exec('1')", "N(pi, 100000)",
    "Integer(1) + Integer(2)", "Symbol('x', foo=print)", "Pow(Integer(2), Integer(" + "9" * 500 + "))",
    "sympify('1')", "lambda: 1", "x",
])
def test_the_sympy_reader_refuses_anything_but_srepr(text):
    with pytest.raises(SreprError):
        from_srepr(text)


def test_the_sympy_reader_builds_without_evaluating():
    start = time.monotonic()
    big = from_srepr("Pow(Integer(10), Integer(1000))")
    assert isinstance(big, sp.Pow) and time.monotonic() - start < 1
    with pytest.raises(SreprError, match="精确数值"):  # what a later simplify would build
        from_srepr("Pow(Integer(10), Integer(10000000000))")


# ------------------------------------------------------------------ hidden regions


def test_hidden_regions_are_read_as_data():
    source = ("x = 1\n### BEGIN HIDDEN TESTS\nfrom autograder.bank.runner import run_check\n"
              "run_check(\"q1.softmax\", softmax=softmax)\n### END HIDDEN TESTS")
    [call] = check_calls(source)
    assert (call.name, call.values) == ("q1.softmax", {"softmax": "softmax"})


@pytest.mark.parametrize("region", [
    "import os", "run_check('q1.softmax', softmax=lambda z: z)", "run_check(name, softmax=f)",
    "run_check('q1.softmax', **values)", "print(1)", "from autograder.bank.runner import run_check as rc",
])
def test_anything_else_in_a_hidden_region_is_an_authoring_error(region):
    with pytest.raises(HiddenTestError):
        check_calls(f"### BEGIN HIDDEN TESTS\n{region}\n### END HIDDEN TESTS")


# ------------------------------------------------------------------ outputs


def test_outputs_are_rebuilt_from_what_nbformat_allows():
    raw = [{"output_type": "stream", "name": "evil", "text": "hi"},
           {"output_type": "display_data", "data": {"image/png": "not base64!!", "text/plain": "x"}},
           {"output_type": "script", "code": "alert(1)"}, "junk",
           {"output_type": "error", "ename": "E", "evalue": 1, "traceback": "no"}]
    outs = clean_outputs(raw)
    assert [o.output_type for o in outs] == ["stream", "display_data", "error"]
    assert outs[0].name == "stdout" and "image/png" not in outs[1].data
    assert outs[2].evalue == "" and outs[2].traceback == []


# ------------------------------------------------------------------ the sandbox, from inside


@pytest.fixture(scope="module")
def zygote():
    z = Zygote(figures=False, warm=False, tokenizer=False)
    yield z
    z.close()


def _printed(child, code: str, seconds: float = 20) -> str:
    reply = child.run(code, seconds=seconds)
    return "".join(o.get("text", "") for o in reply["outputs"]) + \
        "".join(f"{o.get('ename')}: {o.get('evalue')}" for o in reply["outputs"]
                if o["output_type"] == "error")


def test_the_child_sees_no_course_and_no_grader(zygote):
    if not zygote.isolation.isolated:
        pytest.skip(f"no namespaces here: {zygote.isolation.missing}")
    child = zygote.spawn(SandboxLimits())
    try:
        text = _printed(child, "import os, pathlib, autograder\n"
                        "print(sorted(os.listdir('/')), os.getcwd(), os.getuid())\n"
                        "print(pathlib.Path(autograder.__file__).parent.exists())\n"
                        f"print(os.path.exists({str(__file__)!r}))")
        assert "tests" not in text and "/home/student" in text
        assert "False\nFalse" in text
        text = _printed(child, "import autograder.bank")
        assert "ModuleNotFoundError" in text
    finally:
        child.close()


def test_the_child_has_no_network_and_no_privileges(zygote):
    if not zygote.isolation.isolated:
        pytest.skip(f"no namespaces here: {zygote.isolation.missing}")
    child = zygote.spawn(SandboxLimits())
    try:
        text = _printed(child, "import socket\ntry:\n    socket.create_connection(('127.0.0.1', 22), 1)\n"
                        "except OSError as e:\n    print('refused', e.errno)")
        assert "refused" in text
        text = _printed(child, "open('/usr/x', 'w')")
        assert "Read-only file system" in text or "Permission" in text
        text = _printed(child, "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                        "print(libc.mount(b'none', b'/tmp', b'tmpfs', 0, None), ctypes.get_errno())")
        assert text.startswith("-1 1")  # EPERM
    finally:
        child.close()


def test_without_namespaces_a_child_s_home_goes_when_it_does(tmp_path):
    """Without namespaces a submission's home is a real folder under the temporary one:
    it is removed once the child and its processes are gone, even a folder the student
    took every permission from (one leaked folder per graded notebook before), and a
    link out of it leads the removal nowhere."""
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "kept.txt").write_text("kept")
    outside.chmod(0o755)
    plain = Zygote(figures=False, warm=False, tokenizer=False, isolate=False)
    try:
        if plain.isolation.protection == "none" and studentuser.really_root():
            # a root zygote with no separate user (this Python unreadable to it) runs no
            # child at all: never student code as uid 0 (the home test needs a non-root run)
            with pytest.raises(ZygoteError, match="a new child did not start"):
                plain.spawn(SandboxLimits())
            return
        child = plain.spawn(SandboxLimits())
        home = _printed(child, "import os\nos.makedirs('locked/inner')\n"
                        "open('locked/inner/data.txt', 'w').write('x')\n"
                        f"os.symlink({str(outside)!r}, 'locked/inner/out')\n"
                        "os.chmod('locked/inner', 0)\nos.chmod('locked', 0)\nprint(os.getcwd())").strip()
        assert Path(home).name.startswith("autograder-student-") and Path(home).is_dir()
        child.close()
        assert not Path(home).exists()
        assert (outside / "sub" / "kept.txt").read_text() == "kept"
        assert oct(outside.stat().st_mode & 0o777) == oct(0o755)
    finally:
        plain.close()


_FIND = ("import os, stat\n"
         "def regular(fd):\n"
         "    try:\n"
         "        return stat.S_ISREG(os.fstat(fd).st_mode)\n"
         "    except OSError:\n"
         "        return False\n"
         "files = [fd for fd in range(3, 256) if regular(fd)]\n")


def test_children_do_not_share_the_zygote_s_open_files():
    """The warm zygote holds matplotlib's fonts open. Forks share an open file's offset:
    two students drawing text at once read each other's bytes ("FT_Load_Glyph failed",
    seen grading the sample class), and one could move the other's offset on purpose."""
    warm = Zygote(figures=True, warm=True, tokenizer=False)
    first, second = warm.spawn(SandboxLimits()), warm.spawn(SandboxLimits())
    try:
        where = "print({fd: os.lseek(fd, 0, os.SEEK_CUR) for fd in files})"
        before = _printed(first, _FIND + where)
        assert before not in ("", "{}"), "the warm zygote should hold its fonts open"
        moved = _printed(second, _FIND + "for fd in files:\n    os.lseek(fd, 12345, os.SEEK_SET)\n"
                         + where)
        assert "12345" in moved
        assert _printed(first, where) == before
        text = _printed(first, "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\n"
                        "ax.set_title('glyphs after the other child moved its offsets')\n"
                        "fig.canvas.draw()\nprint('drawn')")
        assert "drawn" in text
    finally:
        first.close()
        second.close()
        warm.close()


def test_a_child_never_walks_the_heap_it_inherited(zygote):
    """The zygote freezes its warm heap: a child's full collection walks only what the
    child made. Walking the inherited objects cost a child 60 ms and copied most of the
    heap, page by page (12 % of the class's CPU, docs/benchmarks.md)."""
    child = zygote.spawn(SandboxLimits())
    try:
        text = _printed(child, "import gc\ngc.collect()\n"
                        "print(gc.get_freeze_count(), len(gc.get_objects()))")
    finally:
        child.close()
    frozen, walked = map(int, text.split())
    assert frozen > 50_000, text
    assert walked < frozen / 5, text


def test_limits_stop_memory_and_process_bombs(zygote):
    child = zygote.spawn(SandboxLimits(memory=256 << 20, processes=8))
    try:
        assert "MemoryError" in _printed(child, "x = bytearray(1 << 30)")
        text = _printed(child, "import os\nn = 0\ntry:\n    for _ in range(100):\n"
                        "        if os.fork() == 0:\n            os._exit(0)\n        n += 1\n"
                        "except OSError:\n    pass\nprint(n)")
        assert int(text.strip()) < 100
    finally:
        child.close()


def test_requests_have_deadlines_and_a_dead_child_says_so(zygote):
    child = zygote.spawn(SandboxLimits())
    try:
        child.run("def f(x):\n    while True:\n        pass\n"
                  "def g(x):\n    raise NotImplementedError('later')", seconds=10)
        f, g = child.get("f", seconds=5), child.get("g", seconds=5)
        with pytest.raises(Missing):
            child.get("nope", seconds=5)
        with pytest.raises(Raised) as raised, call_deadline(time.monotonic() + 5):
            g(1)
        assert raised.value.is_a("NotImplementedError")
        with pytest.raises(Interrupted), call_deadline(time.monotonic() + 0.5):
            f(np.zeros(3))
        reply = child.run("import os\nos._exit(3)", seconds=5)
        pytest.fail(f"the child answered after os._exit: {reply}")
    except ChildGone as gone:
        assert "退出" in str(gone)
    finally:
        child.close()


def test_links_share_one_zygote_and_children_hold_no_line_to_it(zygote):
    link = zygote.link()
    try:
        assert link.isolation == zygote.isolation
        first, second = zygote.spawn(SandboxLimits()), link.spawn(SandboxLimits())
        try:
            code = ("import os, socket, stat\nkinds = []\nfor fd in range(1024):\n"
                    "    try:\n        if not stat.S_ISSOCK(os.fstat(fd).st_mode):\n"
                    "            continue\n    except OSError:\n        continue\n"
                    "    s = socket.socket(fileno=os.dup(fd))\n"
                    "    kinds.append(s.type.name)\n    s.close()\nprint(sorted(kinds))")
            for child in (first, second):
                # the child's own line is a stream; a zygote's control links are seqpacket
                assert _printed(child, code).strip() == "['SOCK_STREAM']"
        finally:
            first.close()
            second.close()
    finally:
        link.close()
    child = zygote.spawn(SandboxLimits())  # closing a link leaves the zygote serving
    child.close()


def test_a_finished_tight_layout_prints_the_same_pixels_without_its_extra_draw():
    import base64
    import io
    from functools import partial

    from IPython.core.pylabtools import print_figure
    from matplotlib.figure import Figure

    from autograder.engine.child.runtime import prepare

    kernel = prepare(warm=False)
    code = ("import matplotlib.pyplot as plt\nfig, ax = plt.subplots(1, 2, figsize=(5, 2))\n"
            "ax[0].semilogy([1, 2, 3], [1, 10, 100])\nax[1].set_title('$x^2$')\n"
            "fig.tight_layout()\nplt.show()")
    draws = []
    original = Figure.draw

    def counted(self, renderer):
        draws.append(type(renderer).__name__)
        return original(self, renderer)

    Figure.draw = counted
    try:
        ours = [o for o in kernel.run(code)[1] if "data" in o][0]["data"]["image/png"]
        ours_draws, draws[:] = len(draws), []
        png = kernel.shell.display_formatter.formatters["image/png"]
        png.for_type(Figure, partial(print_figure, fmt="png", base64=True, bbox_inches=None))
        plain = [o for o in kernel.run(code)[1] if "data" in o][0]["data"]["image/png"]
    finally:
        Figure.draw = original
    assert ours == plain and io.BytesIO(base64.b64decode(ours)).read(4) == b"\x89PNG"
    assert ours_draws == len(draws) - 1


def _zygote_children(zygote) -> set[int]:
    from pathlib import Path

    task = Path(f"/proc/{zygote.proc.pid}/task/{zygote.proc.pid}/children")
    return {int(pid) for pid in task.read_text().split()}


def test_a_closed_link_leaves_no_child_behind_retired_or_asked_ahead(zygote):
    before = _zygote_children(zygote)
    link = zygote.link(ahead=True)
    children = [link.spawn(SandboxLimits()) for _ in range(3)]
    assert [c.run("print(6 * 7)", seconds=10)["outputs"][0]["text"] for c in children] == ["42\n"] * 3
    assert len(_zygote_children(zygote) - before) == 4  # three working, one forked ahead
    for child in children:
        link.retire(child)
    link.close()
    deadline = time.monotonic() + 5
    while _zygote_children(zygote) - before and time.monotonic() < deadline:
        time.sleep(0.01)  # the last reaper may still be on its way out of the process table
    assert not _zygote_children(zygote) - before


@pytest.mark.parametrize("make", [
    lambda x, y: sp.Matrix([[x + 1, sp.exp(-x / 2)], [sp.sqrt(2) * y**sp.Rational(1, 3), sp.pi]]),
    lambda x, y: sp.ImmutableMatrix([[sp.log(y) * sp.sin(x) - sp.E + sp.I]]),
    lambda x, y: sp.Float(0.5) * y + sp.Function("f")(x),
    lambda x, y: sp.Piecewise((x, y > 0), (1, True)) + sp.Max(x, y),
    lambda x, y: sp.log(sp.exp(x * y) + 1, 2) + sp.oo - sp.tanh(sp.Abs(x - y)),
    lambda x, y: sp.Matrix(0, 2, []),
])
def test_the_childs_fast_srepr_reads_back_as_srepr_does(make):
    from autograder.engine.host.sympy_reader import from_srepr
    from autograder.engine.protocol.sympy_writer import fast_srepr

    x, y = sp.Symbol("x", positive=True), sp.Symbol("y")
    value = make(x, y)
    fast, slow = from_srepr(fast_srepr(value)), from_srepr(sp.srepr(value))
    assert type(fast) is type(slow)
    if isinstance(value, sp.MatrixBase):
        assert fast.shape == slow.shape
        assert all(sp.simplify(a.doit() - b.doit()) == 0 for a, b in zip(fast, slow))
    else:
        assert fast.doit() == slow.doit()
    assert next(iter(fast.free_symbols - {y}), x).is_positive  # assumptions cross too


def test_the_fast_srepr_prints_a_repeated_subexpression_once():
    from autograder.engine.protocol import sympy_writer as sreprfast

    x = sp.Symbol("x")
    shared = sp.exp(x) + sp.exp(2 * x)
    matrix = sp.Matrix([[sp.exp(x) / shared, sp.exp(2 * x) / shared]] * 3)
    printed = []
    original = sp.srepr

    def counting(node, **kwargs):
        printed.append(node)
        return original(node, **kwargs)

    sp.srepr = counting
    try:
        text = sreprfast.fast_srepr(matrix)
    finally:
        sp.srepr = original
    # x is printed by srepr once, and exp(x), which every entry uses three times, is
    # written once, as a definition the entries refer to
    assert printed.count(x) == 1 and text.count("exp(Symbol('x'))") == 1
    assert text.startswith("Shared([") and sp.srepr(from_srepr(text)) == sp.srepr(matrix)
