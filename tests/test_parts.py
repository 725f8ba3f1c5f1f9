"""Core and extensions: the cell convention, and what each mode makes of a release."""

from __future__ import annotations

import copy

import nbformat
import pytest
from pipeline_helpers import ROOT, A, mini_repo, read_nb

from autograder.authoring import cells as nbs
from autograder.authoring.course import new_course
from autograder.authoring.parts import ANSWER_STUB, CORE, for_release, part_of, sections
from autograder.engine.host import hidden
from autograder.engine.host.hidden import check_calls
from autograder.errors import CourseError
from autograder.samples.submission import make_submission

EXT = "ext-demo"


def _mark(cell, **extra):
    cell.metadata["autograder"] = {"part": EXT, **extra}
    return cell


def _with_extension(nb):
    """``nb`` plus one extension at its end: a heading, a copy of its first test cell
    (a graded cell whose hidden region calls a real check) and a written answer."""
    nb = copy.deepcopy(nb)
    first_test = next(c for c in nb.cells if c.cell_type == "code"
                      and c.metadata.get("nbgrader", {}).get("grade") and check_calls(c.source))
    test = nbs.tests("test_ext_demo", 2, first_test.source)
    written = nbs.written("written_ext_demo", 3, "**参考答案**\n\n拓展的参考答案。")
    heading = nbs.md("## 拓展 A：示例（选做，约 10 分钟）", "md_ext_demo")
    nb.cells += [_mark(heading, title="示例", minutes=10), _mark(test), _mark(written)]
    return nb


@pytest.fixture(scope="module")
def source():
    return _with_extension(read_nb(ROOT / "source" / A / f"{A}.ipynb"))


def test_sections_reads_the_extension_and_every_cell_knows_its_part(source):
    assert [(e.id, e.title, e.minutes) for e in sections(source, "demo")][-1] == (EXT, "示例", 10)
    assert [part_of(c) for c in source.cells[-3:]] == [EXT] * 3
    assert part_of(source.cells[0]) == CORE


@pytest.mark.parametrize("breakage, message", [
    (lambda nb: nb.cells.append(nbs.md("core again")), "core cell after extension"),
    (lambda nb: nb.cells[-1].metadata["autograder"].update(part="Ext_Bad"), "is not 'core'"),
    (lambda nb: nb.cells[-3].metadata["autograder"].pop("minutes"), "title and whole minutes"),
    (lambda nb: nb.cells.insert(-1, _mark(nbs.md("x"), part="ext-other", title="o", minutes=1)),
     "split in two"),
])
def test_a_broken_layout_is_one_line_naming_the_cell(source, breakage, message):
    nb = copy.deepcopy(source)
    breakage(nb)
    with pytest.raises(CourseError, match=message) as err:
        sections(nb, "source/demo.ipynb")
    assert "source/demo.ipynb, cell" in str(err.value) and "\n" not in str(err.value)


def test_graded_keeps_everything_and_omit_drops_the_extension(source):
    assert for_release(source, "graded").cells == source.cells
    omitted = for_release(source, "omit")
    assert omitted.cells == [c for c in source.cells if part_of(c) == CORE]
    assert len(omitted.cells) < len(source.cells) - 3
    with pytest.raises(CourseError, match="unknown extension mode"):
        for_release(source, "sometimes")


def test_practice_turns_graded_cells_into_ungraded_ones(source):
    practice = for_release(source, "practice")
    heading, test, written = practice.cells[-3:]
    assert test.metadata.nbgrader["grade"] is False and test.metadata.nbgrader["locked"]
    assert "points" not in test.metadata.nbgrader and test.metadata.autograder["points"] == 2
    assert hidden.HIDDEN_BEGIN not in test.source
    assert "nbgrader" not in written.metadata and written.source == ANSWER_STUB
    assert written.metadata.autograder["answer_for"] == "written_ext_demo"
    assert source.cells[-2].metadata.nbgrader["grade"] is True  # the source is untouched


@pytest.fixture(scope="module")
def practice_course(tmp_path_factory, source):
    """A course released by real nbgrader with the extension as practice."""
    folder = tmp_path_factory.mktemp("practice")
    root = mini_repo(folder / "repo")
    nbformat.write(source, str(root / "source" / A / f"{A}.ipynb"))
    course = new_course(folder / "course", root, [A], extensions="practice")
    return course, read_nb(course / "release" / A / f"{A}.ipynb")


def test_real_nbgrader_releases_a_practice_extension(practice_course):
    """nbgrader generate_assignment accepts the rewritten notebook (it refuses hidden tests
    in a cell that is not graded, and a written answer that is not): the extension's test
    cell is released read-only, and none of its cells is a grade cell of the gradebook."""
    from nbgrader.api import Gradebook

    course, release = practice_course
    test = next(c for c in release.cells if nbs.grade_id(c) == "test_ext_demo")
    assert test.metadata.nbgrader["locked"] and hidden.HIDDEN_BEGIN not in test.source
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        graded = {c.name for c in gb.find_notebook(A, A).grade_cells}
    assert not {"test_ext_demo", "written_ext_demo"} & graded
    assert graded  # the core's grade cells are all still there


def _manifest(source, release, mode, course=None):
    """The manifest ``autograder build`` would write for this release."""
    import json

    from autograder.authoring.manifests import manifest_text
    from autograder.engine.host.manifest import parse

    if course is not None:
        return parse(json.loads(manifest_text(A, source, release, course, mode=mode)))
    from autograder.authoring.manifests import build_manifest
    from autograder.bank import get_check

    titles = {call.name: get_check(call.name).title for c in source.cells
              if c.cell_type == "code" for call in check_calls(c.source)}
    rows = {"source_cells": [], "grade_cells": [], "solution_cells": []}
    return parse(build_manifest(assignment=A, source_nb=source, release_nb=release,
                                gradebook_rows=rows, digest="", titles=titles, mode=mode))


def test_the_engine_checks_a_practice_extension_without_scoring_it(tmp_path, source,
                                                                    practice_course):
    """A real sandboxed child runs the practice cell; its checks pass for the solution
    and fail for the blank notebook, and neither changes the automatic total."""
    from autograder.engine.host.feedback_page import render_feedback
    from autograder.engine.host.job import Job
    from autograder.engine.host.manifest import release_notebook
    from autograder.engine.host.pipeline import run
    from autograder.engine.host.zygote_link import Zygote
    from autograder.samples import PERFECT
    from autograder.settings import GradeSettings

    course, release = practice_course
    manifest = _manifest(source, release, "practice", course)
    assert [c.grade_id for c in manifest.practice][-1] == "test_ext_demo"
    assert [p.id for p in manifest.parts][-1] == EXT
    core_max = manifest.auto_max
    zygote = Zygote(figures=False, warm=False, tokenizer=False)
    try:
        for variant, status in ((PERFECT, "passed"), (None, "failed")):
            folder = tmp_path / (variant.name if variant else "blank")
            nb = make_submission(source, release_notebook(manifest), variant)
            nb.cells = [c for c in nb.cells if "plt." not in c.source]
            nbs.write(nb, folder / f"{A}.ipynb")
            job = run(Job("s", A, folder, manifest, GradeSettings(), zygote=zygote))
            assert job.practice["test_ext_demo"].status == status, job.practice
            page = render_feedback(job)
            assert "项（不计分）" in page and "拓展练习，不计分" in page
            assert "test_ext_demo" not in job.cells
            assert sum(r.max_score for r in job.cells.values() if not r.manual) == core_max
    finally:
        zygote.close()


def test_graded_extensions_are_totalled_apart_from_the_core(source):
    from types import SimpleNamespace

    from autograder.engine.host.job import CellResult
    from autograder.engine.host.pool import Submission
    from autograder.grading.batch import _result

    manifest = _manifest(source, for_release(source, "graded"), "graded")
    cells = [CellResult(s.grade_id, s.title, s.points, s.is_manual, score=s.points,
                        status="passed", part=s.part) for s in manifest.graded]
    graded = SimpleNamespace(seconds=0, notes=[], crashed="", stopped=False, cells=cells,
                             practice=[], timestamp=None)
    result = _result(Submission("s", A, None), manifest, graded)
    core, ext = result.part_total(False), result.part_total(True)
    ext_max = sum(s.points for s in manifest.graded if s.part != CORE and not s.is_manual)
    assert ext == (ext_max, ext_max) and ext_max >= 2  # the demo extension and q1's own
    assert core[0] == core[1] == manifest.auto_max - ext_max > 0
    assert result.auto_score == core[0] + ext[0]
    assert set(result.parts) == {CORE} | {s.part for s in manifest.graded}
