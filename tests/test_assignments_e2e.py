"""Every assignment through the real nbgrader: generate_assignment, autograde, feedback.

One temporary course per assignment holds a sample class: the source's own solution,
the blank release, each correct alternative and each named mistake. What the course
contract (shared/ASSIGNMENTS.md) asks of every assignment is asserted here.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder import notebooks as nbs
from autograder.course import ASSIGNMENTS, CellScore, nbgrader, new_course, read_scores
from autograder.samples import sample_class, write_class

ROOT = Path(__file__).resolve().parent.parent
PRESENT = [a for a in ASSIGNMENTS if (ROOT / "source" / a / f"{a}.ipynb").is_file()]

pytestmark = pytest.mark.e2e


@dataclass
class Graded:
    course: Path
    assignment: str
    students: dict
    scores: dict[str, list[CellScore]]

    def auto(self, student: str) -> list[CellScore]:
        return [c for c in self.scores[student] if not c.manual]

    def lost(self, student: str) -> set[str]:
        return {c.cell for c in self.auto(student) if (c.score or 0) < c.max_score}

    def failure_text(self, student: str) -> str:
        """What the graded cells *printed* (errors and streams): not their source code,
        which may quote a label in a visible assert whatever actually went wrong."""
        path = self.course / "autograded" / student / self.assignment / f"{self.assignment}.ipynb"
        texts = []
        for cell in nbs.read(path).cells:
            for out in cell.get("outputs", []):
                texts += [out.get("evalue", ""), out.get("text", ""), *out.get("traceback", [])]
        return "\n".join(texts)

    def feedback(self, student: str) -> str:
        path = self.course / "feedback" / student / self.assignment / f"{self.assignment}.html"
        return path.read_text(encoding="utf-8")


def _run(args: list[str], course: Path) -> None:
    done = nbgrader(args, course, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]


_CACHE: dict[str, Graded] = {}


@pytest.fixture(scope="module")
def graded(request, tmp_path_factory) -> Graded:
    """The graded sample class of ``request.param``, built once per assignment."""
    assignment = request.param
    if assignment not in _CACHE:
        _CACHE[assignment] = _grade_class(assignment, tmp_path_factory)
    return _CACHE[assignment]


def _grade_class(assignment: str, tmp_path_factory) -> Graded:
    course = new_course(tmp_path_factory.mktemp(assignment), ROOT, [assignment])
    students = sample_class(assignment)
    write_class(course, ROOT / "source" / assignment / f"{assignment}.ipynb", assignment, students)
    _run(["autograde", assignment], course)
    _run(["generate_feedback", assignment], course)
    scores = {s: read_scores(course, assignment, s) for s in students}
    return Graded(course, assignment, students, scores)


def _students(kind: str) -> list:
    return [pytest.param(a, s, id=f"{a}-{s}") for a in PRESENT for s in sample_class(a)
            if s.startswith(kind)]


each_assignment = pytest.mark.parametrize("graded", PRESENT, indirect=True)


@each_assignment
def test_release_has_at_least_ten_points_over_five_cells_and_a_written_answer(graded):
    auto = graded.auto("perfect")
    assert len(auto) >= 5 and sum(c.max_score for c in auto) >= 10
    assert any(c.manual for c in graded.scores["perfect"])


@each_assignment
def test_source_solution_scores_full_automatic_marks(graded):
    assert graded.lost("perfect") == set()
    assert all(isinstance(c.score, float) for c in graded.auto("perfect"))


@each_assignment
def test_blank_release_scores_zero_without_crashing(graded):
    auto = graded.auto("blank")
    assert auto and sum(c.score or 0 for c in auto) == 0


@pytest.mark.parametrize("graded, student", _students("alt-"), indirect=["graded"])
def test_alternative_scores_full_marks(graded, student):
    assert graded.lost(student) == set()


@pytest.mark.parametrize("graded, student", _students("mistake-"), indirect=["graded"])
def test_mistake_loses_exactly_its_cells(graded, student):
    assert graded.lost(student) == set(graded.students[student].loses)


@pytest.mark.parametrize("graded, student", _students("mistake-"), indirect=["graded"])
def test_mistake_feedback_names_the_misconception(graded, student):
    printed = graded.failure_text(student)
    path = graded.course / "autograded" / student / graded.assignment / f"{graded.assignment}.ipynb"
    quoted = "\n".join(cell.source for cell in nbs.read(path).cells)
    html = graded.feedback(student)
    for label in graded.students[student].feedback:
        assert label in printed
        assert html.count(label) > quoted.count(label), "the diagnosis must reach the feedback"


@each_assignment
def test_feedback_never_shows_hidden_tests(graded):
    for student in graded.students:
        html = graded.feedback(student)
        assert "BEGIN HIDDEN TESTS" not in html and "run_check" not in html


@each_assignment
def test_release_contains_no_solution_or_hidden_tests(graded):
    release = nbs.read(graded.course / "release" / graded.assignment / f"{graded.assignment}.ipynb")
    text = "\n".join(cell.source for cell in release.cells)
    for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "run_check", "autograder.reference"):
        assert marker not in text


@each_assignment
def test_regrading_the_same_submission_gives_the_same_scores(graded):
    again = graded.course.parent / f"{graded.course.name}-again"
    shutil.copytree(graded.course, again)
    shutil.rmtree(again / "autograded")
    students = ["perfect", next(s for s in graded.students if s.startswith("mistake-"))]
    for student in students:
        _run(["autograde", graded.assignment, "--student", student], again)
        assert read_scores(again, graded.assignment, student) == graded.scores[student]
