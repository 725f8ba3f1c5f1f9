"""``autograder build``: the generated views and ``--check``."""

from __future__ import annotations

import os
import re
import shutil

import pytest
from click.testing import CliRunner
from pipeline_helpers import ROOT, A, mini_repo, read_nb

from autograder.authoring import cells as nbs
from autograder.authoring.build import build
from autograder.authoring.manifests import normalise
from autograder.authoring.views import HEADER_ID
from autograder.cli import main
from autograder.engine.host import hidden
from autograder.settings import ASSIGNMENTS as ASSIGNMENT_ORDER
from autograder.settings import SELF_CHECK_ID

VIEWS = ("release", "solutions", "exercises")


def _committed(view: str):
    # a missing view fails here (read_nb raises), it is never skipped
    return [(a, read_nb(ROOT / view / a / f"{a}.ipynb")) for a in ASSIGNMENT_ORDER]


def _solution_lines(assignment: str, *, code_only: bool = False) -> list[str]:
    """Substantive lines of the source's solution regions (what students must not see),
    leaving out lines the notebook also shows in its given (non-solution) cells."""
    cells = read_nb(ROOT / "source" / assignment / f"{assignment}.ipynb").cells
    given = "\n".join(c.source for c in cells if not nbs.is_solution_cell(c))
    lines = []
    for cell in cells:
        if not nbs.is_solution_cell(cell) or (code_only and cell.cell_type != "code"):
            continue
        for region in re.findall(rf"{re.escape(hidden.SOLUTION_BEGIN)}(.*?){re.escape(hidden.SOLUTION_END)}",
                                 cell.source, re.S):
            lines += [ln.strip() for ln in region.splitlines()
                      if len(ln.strip()) > 25 and ln.strip() not in given]
    return lines


@pytest.mark.parametrize("view", ["release", "exercises"])
def test_student_views_hold_no_solution_hidden_tests_or_reference(view):
    notebooks = _committed(view)
    assert notebooks, f"no committed {view}/ notebooks: run `autograder build`"
    for a, nb in notebooks:
        text = "\n".join(c.source for c in nb.cells)
        for marker in (hidden.SOLUTION_BEGIN, hidden.HIDDEN_BEGIN, "run_check", "autograder.bank.lib.reference",
                       "from autograder import reference"):
            assert marker not in text, f"{view}/{a} contains {marker!r}"
        # the exercises edition shows written answers' model answers, folded, on purpose
        for line in _solution_lines(a, code_only=view == "exercises"):
            assert line not in text, f"{view}/{a} shows solution code: {line!r}"


def test_answer_keys_have_solutions_outputs_and_no_hidden_tests():
    for a, nb in _committed("solutions"):
        text = "\n".join(c.source for c in nb.cells)
        assert hidden.HIDDEN_BEGIN not in text and "run_check" not in text
        assert hidden.SOLUTION_BEGIN not in text
        assert any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), a


def test_answer_keys_ran_cleanly_and_their_plots_have_every_glyph():
    """No error and nothing on stderr: matplotlib warns there when a label has a character
    its font lacks (Chinese in a figure would show as boxes)."""
    for a, nb in _committed("solutions"):
        for cell in nb.cells:
            for out in cell.get("outputs", []):
                assert out.get("output_type") != "error", (a, out.get("evalue"))
                assert not (out.get("output_type") == "stream" and out.get("name") == "stderr"), \
                    (a, out.get("text"))


_AUTO_LAYOUT = re.compile(r"constrained|tight_layout\(|bbox_inches\s*=\s*[\"']tight")


def test_figure_cells_lay_out_with_fixed_margins():
    """Each graded submission draws the notebook's figures again; an automatic layout
    measures every label once more first (docs/AUTHORING.md)."""
    for a, nb in _committed("solutions"):
        for cell in nb.cells:
            if cell.cell_type == "code" and "plt." in cell.source:
                assert not _AUTO_LAYOUT.search(cell.source), (a, cell.source[:200])


def test_student_editions_open_with_how_to_answer_and_self_check():
    for view in ("release", "exercises"):
        for _a, nb in _committed(view):
            first = nb.cells[0]
            assert first.cell_type == "markdown" and first.id == HEADER_ID
            # one way to check: the last cell (no terminal command, no copying of cells)
            assert "作答说明" in first.source and "**最后一个单元格**" in first.source \
                or "最后一个单元格" in first.source and view == "exercises"
            assert "autograder check" not in first.source and "复制" not in first.source
            assert nbs.grade_id(nb.cells[-1]) == SELF_CHECK_ID
            assert "隐藏输入" in first.source or "随机生成的输入" in first.source
            assert "部分得分" in first.source
            text = "\n".join(c.source for c in nb.cells)
            assert "请勿编辑" not in text and "do not edit" not in text.lower()


def test_the_generated_notice_is_where_only_instructors_look():
    for view in VIEWS:
        for a, nb in _committed(view):
            assert nb.metadata["autograder"]["source"] == f"source/{a}/{a}.ipynb", (view, a)
    for a, nb in _committed("solutions"):
        assert f"source/{a}/{a}.ipynb" in nb.cells[0].source and "autograder build" in nb.cells[0].source


def test_exercises_fold_each_model_answer_under_its_written_cell():
    for a, nb in _committed("exercises"):
        for i, cell in enumerate(nb.cells):
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "markdown" and meta.get("grade") and meta.get("solution"):
                folded = nb.cells[i + 1]
                assert folded.source.startswith("<details>") and "参考答案" in folded.source, a
                assert "评分要点" in folded.source, a


@pytest.mark.e2e
def test_build_then_check_then_stale_after_a_one_character_edit(tmp_path):
    repo = mini_repo(tmp_path / "repo")
    for view in VIEWS:
        shutil.rmtree(repo / view, ignore_errors=True)
    shutil.rmtree(repo / "autograder")
    written = build(root=repo)
    assert sorted(str(p) for p in written) == sorted(
        [f"{v}/{A}/{A}.ipynb" for v in VIEWS] + [f"autograder/manifests/{A}.json"])
    assert (repo / "autograder" / "manifests" / f"{A}.json").read_text() == \
        (ROOT / "autograder" / "manifests" / f"{A}.json").read_text()
    for view in VIEWS:  # the fresh build matches the committed views
        fresh = read_nb(repo / view / A / f"{A}.ipynb")
        assert normalise(fresh) == normalise(read_nb(ROOT / view / A / f"{A}.ipynb")), view
    assert not list(repo.glob(".autograder-build-*")), "scratch folder left behind"

    # one character edited in a copy of the source notebook -> --check (run from a
    # subdirectory, through the CLI) names every stale file; that it passes on the
    # committed files is the README's own `autograder build --check`
    committed = mini_repo(tmp_path / "committed")
    runner = CliRunner()
    old = os.getcwd()
    os.chdir(committed / "docs")
    try:
        src = committed / "source" / A / f"{A}.ipynb"
        text = src.read_text(encoding="utf-8")
        src.write_text(text.replace("思考题 1", "思考题 I", 1), encoding="utf-8")
        result = runner.invoke(main, ["build", "--check"])
        assert result.exit_code == 1
        for view in VIEWS:
            assert f"{view}/{A}/{A}.ipynb" in result.stderr
        assert f"autograder/manifests/{A}.json" in result.stderr
    finally:
        os.chdir(old)
