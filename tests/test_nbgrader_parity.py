"""Plain nbgrader and the engine agree: one real nbgrader run covering every assignment.

``nbgrader generate_assignment`` builds the course, one ``nbgrader autograde "*"`` grades
a small class per assignment (the solution, the blank release, one named mistake) in
Jupyter kernels, and ``autograder grade`` grades the same notebooks in its sandbox with
the same salt: every cell's score must be the same. (The full sample class is compared
by ``benchmarks/grade_class.py``.)
"""

from __future__ import annotations

import pytest
from lecture import ASSIGNMENT_ORDER
from pipeline_helpers import ROOT

from autograder import notebooks as nbs
from autograder.course import nbgrader, new_course, read_scores
from autograder.engine.settings import GradeSettings
from autograder.grade import grade
from autograder.samples import PERFECT, mistakes

pytestmark = pytest.mark.e2e

PRESENT = [a for a in ASSIGNMENT_ORDER if (ROOT / "source" / a / f"{a}.ipynb").is_file()]
SALT = "parity"


def _class(assignment: str) -> dict:
    return {"perfect": PERFECT, "blank": None, "mistake": mistakes(assignment)[0]}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    course = new_course(tmp_path_factory.mktemp("parity"), ROOT, PRESENT)
    for a in PRESENT:
        source = nbs.read(ROOT / "source" / a / f"{a}.ipynb")
        release = nbs.read(course / "release" / a / f"{a}.ipynb")
        for student, variant in _class(a).items():
            nbs.write(nbs.make_submission(source, release, variant),
                      course / "submitted" / student / a / f"{a}.ipynb")
    done = nbgrader(["autograde", "*"], course, timeout=1200, env={"AUTOGRADER_SALT": SALT})
    assert done.returncode == 0, done.stderr[-3000:]
    plain = {(s, a): {c.cell: c.score for c in read_scores(course, a, s)}
             for a in PRESENT for s in _class(a)}
    ours = {(r.student, r.assignment): r for r in
            grade(submissions=course / "submitted", out=course / "engine",
                  settings=GradeSettings(salt=SALT))}
    return plain, ours


@pytest.mark.parametrize("assignment", PRESENT)
def test_every_cell_scores_as_under_plain_nbgrader(both, assignment):
    plain, ours = both
    for student in _class(assignment):
        mine = {c: s for c, s in ours[(student, assignment)].cells.items()}
        assert mine == plain[(student, assignment)], (student, assignment)
