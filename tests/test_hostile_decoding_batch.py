"""The host's decoding under attack through the real sandbox: one small batch.

q1's honest wrong answer (no 1/√d_k), then the same answer with one more cell at the top
that patches the child's own encoder or sender (``tests/hostile_decoding.py``), or swaps
every variable the manifest's checks read for a hostile stand-in after each cell. Each
row must score no more than the honest wrong answer, none may be a grader error, and
none may take much longer than the honest one (the host reads nothing slowly).
"""

from __future__ import annotations

import copy

import nbformat
import pytest
import warm_zygote
from hostile_decoding import child_tricks
from pipeline_helpers import ROOT, without_plots

from autograder.authoring import cells as nbs
from autograder.engine.host.manifest import load, release_notebook
from autograder.integrations.nbgrader.grade import grade
from autograder.samples import mistakes
from autograder.samples.submission import make_submission
from autograder.settings import GradeSettings

pytestmark = pytest.mark.e2e

A = "q1_value_scaling"
SETTINGS = GradeSettings(timeout=60, cell_timeout=10, memory_mb=512, salt="hostile-decoding")
#: Seconds a tricked row may take beyond the honest one (a Poly read in the host once
#: held a worker for minutes).
SLACK = 30.0

#: After every cell, each checked variable is replaced by a stand-in that behaves like it
#: in the child (visible asserts still pass) but crosses the wire as something hostile.
_BY_NAME = '''
import sys as _sys
import sympy as _sp
_NAMES = {names!r}

class _Liar(_sp.Expr):
    """Behaves like the honest value in the child; on the wire it says nan."""
    def __new__(cls, honest):
        obj = _sp.Expr.__new__(cls)
        obj._honest = honest
        return obj
    def _sympyrepr(self, printer):
        return "nan"
    def __float__(self):
        return float(self._honest)
    def _eval_evalf(self, prec):
        return self._honest.evalf(prec)

def _stand_in(value):
    if isinstance(value, _sp.MatrixBase):
        return value.applyfunc(_Liar)
    if isinstance(value, _sp.Expr):
        return _Liar(value)
    if isinstance(value, bool):
        return _sp.true if value else _sp.false
    if callable(value) and not getattr(value, "_stand_in", False):
        def lying(*args, _honest=value, **kwargs):
            _honest(*args, **kwargs)
            return 10**400
        lying._stand_in = True
        return lying
    return value

def _swap(result=None):
    ns = get_ipython().user_ns
    for name in _NAMES:
        if name in ns and not isinstance(ns[name], _Liar):
            ns[name] = _stand_in(ns[name])

get_ipython().events.register("post_run_cell", _swap)
'''


def _checked_names() -> list[str]:
    """Every variable the manifest's hidden checks read (not cell names: those change)."""
    return sorted({var for spec in load(A).cells if spec.is_test for call in spec.checks
                   for var in call.values.values()})


def _honest_wrong() -> nbformat.NotebookNode:
    source, release = nbs.read(ROOT / "source" / A / f"{A}.ipynb"), release_notebook(load(A))
    wrong = next(v for v in mistakes(A) if v.name == "no_sqrt_dk")
    return without_plots(make_submission(source, release, wrong))


def _tricks() -> dict[str, str]:
    names = _checked_names()
    return {**child_tricks(names), "stand_ins_by_name": _BY_NAME.replace("{names!r}",
                                                                        repr(names))}


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    course = tmp_path_factory.mktemp("hostile-decoding")
    base = _honest_wrong()
    nbs.write(base, course / "submitted" / "honest" / A / f"{A}.ipynb")
    for name, code in _tricks().items():
        nb = copy.deepcopy(base)
        nb.cells.insert(0, nbformat.v4.new_code_cell(code))
        nbs.write(nb, course / "submitted" / f"trick-{name}" / A / f"{A}.ipynb")
    with warm_zygote.shared():
        results = grade(submissions=course / "submitted", out=course / "out", settings=SETTINGS,
                        jobs=2)
    return {r.student: r for r in results}


def test_the_honest_wrong_answer_loses_points(batch):
    honest = batch["honest"]
    assert 0 < honest.auto_score < honest.auto_max and honest.status != "grader-error"


@pytest.mark.parametrize("trick", sorted(_tricks()))
def test_no_decoding_trick_scores_more_or_forges_a_grader_error(batch, trick):
    row, honest = batch[f"trick-{trick}"], batch["honest"]
    assert row.status != "grader-error", (row.reason, row.grader_errors)
    assert row.auto_score <= honest.auto_score, row.cells
    assert row.seconds <= honest.seconds + SLACK, (row.seconds, honest.seconds)


def test_the_tricks_reached_the_checks(batch):
    """Each trick lost the checked cells the honest wrong answer had right: the
    values really crossed the wire hostile (else this batch proves nothing)."""
    honest = batch["honest"]
    right = {c for c, s in honest.cells.items() if s and c not in honest.manual}
    for trick in _tricks():
        row = batch[f"trick-{trick}"]
        assert any(not row.cells.get(c) for c in right), trick
