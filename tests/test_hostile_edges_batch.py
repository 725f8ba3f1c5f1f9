"""Hostile edges, third pass (issue 29), through ``autograder grade`` and
``autograder feedback``: names and sizes cost only their own row and page.

One small nbgrader course, q1's honest wrong answer (no 1/√d_k) as every student's base:

- ``written-1mb``: the written answer is 1 MB of ``<div class="math">$$`` (the old page
  regex was quadratic on it: ~10 minutes, then a forced grader error);
- ``display-1mb``: a cell displays the same 1 MB as Markdown;
- ``bad-name``: a data file whose name is not UTF-8 beside the notebook (it forced a
  grader error: the wire's JSON header cannot carry it);
- ``cells-2000``: 2000 cells with q1's test cells deleted (grading puts them back: 2000+
  cells, which ``autograder feedback`` refused to read, writing no page for anyone);
- ``newlines-48mb``: 48 MB of newline-only Markdown (nbformat wrote it as 239 MB, which
  ``autograder feedback`` refused, again writing no page for anyone);
- ``broken``: its autograded notebook is overwritten before ``autograder feedback``.

Each keeps the honest base's scores; ``autograder feedback`` writes every page but
``broken``'s and says why in one line.
"""

from __future__ import annotations

import copy
import json

import nbformat
import pytest
import warm_zygote
from pipeline_helpers import ROOT, without_plots

from autograder.authoring import cells as nbs
from autograder.engine.host.feedback_page import TOO_LARGE_PAGE
from autograder.engine.host.manifest import load, release_notebook
from autograder.integrations.nbgrader.feedback import write_feedback
from autograder.integrations.nbgrader.grade import grade
from autograder.samples import mistakes
from autograder.samples.submission import make_submission
from autograder.settings import GradeSettings

pytestmark = pytest.mark.e2e

A = "q1_value_scaling"
SETTINGS = GradeSettings(timeout=120, cell_timeout=10, memory_mb=1024, salt="hostile-edges")
MATH = '<div class="math">$$'
WRITTEN = "written_qk_vs_v"


def _honest() -> nbformat.NotebookNode:
    source = nbs.read(ROOT / "source" / A / f"{A}.ipynb")
    wrong = next(v for v in mistakes(A) if v.name == "no_sqrt_dk")
    return without_plots(make_submission(source, release_notebook(load(A)), wrong))


def _is_test(cell) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and meta.get("grade") and not meta.get("solution")


def _students(base: nbformat.NotebookNode) -> dict[str, nbformat.NotebookNode]:
    written = copy.deepcopy(base)
    next(c for c in written.cells if nbs.grade_id(c) == WRITTEN).source = MATH * (50_000)
    display = copy.deepcopy(base)
    at = next(i for i, c in enumerate(display.cells) if nbs.grade_id(c) == "imports")
    display.cells.insert(at + 1, nbformat.v4.new_code_cell(
        f"from IPython.display import Markdown, display\ndisplay(Markdown({MATH!r} * 50_000))"))
    many = copy.deepcopy(base)
    many.cells = [c for c in many.cells if not _is_test(c)]
    many.cells += [nbformat.v4.new_markdown_cell("·") for _ in range(2000 - len(many.cells))]
    newlines = copy.deepcopy(base)
    newlines.cells += [nbformat.v4.new_markdown_cell("\n" * 1_000_000) for _ in range(24)]
    return {"honest": base, "written-1mb": written, "display-1mb": display,
            "bad-name": base, "cells-2000": many, "newlines-48mb": newlines, "broken": base}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = tmp_path_factory.mktemp("edges")
    for student, nb in _students(_honest()).items():
        folder = course / "submitted" / student / A
        folder.mkdir(parents=True)
        # strings whole, as Jupyter may save them: 48 MB on disk, within the 50 MB limit
        (folder / f"{A}.ipynb").write_text(nbformat.writes(nb, split_lines=False),
                                           encoding="utf-8")
    bad = bytes(course / "submitted" / "bad-name" / A) + b"/data\xff.txt"
    with open(bad, "wb") as fh:
        fh.write(b"1,2,3\n")
    with warm_zygote.shared():
        rows = {r.student: r for r in grade(submissions=course / "submitted",
                                             out=course / "out", settings=SETTINGS, jobs=2)}
    (course / "autograded" / "broken" / A / f"{A}.ipynb").write_text("{not json", encoding="utf-8")
    return course, rows, write_feedback(course=course)


@pytest.mark.parametrize("student", ["written-1mb", "display-1mb", "bad-name", "cells-2000",
                                     "newlines-48mb"])
def test_each_edge_costs_nothing_but_keeps_the_honest_scores(course, student):
    _, rows, _ = course
    row, honest = rows[student], rows["honest"]
    assert row.status != "grader-error", row.reason
    assert (row.cells, row.auto_score) == (honest.cells, honest.auto_score), row.reason


def test_a_data_file_name_that_is_not_utf8_is_left_out_with_a_note(course):
    _, rows, _ = course
    assert "UTF-8" in rows["bad-name"].reason and "data" in rows["bad-name"].reason


@pytest.mark.parametrize("student", ["written-1mb", "display-1mb"])
def test_a_page_too_large_to_render_says_so(course, student):
    path, _, _ = course
    page = (path / "feedback" / student / A / f"{A}.html").read_text(encoding="utf-8")
    assert TOO_LARGE_PAGE in page


def test_feedback_writes_every_readable_page_and_names_the_one_it_cannot(course):
    path, rows, written = course
    pages = {p.parent.parent.name for p in written.pages}
    assert pages == set(rows) - {"broken"}
    assert len(written.unreadable) == 1 and written.unreadable[0].startswith(f"broken/{A}: ")
    assert "\n" not in written.unreadable[0] and "autograder grade" in written.unreadable[0]
    assert f"no page for broken/{A}" in written.report()


def test_the_autograded_notebooks_are_within_what_feedback_reads(course):
    path, _, _ = course
    big = path / "autograded" / "newlines-48mb" / A / f"{A}.ipynb"
    assert big.stat().st_size < 60 << 20  # nbformat's one-entry-per-line file was 239 MB
    nb = json.loads((path / "autograded" / "cells-2000" / A / f"{A}.ipynb").read_bytes())
    assert len(nb["cells"]) > 2000
