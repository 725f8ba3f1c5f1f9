"""The trust boundary under attack: a hostile class graded through ``autograder grade``.

Every trick (``tests/hostile.py``) is q1's honest wrong answer plus one piece of hostile
code. Each must score no more than that honest wrong answer, no honest student's row
may change, and nothing the tricks start may outlive grading or reach the host.
"""

from __future__ import annotations

import copy
import json
import os
import socket
import threading
from pathlib import Path

import nbformat
import pytest
import warm_zygote
from hostile import ATTACKS, DAEMON_MARK, FILE_MARK
from pipeline_helpers import ROOT, without_plots

from autograder.authoring import cells as nbs
from autograder.engine.host.manifest import load, release_notebook
from autograder.integrations.nbgrader.grade import grade
from autograder.samples import PERFECT, mistakes
from autograder.samples.submission import make_submission
from autograder.settings import GradeSettings

pytestmark = pytest.mark.e2e

A = "q1_value_scaling"
SETTINGS = GradeSettings(timeout=60, cell_timeout=2, memory_mb=512, salt="hostile-class")


def _student(variant) -> nbformat.NotebookNode:
    """q1 answered as ``variant``, its (ungraded, slow) plot cells dropped to save time."""
    return without_plots(make_submission(nbs.read(ROOT / "source" / A / f"{A}.ipynb"),
                                             release_notebook(load(A)), variant))


def _honest_wrong() -> nbformat.NotebookNode:
    """q1 without 1/√d_k."""
    return _student(next(v for v in mistakes(A) if v.name == "no_sqrt_dk"))


def _with_attack(base: nbformat.NotebookNode, attack, port: int) -> nbformat.NotebookNode:
    nb = copy.deepcopy(base)
    code = attack.code.replace("PORT", str(port)).strip("\n")
    if attack.cell:
        cell = next(c for c in nb.cells if nbs.grade_id(c) == attack.cell)
        cell.source = code
    else:
        at = next(i for i, c in enumerate(nb.cells) if nbs.grade_id(c) == "imports")
        nb.cells.insert(at + 1, nbformat.v4.new_code_cell(code))
    return nb


def _write(folder: Path, student: str, nb) -> None:
    nbs.write(nb, folder / "submitted" / student / A / f"{A}.ipynb")


class _Listener:
    """A TCP server on the host's loopback that records whatever reaches it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.received.append(conn.recv(100) or b"<connected>")
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


def _rows(out: Path) -> dict[str, dict]:
    return {r["student"]: r for r in json.loads((out / "scores.json").read_text())}


def _verdicts(course: Path, student: str) -> dict[str, list[str]]:
    """Grade id -> the grader's verdict texts in the autograded notebook."""
    nb = nbs.read(course / "autograded" / student / A / f"{A}.ipynb")
    return {nbs.grade_id(c): [o.get("evalue") for o in c.get("outputs", [])
                              if o.get("ename") in ("CheckFailed", "GraderError")]
            for c in nb.cells if nbs.grade_id(c)}


def _survivors() -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if DAEMON_MARK in cmd:
                found.append(f"{entry.name}: {cmd}")
    return found


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    base = _honest_wrong()
    listener = _Listener()
    clean, attacked = tmp_path_factory.mktemp("clean"), tmp_path_factory.mktemp("hostile")
    perfect = _student(PERFECT)
    for course in (clean, attacked):
        _write(course, "honest", base)
        _write(course, "perfect", perfect)
    _write(clean, "trick-choose_seed", base)  # the same answer, without the trick
    for attack in ATTACKS:
        _write(attacked, f"trick-{attack.name}", _with_attack(base, attack, listener.port))
    try:
        with warm_zygote.shared():
            grade(submissions=clean / "submitted", out=clean / "out", settings=SETTINGS, jobs=2)
            grade(submissions=attacked / "submitted", out=attacked / "out", settings=SETTINGS,
                  jobs=2)
    finally:
        listener.close()
    return {"clean": clean, "hostile": attacked, "listener": listener,
            "rows": _rows(attacked / "out"), "clean_rows": _rows(clean / "out")}


def test_the_honest_wrong_answer_loses_points(hostile):
    honest = hostile["rows"]["honest"]
    assert 0 < honest["auto_score"] < honest["auto_max"]


@pytest.mark.parametrize("attack", [a.name for a in ATTACKS])
def test_no_trick_scores_more_than_the_honest_wrong_answer(hostile, attack):
    rows = hostile["rows"]
    trick, honest = rows[f"trick-{attack}"], rows["honest"]
    assert trick["auto_score"] <= honest["auto_score"], trick
    assert trick["status"] != "grader-error", trick["reason"]


def test_honest_rows_are_untouched_by_the_hostile_class(hostile):
    for student in ("honest", "perfect"):
        mine, clean = hostile["rows"][student], hostile["clean_rows"][student]
        assert (mine["cells"], mine["status"], mine["reason"]) == \
            (clean["cells"], clean["status"], clean["reason"])
    assert hostile["rows"]["perfect"]["auto_score"] == hostile["rows"]["perfect"]["auto_max"]


def test_environment_and_working_directory_do_not_choose_the_inputs(hostile):
    """Same answer, same student id: the checks drew the same inputs with or without the
    trick, so their diagnoses (which quote results on those inputs) are identical."""
    tricked = _verdicts(hostile["hostile"], "trick-choose_seed")
    plain = _verdicts(hostile["clean"], "trick-choose_seed")
    assert tricked == plain and any(tricked.values())


def test_no_process_started_by_a_submission_survives(hostile):
    assert _survivors() == []


def test_nothing_reached_the_hosts_network(hostile):
    assert hostile["listener"].received == []


def test_the_child_wrote_nothing_on_the_host(hostile):
    assert not Path("/tmp", FILE_MARK).exists()
    folder = hostile["hostile"] / "submitted" / "trick-fake_package_on_disk" / A
    assert sorted(p.name for p in folder.iterdir()) == [f"{A}.ipynb"]


def test_the_child_found_no_course_file(hostile):
    nb = nbs.read(hostile["hostile"] / "autograded" / "trick-read_course_files" / A / f"{A}.ipynb")
    printed = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "found []" in printed


@pytest.mark.parametrize("attack, words", [
    ("os_exit", "进程已经退出"), ("infinite_loop", "无响应"), ("garbage_on_the_socket", "终止"),
])
def test_a_dead_child_is_explained(hostile, attack, words):
    assert words in hostile["rows"][f"trick-{attack}"]["reason"]


def test_huge_output_is_truncated(hostile):
    path = hostile["hostile"] / "autograded" / "trick-huge_output" / A / f"{A}.ipynb"
    assert os.path.getsize(path) < 8 << 20
