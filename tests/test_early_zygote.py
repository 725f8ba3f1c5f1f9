"""``grade()`` starts the sandbox's zygote before it reads an existing gradebook (the zygote
imports and warms up on the other core meanwhile), and stops it whatever happens next:
a refused gradebook leaves no zygote running and no view folder behind."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from autograder.engine.host.zygote_link import Zygote
from autograder.engine.protocol.limits import Protection
from autograder.errors import CourseError
from autograder.integrations.nbgrader.grade import grade

A = "q1_value_scaling"


def _zygotes() -> set[int]:
    """This process's children that are zygotes."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        ppid = next((line.split()[1] for line in status.splitlines()
                     if line.startswith("PPid:")), "")
        if ppid == str(os.getpid()) and b"autograder.engine.child.zygote" in command:
            found.add(int(entry.name))
    return found


def _views() -> set[str]:
    """The view folders in the temporary folder, but those of zygotes other processes
    started (another xdist worker's tests may start one meanwhile: its zygote works in its
    view folder)."""
    theirs = set()
    for entry in Path("/proc").iterdir():
        try:
            ours = f"PPid:\t{os.getpid()}\n" in (entry / "status").read_text()
            if not ours and b"autograder.engine.child.zygote" in (entry / "cmdline").read_bytes():
                theirs.add(Path(os.readlink(entry / "cwd")).name)
        except (OSError, ValueError):
            continue
    mine = {p.name for p in Path(tempfile.gettempdir()).glob("autograder-view-*")}
    return mine - theirs


def test_a_refused_gradebook_stops_the_zygote_started_for_it(tmp_path, monkeypatch):
    started = []

    def spy(verdict, *, notebooks):  # the grading zygote, without the warm-up nothing here needs
        zygote = Zygote(figures=False, warm=False, tokenizer=False,
                        isolate=verdict.level == Protection.NAMESPACES)
        started.append(zygote)
        return zygote

    monkeypatch.setattr("autograder.integrations.nbgrader.grade.start_zygote", spy)
    course = tmp_path / "course"
    (course / "submitted" / "bob" / A).mkdir(parents=True)
    (course / "gradebook.db").write_bytes(b"not a database" * 100)
    views = _views()
    with pytest.raises(CourseError, match="is not a gradebook nbgrader can read"):
        grade(submissions=course / "submitted", out=tmp_path / "out")
    assert len(started) == 1  # it was started before the gradebook was read
    assert started[0].proc.poll() is not None and started[0].proc.pid not in _zygotes()
    assert not started[0].root.exists() and _views() <= views
    assert not (tmp_path / "out").exists()
