"""``autograder demo``: the whole pipeline on a sample class, in a temporary course.

For every assignment with a source notebook: a sample class (the source's own solution,
a blank submission, one student per named mistake and, on request, the correct
alternatives) built from the release, graded through ``autograder grade`` with a fixed
demo salt, and each student's lost cells compared with what its mistake must lose. The
repository is only read.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..authoring.build import present_assignments
from ..authoring.course import find_root, source_notebook
from ..engine.host.manifest import load
from ..errors import CourseError
from ..grading.batch import Result
from ..grading.report import write_report
from ..integrations.nbgrader.grade import grade
from ..settings import DEFAULTS, GradeSettings, RowStatus
from . import expected_losses, sample_class, write_class

__all__ = ["Expectation", "DemoResult", "demo"]


@dataclass
class Expectation:
    """What a sample student must score: the cells it loses and the labels its feedback names."""

    student: str
    assignment: str
    description: str
    loses: frozenset[str] | None  # None: every autograded cell (the blank submission)
    feedback: tuple[str, ...] = ()
    variant: object | None = None  # the sample student (None: the blank submission)


@dataclass
class DemoResult:
    folder: Path
    results: list[Result]
    expectations: dict[tuple[str, str], Expectation]
    report: Path | None = None  # the class report (results/report.html)

    def verdict(self, result: Result) -> bool:
        """The student lost exactly the expected cells and its feedback names its mistake."""
        exp = self.expectations[(result.student, result.assignment)]
        if result.status == RowStatus.FAILED:
            return False
        if (set(result.lost), result.failed_practice) != self._losses(exp):
            return False
        if exp.feedback and result.feedback:
            html = self._html(result)
            # a visible assert may quote a label in every student's page: the diagnosis
            # counts only if this page names it more often than the perfect student's
            perfect = next((r for r in self.results if r.student == "perfect"
                            and r.assignment == result.assignment and r.feedback), None)
            baseline = self._html(perfect) if perfect else ""
            return all(html.count(label) > baseline.count(label) for label in exp.feedback)
        return True

    def _losses(self, exp: Expectation) -> tuple[set[str], set[str]]:
        scored, practice = expected_losses(exp.variant, load(exp.assignment))
        return set(scored), set(practice)

    def _html(self, result: Result) -> str:
        return (self.folder / "results" / result.feedback).read_text(encoding="utf-8")

    def by_assignment(self) -> dict[str, list[Result]]:
        """The rows of each assignment: perfect, blank, the alternatives, the mistakes."""
        rank = {"perfect": 0, "blank": 1}
        found: dict[str, list[Result]] = {}
        for r in sorted(self.results, key=lambda r: (
                rank.get(r.student, 2 if r.student.startswith("alt-") else 3), r.student)):
            found.setdefault(r.assignment, []).append(r)
        return found

    @property
    def ok(self) -> bool:
        return all(self.verdict(r) for r in self.results)


#: The demo's salt: fixed, so every run draws the same hidden inputs.
DEMO_SALT = "autograder-demo"


def demo(*, folder: Path | None = None, alternatives: bool = False, jobs: int | None = None,
         timeout: float = DEFAULTS.timeout, root: Path | None = None,
         progress: Callable[[int, int, str], None] | None = None,
         on_step: Callable[[str], None] | None = None) -> DemoResult:
    """Build a course in ``folder`` (default: a new temporary folder), grade its sample class.

    The outputs (``results/scores.csv``, ``results/feedback/...``, the class report
    ``results/report.html``) stay in the folder.
    """
    say = on_step or (lambda _msg: None)
    root = find_root(root)
    assignments = present_assignments(root)
    if not assignments:
        raise CourseError(f"no source notebooks under {root / 'source'}: nothing to demonstrate")
    if folder is None:
        folder = Path(tempfile.mkdtemp(prefix="autograder-demo-"))
    folder = Path(folder).resolve()
    if folder == root or root in folder.parents:
        raise CourseError(f"{folder} is inside the repository: choose a folder outside it "
                          "(the demo leaves the repository untouched)")
    if folder.exists() and any(folder.iterdir()):
        raise CourseError(f"{folder} is not empty: give a new or empty folder for the demo")
    course = folder
    expectations: dict[tuple[str, str], Expectation] = {}
    for a in assignments:
        students = sample_class(a, with_alternatives=alternatives)
        write_class(course, source_notebook(root, a), a, students)
        for student, variant in students.items():
            if variant is None:
                expectations[(student, a)] = Expectation(student, a, "空白提交（未作答）", None)
            else:
                expectations[(student, a)] = Expectation(student, a, variant.description,
                                                         frozenset(variant.loses),
                                                         tuple(variant.feedback), variant)
    say(f"grading {len(expectations)} notebooks")
    results = grade(submissions=course / "submitted", out=course / "results", jobs=jobs,
                    # the package's own sample notebooks: harmless to run unprotected
                    settings=GradeSettings(timeout=timeout, salt=DEMO_SALT, allow_unprotected=True),
                    progress=progress)
    say("writing the class report")
    report = write_report(results=course / "results")
    return DemoResult(folder, results, expectations, report)
