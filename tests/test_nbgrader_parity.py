"""Plain nbgrader and the engine agree: one real nbgrader run covering every assignment.

A course with every source notebook and a gradebook made from the manifests, one named
mistake per assignment, one ``nbgrader autograde "*"`` in Jupyter kernels, and
``autograder grade`` on the same notebooks in its sandbox with the same salt (the
session's sample batch, ``tests/sample_batch.py``, which grades those very notebooks):
every cell's score must be the same, passing and failing cells alike. (The full sample
class is compared by ``benchmarks/grade_class.py``.)
"""

from __future__ import annotations

import shutil

import pytest
from pipeline_helpers import ROOT
from sample_batch import PRESENT, SALT, first_mistake

from autograder.authoring.course import nbgrader, read_scores
from autograder.engine.host.gradebook import write_gradebook
from autograder.engine.host.manifest import load

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def both(tmp_path_factory, sample_batch):
    course = tmp_path_factory.mktemp("parity")
    shutil.copy(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    write_gradebook(course / "gradebook.db", [], {a: load(a) for a in PRESENT})
    for a in PRESENT:
        shutil.copytree(ROOT / "source" / a, course / "source" / a)
        student = first_mistake(a)  # graded by the engine, plots dropped, in the batch
        shutil.copytree(sample_batch.course / "submitted" / student / a,
                        course / "submitted" / student / a)
    done = nbgrader(["autograde", "*"], course, timeout=1200, env={"AUTOGRADER_SALT": SALT})
    assert done.returncode == 0, done.stderr[-3000:]
    plain = {(first_mistake(a), a): {c.cell: c.score for c in read_scores(course, a, first_mistake(a))}
             for a in PRESENT}
    return plain, sample_batch.rows


@pytest.mark.parametrize("assignment", PRESENT)
def test_every_cell_scores_as_under_plain_nbgrader(both, assignment):
    plain, ours = both
    student = first_mistake(assignment)
    mine = {c: s for c, s in ours[(student, assignment)].cells.items()}
    assert plain[(student, assignment)], (student, assignment)  # nbgrader scored the cells
    assert mine == plain[(student, assignment)], (student, assignment)
