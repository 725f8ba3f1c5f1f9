"""Issue 29.2, through ``autograder grade``: a visible assert never decides a point.

q1's honest base (a hand slip in step 2, answers False and 1.5 typed in) loses the two
answer cells, whose consistency with the student's own hand steps is now checked in the
host. The same notebook plus a cell that wraps numpy.allclose/isclose, with numpy
imported as ``N`` so that its visible asserts pass, scores no more, and the review scan
flags it. (Before the fix it scored 2 points more and was not flagged.)"""

from __future__ import annotations

import copy
import json

import pytest
import warm_zygote
from pipeline_helpers import ROOT, without_plots

from autograder.authoring import cells as nbs
from autograder.engine.host.manifest import load, release_notebook
from autograder.integrations.nbgrader.grade import grade
from autograder.samples import mistakes
from autograder.samples.submission import make_submission
from autograder.settings import GradeSettings

pytestmark = pytest.mark.e2e
A = "q1_value_scaling"
SETTINGS = GradeSettings(timeout=60, cell_timeout=5, memory_mb=512, salt="bypass")
#: Appended to the answers' cell (its two test cells run next), undone in the next
#: solution cell: only the two consistency asserts see the wrapped functions.
WRAP = """
import numpy as N
_allclose, _isclose = N.allclose, N.isclose
N.allclose = lambda a, b, *r, **k: True
N.isclose = lambda a, b, *r, **k: True"""
UNWRAP = "N.allclose, N.isclose = _allclose, _isclose\n"


def test_wrapping_allclose_gains_nothing_and_is_flagged(tmp_path):
    honest = without_plots(make_submission(nbs.read(ROOT / "source" / A / f"{A}.ipynb"),
                                           release_notebook(load(A)),
                                           next(v for v in mistakes(A) if v.name == "hand_no_sqrt_dk")))
    tricked = copy.deepcopy(honest)
    cells = {nbs.grade_id(c): c for c in tricked.cells}
    cells["answers_impl"].source += WRAP
    cells["softmax_impl"].source = UNWRAP + cells["softmax_impl"].source
    for name, nb in (("honest", honest), ("bypass", tricked)):
        nbs.write(nb, tmp_path / "submitted" / name / A / f"{A}.ipynb")
    with warm_zygote.shared():
        grade(submissions=tmp_path / "submitted", out=tmp_path / "out", settings=SETTINGS, jobs=2)
    rows = {r["student"]: r for r in json.loads((tmp_path / "out" / "scores.json").read_text())}
    assert 0 < rows["honest"]["auto_score"] < rows["honest"]["auto_max"]
    assert rows["bypass"]["auto_score"] <= rows["honest"]["auto_score"], rows["bypass"]
    assert any("N.allclose" in r for r in rows["bypass"]["review"]), rows["bypass"]["review"]
    assert not rows["honest"]["review"]
