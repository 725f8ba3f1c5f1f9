"""The page rendered again after hand grading, in-process: blank written answers shown one
way, and the host's record in the autograded notebook read as hostile data.

No sandbox runs here: the Score step and the page work on the released notebook (the
course-level route, with a real grading run and real nbgrader, is in
``test_feedback_page.py``).
"""

from __future__ import annotations

import copy
import re

import nbformat
import pytest
from pipeline_helpers import ROOT, A

from autograder.authoring import cells as nbs
from autograder.engine.host import graded_record
from autograder.engine.host.feedback_page import BLANK_WORD, STATUS_WORDS, render_feedback
from autograder.engine.host.hand_grades import HandGrades, apply_hand_grades
from autograder.engine.host.job import Job
from autograder.engine.host.manifest import load, release_notebook
from autograder.engine.host.pipeline import Score
from autograder.engine.host.prepare import ClearSubmittedOutputs
from autograder.settings import GradeSettings, Status

WRITTEN = ("written_qk_vs_v", "written_apple")


def _scored(edit=None) -> Job:
    """q1's released notebook (``edit``-ed) through the Score step alone."""
    job = Job("s", A, ROOT, load(A), GradeSettings())
    job.nb = copy.deepcopy(release_notebook(job.manifest))
    if edit:
        edit(job.nb)
    Score()(job)
    return job


def _cell(nb, gid):
    return next(c for c in nb.cells if nbs.grade_id(c) == gid)


def _shown(page: str, gid: str) -> tuple[str, str]:
    """(summary row, verdict line) of ``gid`` on ``page``, tags removed."""
    row = re.search(rf'<tr><td>[^<]*</td><td><a href="#{gid}">.*?</tr>', page).group(0)
    verdict = re.search(rf'id="{gid}"><div class="verdict[^"]*">.*?</div>', page).group(0)
    return re.sub("<[^>]+>", "|", row), re.sub("<[^>]+>", "", verdict)


def test_a_blank_written_answer_shows_one_way_in_the_summary_and_the_page():
    """Left as released or emptied: "没有作答" and 0 points, in the row and above the cell;
    an answer the student wrote waits ("—"), and neither says the other."""
    def empty_one(nb):
        _cell(nb, "written_apple").source = "  \n"

    job = _scored(empty_one)
    assert job.cells["written_apple"].blank and job.cells["written_qk_vs_v"].blank
    page = render_feedback(job)
    for gid, points in (("written_qk_vs_v", 3), ("written_apple", 2)):
        row, verdict = _shown(page, gid)
        assert f"|{BLANK_WORD}|" in row and f"|0 / {points}|" in row, row
        assert f"{BLANK_WORD}，0 / {points} 分" in verdict, verdict
    assert STATUS_WORDS[Status.MANUAL] not in page
    assert "文字回答 0 / 5 分" in page

    def answer(nb):
        _cell(nb, "written_apple").source = "苹果的两个意思由上下文区分。"

    page = render_feedback(_scored(answer))
    row, verdict = _shown(page, "written_apple")
    assert "|— / 2|" in row and STATUS_WORDS[Status.MANUAL] in row
    assert f"{STATUS_WORDS[Status.MANUAL]}，— / 2 分" in verdict
    assert "已评 1 / 2 项" in page


def test_hand_grades_on_a_blank_answer_and_a_written_one_count_in_the_total():
    job = _scored()
    apply_hand_grades(job, HandGrades(scores={"written_qk_vs_v": 1.0}))
    page = render_feedback(job)
    total = load(A).auto_max + 5  # the core's automatic points and written (a) 3 + (b) 2
    assert f"文字回答 1 / 5 分；总分 <b>1 / {total:g}</b> 分" in page  # nothing else passed


def test_a_record_the_submission_brings_is_dropped_before_grading():
    """Only the host writes the record: a forged one in the submitted notebook goes with
    the rest of its metadata (so it can never say a cell passed)."""
    job = Job("s", A, ROOT, load(A), GradeSettings())
    job.nb = copy.deepcopy(release_notebook(job.manifest))
    job.nb.metadata[graded_record.KEY] = {"version": 1, "cells": {
        "test_softmax": {"status": "passed", "score": 2, "messages": []}}, "verdicts": []}
    ClearSubmittedOutputs()(job)
    assert graded_record.KEY not in job.nb.metadata


def _restored(record) -> Job:
    nb = copy.deepcopy(release_notebook(load(A)))
    test_cell = _cell(nb, "test_softmax")
    test_cell.outputs = [nbformat.v4.new_output("error", ename="CheckFailed", evalue="学生的",
                                                traceback=["学生的"])]
    nb.metadata[graded_record.KEY] = record
    return graded_record.restore(Job("s", A, ROOT, load(A), GradeSettings()), nb)


def test_the_record_is_read_as_hostile_data():
    """Wrong types, unknown statuses and cells, verdicts out of range, huge text: read
    without error, within bounds; a cell's title and maximum still come from the manifest."""
    at = next(i for i, c in enumerate(release_notebook(load(A)).cells)
              if nbs.grade_id(c) == "test_softmax")
    job = _restored({"version": 1, "unanswered": "all", "verdicts": [[at, 0], [at, 9], [-1, 0],
                                                                     [True, 0], "x"],
                     "cells": {"test_softmax": {"status": "owned", "score": float("nan"),
                                                "messages": ["m" * 10**6, 3], "title": "伪造",
                                                "max_score": 100},
                               "test_attention": {"status": "passed", "score": "2"},
                               "not_a_cell": {"status": "passed", "score": 1}}})
    softmax = job.cells["test_softmax"]
    assert softmax.status == Status.NOT_RUN and softmax.score is None
    assert softmax.messages == ["m" * 20_000] and softmax.max_score == 2.0
    assert softmax.title == load(A).by_grade_id("test_softmax").title
    assert job.cells["test_attention"].score is None and "not_a_cell" not in job.cells
    assert job.unanswered == set() and len(job.verdicts) == 1
    render_feedback(job)


@pytest.mark.parametrize("record", [None, [], {"version": 99}, {"cells": {}}])
def test_a_notebook_without_the_host_s_record_is_refused(record):
    with pytest.raises(graded_record.RecordMissing):
        _restored(record)


def test_outputs_read_back_pass_the_child_s_filter_again():
    """An output the file should never hold (HTML, script) is dropped on the way back."""
    record = {"version": 1, "cells": {}, "verdicts": []}
    nb = copy.deepcopy(release_notebook(load(A)))
    _cell(nb, "test_softmax").outputs = [nbformat.v4.new_output(
        "display_data", data={"text/html": "<script>alert(1)</script>", "text/plain": "x"})]
    nb.metadata[graded_record.KEY] = record
    job = graded_record.restore(Job("s", A, ROOT, load(A), GradeSettings()), nb)
    assert _cell(job.nb, "test_softmax").outputs[0].data == {"text/plain": "x"}
    assert "alert(1)" not in render_feedback(job)
