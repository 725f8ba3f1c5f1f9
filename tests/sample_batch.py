"""The sample class of every assignment, graded once per test session by the sandboxed
engine, for every module that grades sample students (``tests/conftest.py`` keeps those
modules on one xdist worker, so the class is graded once in the whole run).

Per assignment: the solution (with its figures, as a student's would be), the blank
release, the first alternative, the first named mistake (the one plain nbgrader also
grades, ``test_nbgrader_parity.py``) and the last one (``test_samples.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lecture import ASSIGNMENT_ORDER
from pipeline_helpers import ROOT, without_plots

from autograder.authoring import cells as nbs
from autograder.engine.host.manifest import load, release_notebook
from autograder.grading.batch import Result
from autograder.integrations.nbgrader.grade import grade
from autograder.samples import sample_class
from autograder.samples.submission import make_submission
from autograder.samples.variants import Variant
from autograder.settings import GradeSettings

PRESENT = ASSIGNMENT_ORDER  # every assignment: a missing notebook fails, never skips
SALT = "sample-class"
SETTINGS = GradeSettings(timeout=180, cell_timeout=60, salt=SALT)


@dataclass
class SampleBatch:
    """``course/submitted`` as graded into ``course/out``; ``classes[a]`` student ->
    variant (``None``: the blank release); ``rows[(student, a)]`` the engine's row."""

    course: Path
    classes: dict[str, dict[str, Variant | None]]
    rows: dict[tuple[str, str], Result]


def first_mistake(assignment: str) -> str:
    """The student id of the assignment's first named mistake."""
    return next(s for s in sample_class(assignment) if s.startswith("mistake-"))


def last_mistake(assignment: str) -> str:
    return [s for s in sample_class(assignment) if s.startswith("mistake-")][-1]


def chosen(assignment: str) -> list[str]:
    everyone = sample_class(assignment)
    alts = [s for s in everyone if s.startswith("alt-")][:1]
    return ["perfect", "blank", *alts, first_mistake(assignment), last_mistake(assignment)]


def grade_sample_batch(course: Path) -> SampleBatch:
    classes = {}
    for a in PRESENT:
        everyone = sample_class(a)
        source, release = nbs.read(ROOT / "source" / a / f"{a}.ipynb"), release_notebook(load(a))
        classes[a] = {s: everyone[s] for s in chosen(a)}
        for student, variant in classes[a].items():
            nb = make_submission(source, release, variant)
            if student != "perfect":  # the solution keeps its figures, as a student's would
                without_plots(nb)
            nbs.write(nb, course / "submitted" / student / a / f"{a}.ipynb")
    results = grade(submissions=course / "submitted", out=course / "out", settings=SETTINGS)
    return SampleBatch(course, classes, {(r.student, r.assignment): r for r in results})
