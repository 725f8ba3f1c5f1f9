"""Plain nbgrader and the engine agree: one real nbgrader run covering every assignment.

A course with every source notebook and a gradebook made from the manifests, one named
mistake per assignment, one ``nbgrader autograde "*"`` in Jupyter kernels, and
``autograder grade`` on the same notebooks in its sandbox with the same salt: every
cell's score must be the same, passing and failing cells alike. (The full sample class
is compared by ``benchmarks/grade_class.py``.)
"""

from __future__ import annotations

import shutil

import pytest
from lecture import ASSIGNMENT_ORDER
from pipeline_helpers import ROOT, without_plots

from autograder.authoring import cells as nbs
from autograder.authoring.course import nbgrader, read_scores
from autograder.engine.host.gradebook import write_gradebook
from autograder.engine.host.manifest import load, release_notebook
from autograder.integrations.nbgrader.grade import grade
from autograder.samples import mistakes
from autograder.samples.submission import make_submission
from autograder.settings import GradeSettings

pytestmark = pytest.mark.e2e

PRESENT = ASSIGNMENT_ORDER  # every assignment: a missing notebook fails, never skips
SALT = "parity"


def _class(assignment: str) -> dict:
    return {"mistake": mistakes(assignment)[0]}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    course = tmp_path_factory.mktemp("parity")
    shutil.copy(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    write_gradebook(course / "gradebook.db", [], {a: load(a) for a in PRESENT})
    for a in PRESENT:
        shutil.copytree(ROOT / "source" / a, course / "source" / a)
        source = nbs.read(ROOT / "source" / a / f"{a}.ipynb")
        release = release_notebook(load(a))
        for student, variant in _class(a).items():
            nbs.write(without_plots(make_submission(source, release, variant)),
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
