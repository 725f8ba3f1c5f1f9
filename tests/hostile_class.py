"""A hostile class for "class-wide denial": submissions that try to stop the batch, starve
it, or hold memory outside ``--memory``.

Each case is q1's honest wrong answer (no 1/√d_k) changed by one trick: code inserted
after the imports, a changed notebook, or a file beside it. The first six are the ones
issue 20 reproduced; the rest are our own. :data:`HOARD` is the memory bombs' harness:
a forked holder takes memory in steps and the student's PID 1 counts the steps it
finished, then prints ``held <MB> MB`` (the holder is the biggest process, so the
kernel's OOM killer picks it, not PID 1).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import nbformat

#: Marker of the processes the orphan trick leaves (none may survive grading).
ORPHAN_MARK = "731902"


@dataclass(frozen=True)
class Trick:
    name: str
    #: Code in a new cell after the imports (None: ``change`` does all).
    code: str | None = None
    #: Changes the notebook in place (after ``code`` is inserted).
    change: Callable[[nbformat.NotebookNode], None] | None = None
    #: Files written beside the notebook (name -> bytes).
    files: tuple[tuple[str, bytes], ...] = ()
    #: A file name for the notebook instead of ``<assignment>.ipynb`` (bytes: any bytes).
    notebook_name: bytes | None = None
    #: Reports ``held <MB> MB`` (a memory bomb).
    bomb: bool = False
    #: Changes the notebook's JSON text (what ``json.dumps`` cannot write itself).
    raw: Callable[[str], str] | None = None


HOARD = '''
import ctypes, os

STEP = 32 << 20

def hoard(take, total_mb):
    """A forked holder takes a 32 MB chunk of its own (the first step: it makes the
    holder the biggest process, so the kernel's OOM killer takes it, not this one), then
    calls take(i, chunk) for each further 32 MB step; this process counts the steps it
    finished (until it is done, refused or killed) and prints what was held."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        kept, why = [], "done"
        try:
            chunk = b"\\1" * STEP
            os.write(w, b"x")
            for i in range(total_mb // 32 - 1):
                kept.append(take(i, chunk))
                os.write(w, b"x")
        except (OSError, MemoryError) as err:
            why = type(err).__name__ + ": " + str(err)
        os.write(w, ("|" + why).encode())
        os.close(w)
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.waitpid(pid, 0)
    steps, _, why = data.partition(b"|")
    print(f"held {steps.count(b'x') * 32} MB", why.decode() or "killed")

def memfd_step(i, chunk):
    """A memfd file written, never mapped: no address space shows it."""
    fd = os.memfd_create(f"hoard{i}")
    os.write(fd, chunk)
    return fd

libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p

def _errno():
    return OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))

def shm_step(i, chunk):
    """A System V segment, touched, then detached: no address space shows it."""
    ident = libc.shmget(0, STEP, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
    if ident < 0:
        raise _errno()
    at = libc.shmat(ident, None, 0)
    if at in (None, ctypes.c_void_p(-1).value):
        raise _errno()
    ctypes.memset(at, 1, STEP)
    libc.shmdt(ctypes.c_void_p(at))
    return ident

def tmpfs_then_heap(i, chunk):
    """Files on the child's own tmpfs folders first (/tmp, then home), then the heap."""
    for folder in ("/tmp", os.path.expanduser("~")):
        path = f"{folder}/fill{i}"
        try:
            with open(path, "wb") as fh:
                fh.write(chunk)
            return path
        except OSError:
            try:
                os.unlink(path)
            except OSError:
                pass
    return bytearray(chunk)
'''


def _bomb(name: str, body: str) -> Trick:
    return Trick(name, HOARD + body, bomb=True)


def _padding(terms: int) -> str:
    return "_padding = " + "+".join(["1"] * terms)


def _first_solution(nb) -> nbformat.NotebookNode:
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))


def _wrong_types(nb) -> None:
    """Every nbgrader field a student can edit, of the wrong type, on some cell."""
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")]
    fields = [("grade_id", ["a", "list"]), ("points", "17"), ("locked", "yes"),
              ("solution", 1), ("grade", {"x": 1}), ("schema_version", "3"),
              ("checksum", 5), ("cell_type", None), ("task", [])]
    for cell, (key, value) in zip(graded, fields):
        cell.metadata.nbgrader[key] = value
    nb.cells[0]["metadata"] = ["not", "an", "object"]
    nb.cells[1]["id"] = 12345
    nb.cells[2].setdefault("metadata", {})["tags"] = {"nested": [1, {"deep": None}]}


def _cells_placeholder(nb) -> None:
    nb.cells.append("@@cells@@")


def _many_cells(text: str) -> str:
    """10^5 code cells at the end (written as text: nbformat is slow at it)."""
    cell = '{"cell_type": "code", "execution_count": null, "id": "c%d", "metadata": {}, ' \
           '"outputs": [], "source": "pass"}'
    return text.replace('"@@cells@@"', ", ".join(cell % i for i in range(100_000)))


def _huge_line(nb) -> None:
    nb.cells.append(nbformat.v4.new_code_cell("x = " + "9" * (40 << 20)))


DEEP = 5000


def _deep_placeholder(nb) -> None:
    nb.cells[-1].metadata["deep"] = "@@deep@@"


def _deep_json(text: str) -> str:
    """5000 nested objects in a cell's metadata (json.dumps refuses to write so deep)."""
    return text.replace('"@@deep@@"', '{"d": ' * DEEP + '"bottom"' + "}" * DEEP)


def _lone_surrogates(nb) -> None:
    nb.cells.append(nbformat.v4.new_markdown_cell("写在答案里的孤立代理字符 \ud800 和 \udfff"))


TRICKS: tuple[Trick, ...] = (
    # issue 20, as reproduced
    Trick("deep_expression", _padding(3000) + "\nimport autograder.bank as _bank\n"),
    Trick("garbage_timestamp", files=(("timestamp.txt", b"not a date"),)),
    Trick("wrong_metadata_types", change=_wrong_types),
    _bomb("memfd_bomb", "hoard(memfd_step, 64 * 64)"),  # 64 files of 64 MB, asked for
    _bomb("shm_bomb", "hoard(shm_step, 4 * 1024)"),  # four 1 GB segments' worth
    # our own
    _bomb("tmpfs_then_heap", "hoard(tmpfs_then_heap, 2048)"),
    _bomb("forked_hoarders", '''
import os, select, time
r, w = os.pipe()
kids = []
for k in range(6):  # six processes of 80 MB each: each alone within RLIMIT_AS
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            block = bytearray(b"\\1" * (80 << 20))
        except MemoryError:
            os._exit(1)
        os.write(w, bytes([k]))  # holding its 80 MB from now on
        time.sleep(30)
        os._exit(0)
    kids.append(pid)
os.close(w)
held, gone, deadline = set(), set(), time.monotonic() + 10
while len(held | gone) < len(kids) and time.monotonic() < deadline:
    if select.select([r], [], [], 0.05)[0]:
        held.update(os.read(r, 64))
    gone.update(k for k, p in enumerate(kids)
                if k not in gone and os.waitpid(p, os.WNOHANG) != (0, 0))
time.sleep(0.5)  # what the kernel is still killing
gone.update(k for k, p in enumerate(kids) if k not in gone and os.waitpid(p, os.WNOHANG) != (0, 0))
print(f"held {len(held - gone) * 80} MB", "in", len(held - gone), "processes")
for k in held - gone:
    os.kill(kids[k], 9)
'''),
    Trick("orphan_after_exit", f'''
import os, sys
if os.fork() == 0:
    os.setsid()
    os.execv(sys.executable, [sys.executable, "-c",
             "import time, mmap; m = mmap.mmap(-1, 100 << 20); m.write(b'1' * (100 << 20)); "
             "time.sleep(600)", "{ORPHAN_MARK}"])
import time
time.sleep(1)
os._exit(0)
'''),
    Trick("zone_is_a_path", files=(("timestamp.txt", b"2024-05-01 12:00:00 /dev/stdin"),)),
    Trick("timestamp_overflows", files=(("timestamp.txt", b"9999-12-31 23:59:59 -1400"),)),
    Trick("many_cells", change=_cells_placeholder, raw=_many_cells),
    Trick("huge_line", change=_huge_line),
    Trick("deep_metadata", change=_deep_placeholder, raw=_deep_json),
    Trick("lone_surrogates", 'x = 1  # 注释里的孤立代理字符：\udcff\n', change=_lone_surrogates,
          notebook_name=b"\xff\xfe-answer.ipynb"),
)


def apply(trick: Trick, base: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``base`` (a notebook) with ``trick``'s code inserted after the imports, then changed."""
    nb = nbformat.from_dict(json.loads(json.dumps(base)))
    if trick.code:
        at = next(i for i, c in enumerate(nb.cells)
                  if c.metadata.get("nbgrader", {}).get("grade_id") == "imports")
        nb.cells.insert(at + 1, nbformat.v4.new_code_cell(trick.code.strip("\n")))
    if trick.change:
        trick.change(nb)
    return nb


def notebook_bytes(trick: Trick, base: nbformat.NotebookNode) -> bytes:
    """The submitted file: ASCII JSON (so lone surrogates survive as escapes), then ``raw``."""
    text = json.dumps(apply(trick, base), ensure_ascii=True, indent=1)
    return (trick.raw(text) if trick.raw else text).encode("ascii")


def held_mb(text: str) -> int | None:
    """The ``held <MB> MB`` a memory bomb printed (None: it printed none)."""
    for line in text.splitlines():
        if line.startswith("held "):
            return int(line.split()[1])
    return None
