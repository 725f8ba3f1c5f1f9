"""No single submission stops the batch: the parent's per-submission steps are guarded.

The engine is replaced by a stand-in that hands back ready-made records (no sandbox,
no child), so each test is quick and breaks exactly one step for one student.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pipeline_helpers import A, read_nb, write_nb

from autograder.engine.host import gradebook as gradebook_module
from autograder.engine.host import pool
from autograder.engine.host.gradebook import GradebookWriter, open_gradebook
from autograder.engine.host.job import CellResult
from autograder.engine.host.manifest import load
from autograder.grading import batch as grading
from autograder.grading import scores
from autograder.grading.guard import Guard
from autograder.integrations.nbgrader.grade import grade
from autograder.settings import GradeSettings, RowStatus

GRADER_ERROR = RowStatus.GRADER_ERROR

STUDENTS = ("ann", "bob", "cat", "dan", "eve")
SETTINGS = GradeSettings(salt="test-guard")


def _graded(task, *, review=(), timestamp=None) -> pool.Graded:
    cells = [CellResult(c.grade_id, c.title, c.points, c.is_manual, status="passed",
                        score=None if c.is_manual else c.points) for c in load(A).graded]
    return pool.Graded(task, cells=cells, notebook=json.dumps({"cells": []}),
                       feedback="<html>ok</html>", review=list(review), timestamp=timestamp)


@pytest.fixture
def engine(monkeypatch):
    """grade_tasks without a sandbox: every task gets full marks at once; the dict
    returned names data files the records list (student -> names)."""
    files: dict[str, list[str]] = {}

    def grade_tasks(tasks, settings, *, jobs, progress=None, started=None, verdict=None,
                    zygote=None):
        if started:
            started()
        records = [_graded(t) for t in tasks]
        for record in records:
            record.files = files.get(record.task.student, [])
        for record in records:
            if progress:
                progress(record)
        return records

    monkeypatch.setattr(grading, "grade_tasks", grade_tasks)
    return files


@pytest.fixture
def course(tmp_path):
    release = read_nb(Path(__file__).resolve().parent.parent / "release" / A / f"{A}.ipynb")
    for student in STUDENTS:
        write_nb(release, tmp_path / "submitted" / student / A / f"{A}.ipynb")
    return tmp_path


def _rows(course: Path) -> dict[str, dict]:
    rows = json.loads((course / "out" / "scores.json").read_text(encoding="utf-8"))
    return {r["student"]: r for r in rows}


def _in_gradebook(course: Path) -> set[str]:
    with open_gradebook(course / "gradebook.db") as gb:
        return {s.student_id for s in gb.assignment_submissions(A)}


def test_a_failing_step_costs_its_own_row_only(engine, course, monkeypatch):
    """Break one step for one student each: staging (bob: a data file vanished), the
    gradebook row (cat), the progress callback (dan). The batch finishes; each of them
    is a grader error naming the step; ann and eve are untouched, in the tables and in
    the gradebook."""
    engine["bob"] = ["vanished.csv"]  # listed by the worker, gone when it is staged
    record = gradebook_module._record

    def record_fails_for_cat(gb, graded, manifest):
        record(gb, graded, manifest)  # written, then rolled back alone
        if graded.task.student == "cat":
            raise KeyError("a grade cell this gradebook does not know")

    def progress(done, total, what):
        if what.startswith("dan/"):
            raise RuntimeError("the progress bar broke on dan")

    monkeypatch.setattr(gradebook_module, "_record", record_fails_for_cat)
    results = grade(submissions=course / "submitted", out=course / "out", settings=SETTINGS,
                    progress=progress)
    assert [r.student for r in results] == list(STUDENTS)
    rows = _rows(course)
    broken = {"bob": "feedback and autograded/", "cat": "gradebook.db", "dan": "progress"}
    for student, step in broken.items():
        assert rows[student]["status"] == GRADER_ERROR and step in rows[student]["reason"]
    for student in ("ann", "eve"):
        assert (rows[student]["status"], rows[student]["reason"]) == ("ok", "")
        assert rows[student]["auto_score"] == rows[student]["auto_max"] > 0
    assert _in_gradebook(course) == set(STUDENTS) - {"cat"}
    feedback = course / "out" / "feedback"
    assert sorted(p.name for p in feedback.iterdir()) == ["ann", "cat", "dan", "eve"]
    assert not (course / "autograded" / "bob").exists()  # half-staged: removed again
    assert rows["bob"]["feedback"] is None and rows["ann"]["feedback"]


def test_a_row_that_cannot_be_built_is_a_grader_error_not_the_end(engine, course,
                                                                   monkeypatch):
    build = grading._result

    def fails_for_eve(sub, manifest, graded):
        if sub.student == "eve":
            raise ZeroDivisionError("a bug in building eve's row")
        return build(sub, manifest, graded)

    monkeypatch.setattr(grading, "_result", fails_for_eve)
    rows = {r.student: r for r in grade(submissions=course / "submitted",
                                        out=course / "out", settings=SETTINGS)}
    assert rows["eve"].status == GRADER_ERROR and "'row'" in rows["eve"].reason
    assert all(rows[s].status == "ok" for s in STUDENTS if s != "eve")


def test_the_guard_keeps_the_error_and_the_batch_goes_on():
    guard = Guard()
    assert guard.run(("ann", A), "step", lambda: 1 / 0) is None
    assert guard.run(("bob", A), "step", lambda x: x + 1, 1) == 2
    row = grading.Result("ann", A, status="ok")
    guard.mark([row, grading.Result("bob", A, status="ok")], GRADER_ERROR)
    assert row.status == GRADER_ERROR and "ZeroDivisionError" in row.reason
    assert guard.failed == {}


def _task(student: str) -> pool.Submission:
    return pool.Submission(student, A, Path("/nonexistent"))


def test_one_submission_s_gradebook_rows_roll_back_alone(tmp_path, monkeypatch):
    """nbgrader's API rolls the whole session back on a database error: inside a
    submission's savepoint that rollback must undo that submission only."""
    record = gradebook_module._record

    def like_nbgrader(gb, graded, manifest):
        record(gb, graded, manifest)
        if graded.task.student == "bob":
            gb.db.rollback()  # what nbgrader does before raising InvalidEntry
            raise ValueError("InvalidEntry, as nbgrader raises it")

    monkeypatch.setattr(gradebook_module, "_record", like_nbgrader)
    writer = GradebookWriter(tmp_path / "gradebook.db", {A: load(A)})
    writer.start()
    for student in ("ann", "bob", "cat"):
        writer.add(_graded(_task(student)))
    assert set(writer.drain()) == {("bob", A)}
    assert writer.close() == 2
    with open_gradebook(tmp_path / "gradebook.db") as gb:
        assert sorted(s.student_id for s in gb.assignment_submissions(A)) == ["ann", "cat"]


def test_the_checked_timestamp_reaches_the_gradebook(tmp_path):
    writer = GradebookWriter(tmp_path / "gradebook.db", {A: load(A)})
    writer.start()
    writer.add(_graded(_task("ann"), timestamp="2024-05-01T04:00:00"))
    writer.add(_graded(_task("bob")))
    writer.close()
    with open_gradebook(tmp_path / "gradebook.db") as gb:
        assert str(gb.find_submission(A, "ann").timestamp) == "2024-05-01 04:00:00"
        assert gb.find_submission(A, "bob").timestamp is None


def test_rows_with_text_utf8_cannot_write_are_written_anyway(tmp_path):
    row = grading.Result("ann\udcff", A, status="note", review=["rebinds np.\udcff"])
    row.add_reason("名字\udcff", "name \udcff")
    scores.write_outputs([row], tmp_path)
    text = (tmp_path / "scores.json").read_text(encoding="utf-8")
    assert "\\udcff" not in text and "ann?" in text
    assert "ann?" in (tmp_path / "scores.csv").read_text(encoding="utf-8")
