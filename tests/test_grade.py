"""``autograder grade`` end to end: broken submissions, nbgrader's records, feedback, scores.

One course, graded once by the engine, is shared by the whole module; its plot cells
are dropped (they are ungraded) to keep it quick.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import stat
from pathlib import Path

import nbformat
import pytest
import warm_zygote
from click.testing import CliRunner
from pipeline_helpers import ROOT, A, read_nb, sample_submissions, without_plots, write_nb

from autograder import bank
from autograder.authoring.course import nbgrader, read_scores
from autograder.cli import main
from autograder.engine.host.manifest import load
from autograder.integrations.nbgrader.grade import grade
from autograder.settings import GradeSettings, RowStatus

GRADER_ERROR = RowStatus.GRADER_ERROR

pytestmark = pytest.mark.e2e

GOOD = ("perfect", "mistake-naive_softmax")
BROKEN = ("badjson", "wrongname", "deleted", "stripped", "loop", "exit", "warning", "tamper",
          "symlinked")
#: 3 s a cell: the loop spins that long on a core (it was 5); an honest q1 cell takes well
#: under a second, and test_hostile grades its whole class at 2 s a cell
SETTINGS = GradeSettings(timeout=120, cell_timeout=3, salt="test-grade")
TAMPER = "import autograder.bank as _bank\n_bank.run_check = lambda *args, **kwargs: None"


def _variant(submitted, name, change):
    nb = read_nb(submitted / "perfect" / A / f"{A}.ipynb")
    filename = change(nb) or f"{A}.ipynb"
    write_nb(nb, submitted / name / A / filename)


def _insert_after(nb, grade_id, source):
    index = next(i for i, c in enumerate(nb.cells)
                 if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    nb.cells.insert(index + 1, nbformat.v4.new_code_cell(source))


def _deleted(nb):
    nb.cells = [c for c in nb.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") != "test_softmax"]
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("grade_id") == "test_attention":
            c.metadata.nbgrader.grade_id = "test_renamed_by_student"


def _stripped(nb):
    for c in nb.cells:
        c.metadata.pop("nbgrader", None)


def _warning(nb):
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("grade_id") == "softmax_impl":
            c.source = c.source.replace(
                '"""数值稳定的 softmax：沿 axis 归一化，任意维数。"""',
                '"""数值稳定的 softmax：沿 axis 归一化，任意维数。"""\n'
                '    import warnings\n    warnings.warn("softmax: just a harmless warning")')
            assert "warnings.warn" in c.source


def _without_plots(submitted):
    for path in submitted.rglob("*.ipynb"):
        write_nb(without_plots(read_nb(path)), path)


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    base = tmp_path_factory.mktemp("grade")
    course = base / "course"
    sample_submissions(course, GOOD)
    shutil.copy(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")  # a real course
    submitted = course / "submitted"
    _without_plots(submitted)
    (submitted / "badjson" / A).mkdir(parents=True)
    (submitted / "badjson" / A / f"{A}.ipynb").write_text('{"cells": [', encoding="utf-8")
    _variant(submitted, "wrongname", lambda nb: "homework (1).ipynb")
    _variant(submitted, "deleted", _deleted)
    _variant(submitted, "stripped", _stripped)
    _variant(submitted, "loop", lambda nb: _insert_after(nb, "softmax_impl", "while True:\n    pass"))
    _variant(submitted, "exit", lambda nb: _insert_after(nb, "imports", "import os\nos._exit(1)"))
    _variant(submitted, "warning", _warning)
    _variant(submitted, "tamper", lambda nb: _insert_after(nb, "imports", TAMPER))
    # a submission that is a link to the instructor's answer key must not be read
    (submitted / "symlinked" / A).mkdir(parents=True)
    (submitted / "symlinked" / A / f"{A}.ipynb").symlink_to(ROOT / "solutions" / A / f"{A}.ipynb")
    out = base / "out"
    results = grade(submissions=submitted, out=out, settings=SETTINGS, jobs=2)
    return course, out, {r.student: r for r in results}


def test_every_submission_has_a_row(batch):
    _course, out, results = batch
    assert set(results) == set(GOOD) | set(BROKEN)
    rows = list(csv.DictReader(open(out / "scores.csv", encoding="utf-8")))
    assert sorted(r["student"] for r in rows) == sorted(results)
    data = json.loads((out / "scores.json").read_text(encoding="utf-8"))
    assert sorted(r["student"] for r in data) == sorted(results)
    log = (out / "grading.log").read_text(encoding="utf-8")
    assert "ready in" in log and "submission(s) written" in log  # every step is logged


def test_good_students_are_scored(batch):
    _course, _out, results = batch
    perfect, mistake = results["perfect"], results["mistake-naive_softmax"]
    assert perfect.status == "ok" and perfect.auto_score == perfect.auto_max > 0
    assert mistake.lost == ["test_softmax_stable"]


@pytest.mark.parametrize("student,words", [
    ("badjson", ["notebook", "JSON"]),
    ("wrongname", ["文件名", "homework (1).ipynb"]),
    ("deleted", ["test_softmax", "test_attention"]),
    ("stripped", ["元数据", "metadata"]),
    ("loop", ["中断", "interrupted"]),
    ("exit", ["进程已经退出", "the child died"]),
    ("symlinked", ["没有找到", "no q1_value_scaling.ipynb"]),
])
def test_broken_submission_gets_a_bilingual_reason(batch, student, words):
    _course, _out, results = batch
    result = results[student]
    assert result.reason
    for word in words:
        assert word in result.reason


def test_repaired_submissions_still_earn_their_points(batch):
    _course, _out, results = batch
    for student in ("wrongname", "deleted", "stripped"):
        r = results[student]
        assert r.status == "note" and r.auto_score == r.auto_max, (student, r.reason)
    # the looping cell sits right after softmax: only that cell's time is lost
    loop = results["loop"]
    assert loop.status == "note" and loop.auto_score == loop.auto_max
    assert loop.timed_out and not any(r.timed_out for r in results.values() if r is not loop)
    assert results["badjson"].status == results["symlinked"].status == "failed"
    assert results["exit"].status == "note" and results["exit"].auto_score == 0


def test_tampering_with_the_grader_is_flagged_for_review(batch):
    _course, out, results = batch
    assert any("导入了评分程序" in r for r in results["tamper"].review)
    assert any("os._exit" in r for r in results["exit"].review)
    assert results["perfect"].review == [] and results["warning"].review == []
    rows = {r["student"]: r for r in csv.DictReader(open(out / "scores.csv", encoding="utf-8"))}
    assert "导入了评分程序" in rows["tamper"]["review"] and rows["perfect"]["review"] == ""


def test_a_warning_from_a_correct_answer_costs_nothing(batch):
    _course, _out, results = batch
    r = results["warning"]
    assert r.auto_score == r.auto_max and not r.lost, r.reason


def test_feedback_hides_the_hidden_tests(batch):
    _course, out, results = batch
    pages = list((out / "feedback").rglob("*.html"))
    assert len(pages) >= 5
    assert (out / "feedback" / "perfect" / A / f"{A}.html").is_file()
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert "BEGIN HIDDEN TESTS" not in html and "q1.softmax" not in html, page
        if page.parts[-3] != "tamper":  # that student wrote run_check in their own code
            assert "run_check" not in html, page
    html = (out / "feedback" / "mistake-naive_softmax" / A / f"{A}.html").read_text("utf-8")
    assert "softmax 数值溢出" in html and "❌" in html and "✅" in html


def test_scores_are_plain_floats(batch):
    _course, out, _results = batch
    data = json.loads((out / "scores.json").read_text(encoding="utf-8"))
    for row in data:
        assert type(row["auto_score"]) is float and type(row["auto_max"]) is float
        for value in row["cells"].values():
            assert value is None or type(value) is float
    rows = list(csv.DictReader(open(out / "scores.csv", encoding="utf-8")))
    perfect = next(r for r in rows if r["student"] == "perfect")
    assert perfect["test_softmax"] == "2.0" and float(perfect["auto_score"]) == load(A).auto_max
    assert float(perfect["core_score"]) == float(perfect["core_max"]) > 0
    assert "np.float64" not in (out / "scores.csv").read_text(encoding="utf-8")


def test_regrading_gives_the_same_scores(batch, tmp_path):
    course, _out, results = batch
    again_dir = tmp_path / "again"
    shutil.copytree(course / "submitted" / "mistake-naive_softmax",
                    again_dir / "mistake-naive_softmax")
    with warm_zygote.shared():
        again = grade(submissions=again_dir, out=tmp_path / "out", settings=SETTINGS, jobs=1)
    assert again[0].cells == results["mistake-naive_softmax"].cells


def test_nbgrader_keeps_the_record(batch):
    """autograded/ and gradebook.db as nbgrader autograde leaves them; its own
    generate_feedback then works on them unchanged."""
    course, _out, results = batch
    for student in ("perfect", "mistake-naive_softmax", "loop"):
        cells = {c.cell: c.score for c in read_scores(course, A, student)}
        assert cells == {k: v for k, v in results[student].cells.items()}, student
        assert (course / "autograded" / student / A / f"{A}.ipynb").is_file()
    assert read_scores(course, A, "badjson") == []
    done = nbgrader(["generate_feedback", A, "--student", "perfect", "--force"], course, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    html = (course / "feedback" / "perfect" / A / f"{A}.html").read_text(encoding="utf-8")
    assert "BEGIN HIDDEN TESTS" not in html and "run_check" not in html


def test_a_new_course_gets_a_private_salt(batch):
    course, _out, _results = batch
    assert not (course / ".autograder-salt").exists()  # the batch passed a fixed salt


def test_the_salt_file_is_created_private_and_reused(tmp_path):
    from autograder.grading.salt import load_salt

    first = load_salt(course=tmp_path)
    path = tmp_path / ".autograder-salt"
    assert len(first) == 64 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_salt(course=tmp_path) == first


def test_a_broken_check_is_a_grader_error_never_a_zero(batch, tmp_path, monkeypatch):
    course, _out, _results = batch

    def broken(ctx, *, softmax):
        raise ZeroDivisionError("a bug in the check")

    monkeypatch.setitem(bank._REGISTRY, "q1.softmax_stable",
                        bank.Check("q1.softmax_stable", "数值稳定性", broken))
    subs = tmp_path / "subs"
    shutil.copytree(course / "submitted" / "perfect", subs / "perfect")
    with warm_zygote.shared():
        [row] = grade(submissions=subs, out=tmp_path / "out", settings=SETTINGS, jobs=1)
    assert row.status == GRADER_ERROR and row.grader_errors == ["test_softmax_stable"]
    assert row.cells["test_softmax_stable"] is None and row.cells["test_softmax"] == 2.0
    log = (tmp_path / "out" / "grading.log").read_text(encoding="utf-8")
    assert "ZeroDivisionError: a bug in the check" in log
    page = (tmp_path / "out" / row.feedback).read_text(encoding="utf-8")
    assert "评分程序出错" in page and "a bug in the check" not in page


def test_cli_grade_from_a_subdirectory_exits_0_with_low_scores(batch, tmp_path):
    course, _out, _results = batch
    subs = tmp_path / "submitted"
    shutil.copytree(course / "submitted" / "badjson", subs / "badjson")
    old = os.getcwd()
    os.chdir(ROOT / "docs")
    try:
        with warm_zygote.shared():
            result = CliRunner().invoke(main, ["grade", str(subs), "--out", str(tmp_path / "o")])
    finally:
        os.chdir(old)
    assert result.exit_code == 0, result.output
    assert "badjson" in result.output
    assert (tmp_path / "o" / "scores.csv").is_file()
    assert (tmp_path / ".autograder-salt").is_file()  # the course holding submitted/


def _graded(student: str, score: float):
    from autograder.engine.host.job import CellResult
    from autograder.engine.host.manifest import load
    from autograder.engine.host.pool import Graded
    from autograder.engine.host.pool import Submission as Task

    cells = [CellResult(c.grade_id, c.grade_id, c.points, c.is_manual,
                        score=None if c.is_manual else min(score, c.points))
             for c in load(A).graded]
    return Graded(Task(student, A, Path("/nonexistent")), cells=cells, notebook="{}")


def test_the_gradebook_gets_a_whole_batch_or_none_of_it(tmp_path):
    """Submissions are recorded as they arrive, in one transaction: an aborted batch
    (the grading around it failed) leaves no row; a closed one leaves every row."""
    from autograder.engine.host.gradebook import GradebookWriter, open_gradebook
    from autograder.engine.host.manifest import load

    path = tmp_path / "gradebook.db"
    aborted = GradebookWriter(path, {A: load(A)})
    aborted.start()
    aborted.add(_graded("ann", 1.0))
    aborted.abort()
    with open_gradebook(path) as gb:
        assert gb.assignment_submissions(A) == [] and len(gb.find_notebook(A, A).grade_cells) > 0
    writer = GradebookWriter(path, {A: load(A)})
    writer.start()
    for student in ("ann", "bob"):
        writer.add(_graded(student, 1.0))
    crashed = _graded("cat", 1.0)
    crashed.crashed = "a grader bug"  # not recorded, as nbgrader autograde records none
    writer.add(crashed)
    assert writer.close() == 2
    with open_gradebook(path) as gb:
        assert sorted(s.student_id for s in gb.assignment_submissions(A)) == ["ann", "bob"]
        cell = next(c for c in load(A).graded if not c.is_manual)
        assert gb.find_grade(cell.grade_id, A, A, "bob").auto_score == min(1.0, cell.points)


def test_a_dying_worker_loses_only_its_own_submission(monkeypatch, tmp_path):
    """A worker that dies is replaced; the submission queued behind the one it was
    grading is graded by another worker, not reported lost."""
    import os as os_module

    from autograder.engine.host import pool

    real = pool._grade_one

    def dies_on_bob(task, *args):
        if task.student == "bob":
            os_module._exit(3)
        return real(task, *args)

    monkeypatch.setattr(pool, "_grade_one", dies_on_bob)
    tasks = [pool.Submission(s, A, tmp_path / s) for s in ("ann", "bob", "cat", "dan")]
    with warm_zygote.shared():  # the worker dies, not the zygote: no start of its own
        graded = pool.grade_tasks(tasks, SETTINGS, jobs=1)
    assert [g.task.student for g in graded] == ["ann", "bob", "cat", "dan"]
    assert [bool(g.crashed) for g in graded] == [False, True, False, False]
    assert "died" in graded[1].crashed and all(g.stopped for g in graded if not g.crashed)


def test_a_sandbox_that_cannot_start_is_one_clear_error_and_writes_nothing(monkeypatch, tmp_path):
    import subprocess
    import sys

    from autograder.engine.host import zygote_link
    from autograder.errors import CourseError

    real = subprocess.Popen

    def no_zygote(args, **kwargs):
        if "autograder.engine.child.zygote" in args:
            args = [sys.executable, "-c", "import sys; sys.exit('no namespaces for you')"]
        return real(args, **kwargs)

    monkeypatch.setattr(zygote_link.subprocess, "Popen", no_zygote)
    subs = tmp_path / "submitted"
    write_nb(read_nb(ROOT / "release" / A / f"{A}.ipynb"), subs / "ann" / A / f"{A}.ipynb")
    out = tmp_path / "out"
    with pytest.raises(CourseError, match="sandbox could not be started.*grading.log"):
        grade(submissions=subs, out=out, settings=SETTINGS, jobs=2)
    assert "no namespaces for you" in (out / "grading.log").read_text(encoding="utf-8")
    assert not list(tmp_path.rglob("gradebook.db")) and not list(tmp_path.rglob("scores.csv"))


def test_staged_output_replaces_each_folder_whole_and_never_follows_a_link(tmp_path):
    """``move_into`` (grade's autograded/ and out/, feedback's feedback/): a folder left by
    an earlier run is replaced whole, a link in its place is removed, not written through."""
    import os

    from autograder.engine.host.files import move_into

    staged, dest, victim = tmp_path / "staged", tmp_path / "dest", tmp_path / "victim"
    for student in ("ann", "bob"):
        (staged / student / A).mkdir(parents=True)
        (staged / student / A / "page.html").write_text("new")
    (dest / "ann" / A).mkdir(parents=True)
    (dest / "ann" / A / "old.html").write_text("old")
    victim.mkdir()
    (dest / "bob").mkdir()
    os.symlink(victim, dest / "bob" / A)
    move_into(staged, dest, depth=2)
    assert sorted(p.name for p in (dest / "ann" / A).iterdir()) == ["page.html"]
    assert not (dest / "bob" / A).is_symlink() and (dest / "bob" / A / "page.html").is_file()
    assert list(victim.iterdir()) == []
