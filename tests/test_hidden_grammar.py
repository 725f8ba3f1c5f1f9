"""One grammar for the marker regions, and verdicts the host marks as its own.

The build, the host and the pages read markers through :mod:`autograder.engine.host.hidden`
only: a marker with a comment after it still yields its checks, a marker the grammar
cannot read stops ``autograder build`` with one line naming the notebook and the cell.
A student's own ``class CheckFailed`` is the student's output, never mistaken for a
verdict: pages know the host's verdicts by identity, not by a name anyone can define.
"""

from __future__ import annotations

import copy

import nbformat
import pytest
from click.testing import CliRunner
from pipeline_helpers import ROOT, A, mini_repo

from autograder.authoring import cells as nbs
from autograder.authoring.build import build
from autograder.cli import main
from autograder.engine.host import execute, feedback_page, hidden
from autograder.engine.host.job import Job
from autograder.engine.host.manifest import load, release_notebook
from autograder.engine.host.outputs import verdict_output
from autograder.errors import CourseError
from autograder.settings import GradeSettings, Status

CELL = (
    "x = 1\n"
    "### BEGIN HIDDEN TESTS (q1: the scaled scores)\n"
    "from autograder.bank.runner import run_check\n"
    'run_check("q1.softmax", softmax=softmax)\n'
    "### END HIDDEN TESTS\n"
)


def test_a_marker_with_a_comment_after_it_still_yields_its_checks():
    """What nbgrader hides (every line containing the marker) is what the host parses."""
    assert [c.name for c in hidden.check_calls(CELL)] == ["q1.softmax"]
    assert hidden.strip_region(CELL) == "x = 1"
    assert "run_check" not in hidden.shown(CELL)


@pytest.mark.parametrize("broken, words", [
    ("x = 1  ### BEGIN HIDDEN TESTS\n### END HIDDEN TESTS", "text before"),
    ("### BEGIN HIDDEN TESTS\nrun_check('q1.softmax')", "no '### END HIDDEN TESTS'"),
    ("### END HIDDEN TESTS", "without"),
    ("### BEGIN HIDDEN TESTS\n### BEGIN HIDDEN TESTS\n### END HIDDEN TESTS", "inside a region"),
])
def test_a_marker_the_grammar_cannot_read_names_the_notebook_and_cell(broken, words):
    nb = nbs.read(ROOT / "source" / A / f"{A}.ipynb")
    index = next(i for i, c in enumerate(nb.cells) if hidden.HIDDEN_BEGIN in c.source)
    nb.cells[index].source = broken
    with pytest.raises(CourseError) as err:
        nbs.check_markers(nb, f"source/{A}/{A}.ipynb")
    message = str(err.value)
    assert "\n" not in message and words in message
    assert message.startswith(f"source/{A}/{A}.ipynb, cell {index + 1} ({nbs.grade_id(nb.cells[index])})")


@pytest.mark.e2e
def test_autograder_build_stops_on_such_a_marker_and_writes_nothing(tmp_path, monkeypatch):
    repo = mini_repo(tmp_path / "repo")
    path = repo / "source" / A / f"{A}.ipynb"
    nb = nbs.read(path)
    cell = next(c for c in nb.cells if hidden.HIDDEN_BEGIN in c.source)
    cell.source = cell.source.replace(hidden.HIDDEN_BEGIN, "pass  " + hidden.HIDDEN_BEGIN, 1)
    nbs.write(nb, path)
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file()}
    with pytest.raises(CourseError, match="text before"):
        build(root=repo)
    monkeypatch.chdir(repo)
    result = CliRunner().invoke(main, ["build"])
    assert result.exit_code != 0 and nbs.grade_id(cell) in result.output
    after = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file()}
    assert after == before


def _page_with_spoof() -> tuple[str, str]:
    """A q1 page where the student's own code raised its own ``CheckFailed`` in a solution
    cell, and the host failed one test cell: the page and the host's message."""
    manifest = load(A)
    job = Job("mallory", A, ROOT, manifest, GradeSettings())
    job.nb = copy.deepcopy(release_notebook(manifest))
    solution = next(c for c in job.nb.cells if nbs.is_solution_cell(c) and c.cell_type == "code")
    solution.outputs = [nbformat.v4.new_output(
        "error", ename="CheckFailed", evalue="学生自己定义的错误", traceback=["学生自己定义的错误"])]
    spec = next(s for s in manifest.graded if not s.is_manual)
    test_cell = next(c for c in job.nb.cells if nbs.grade_id(c) == spec.grade_id)
    test_cell.outputs = []
    result = job.cells[spec.grade_id]
    result.status, result.score, result.messages = Status.FAILED, 0.0, ["主机的判定"]
    execute._verdict(job, test_cell, verdict_output("CheckFailed", "主机的判定", Status.FAILED))
    return feedback_page.render_feedback(job), "主机的判定"


def test_a_student_s_own_check_failed_is_shown_as_their_output():
    page, verdict = _page_with_spoof()
    assert "学生自己定义的错误" in page
    assert page.count(verdict) == 1  # the host's verdict once, as a verdict, not again as output


def test_the_page_would_hide_it_if_verdicts_were_known_by_name(monkeypatch):
    """The test above fails for the old rule (outputs dropped by ``ename``)."""
    real = feedback_page._output
    monkeypatch.setattr(feedback_page, "_output",
                        lambda out, budget: "" if out.get("ename") == "CheckFailed"
                        else real(out, budget))
    page, _ = _page_with_spoof()
    assert "学生自己定义的错误" not in page
