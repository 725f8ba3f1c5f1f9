"""Sample students of every assignment, graded by the sandboxed engine in one batch.

What the course contract (ASSIGNMENTS.md) asks of each assignment, checked on the path
``autograder grade`` takes: the solution scores full marks, the blank release 0 without
crashing, a correct alternative full marks, named mistakes lose exactly their cells and
their feedback names the misconception, and nothing hidden reaches the feedback. Every
other sample student is graded in-process through the same wire format by the bank
tests (``tests/conftest.py``) and in full by ``benchmarks/grade_class.py``; plain
nbgrader's agreement is ``test_nbgrader_parity.py``.
"""

from __future__ import annotations

import json
import re

import pytest
from lecture import ASSIGNMENT_ORDER
from sample_batch import last_mistake

from autograder.authoring import cells as nbs
from autograder.bank import checks_for
from autograder.bank.lib.misconceptions import CATALOG
from autograder.engine.host.manifest import load
from autograder.grading.report import write_report
from autograder.samples import expected_losses
from autograder.samples import sample_class as full_class

pytestmark = pytest.mark.e2e

PRESENT = ASSIGNMENT_ORDER  # every assignment: a missing notebook fails, never skips


def sample_class(assignment: str) -> dict:
    """The solution, the blank release, the first alternative and the last mistake."""
    everyone = full_class(assignment)
    alts = [s for s in everyone if s.startswith("alt-")][:1]
    chosen = ["perfect", "blank", *alts, last_mistake(assignment)]
    return {s: everyone[s] for s in chosen}


@pytest.fixture(scope="module")
def graded(sample_batch):
    """The session's sample batch (``tests/sample_batch.py``): these students and the
    first mistake of each assignment, graded in one batch."""
    for a in PRESENT:
        assert set(sample_class(a)) <= set(sample_batch.classes[a])
    return sample_batch.course, sample_batch.classes, sample_batch.rows


def _params(kind: str):
    return [pytest.param(a, s, id=f"{a}-{s}") for a in PRESENT for s in sample_class(a)
            if s.startswith(kind)]


@pytest.mark.parametrize("assignment", PRESENT)
def test_at_least_ten_points_over_five_cells_and_a_written_answer(assignment):
    manifest = load(assignment)
    auto = [c for c in manifest.graded if not c.is_manual]
    assert len(auto) >= 5 and sum(c.points for c in auto) >= 10
    assert any(c.is_manual for c in manifest.graded)


@pytest.mark.parametrize("assignment", PRESENT)
def test_the_solution_scores_full_marks_and_the_blank_release_zero(graded, assignment):
    _course, _classes, rows = graded
    perfect, blank = rows[("perfect", assignment)], rows[("blank", assignment)]
    assert perfect.status == "ok" and perfect.lost == [], perfect.reason
    assert perfect.auto_score == perfect.auto_max
    assert blank.status in ("ok", "note") and blank.auto_score == 0.0


@pytest.mark.parametrize("assignment, student", _params("alt-"))
def test_each_alternative_scores_full_marks(graded, assignment, student):
    row = graded[2][(student, assignment)]
    assert row.lost == [] and row.status == "ok", row.reason


@pytest.mark.parametrize("assignment, student", _params("mistake-"))
def test_each_mistake_loses_exactly_its_cells_and_is_named(graded, assignment, student):
    course, classes, rows = graded
    row, variant = rows[(student, assignment)], classes[assignment][student]
    scored, practice = expected_losses(variant, load(assignment))
    assert (set(row.lost), row.failed_practice) == (set(scored), set(practice)), row.reason
    page = (course / "out" / row.feedback).read_text(encoding="utf-8")
    perfect = (course / "out" / rows[("perfect", assignment)].feedback).read_text(encoding="utf-8")
    for label in variant.feedback:
        assert page.count(label) > perfect.count(label), f"the feedback does not name {label}"


@pytest.mark.parametrize("assignment", PRESENT)
def test_no_feedback_page_shows_hidden_tests(graded, assignment):
    course, classes, rows = graded
    for student in classes[assignment]:
        page = (course / "out" / rows[(student, assignment)].feedback).read_text(encoding="utf-8")
        assert "BEGIN HIDDEN TESTS" not in page and "run_check" not in page


def test_the_misconceptions_a_page_names_are_in_scores_json(graded):
    """Every catalog label a mistake's page must name is in its scores.json row, under a
    cell it lost; the perfect students' rows name none."""
    course, classes, _rows = graded
    data = {(r["student"], r["assignment"]): r
            for r in json.loads((course / "out" / "scores.json").read_text(encoding="utf-8"))}
    for assignment in PRESENT:
        checks_for(assignment)  # the assignment's own misconceptions are registered
    labels, counted = {m.label: m.key for m in CATALOG.values()}, 0
    for (student, assignment), row in data.items():
        named = {(m["key"], m["label"]) for found in row["misconceptions"].values() for m in found}
        variant = classes[assignment][student]  # None: the blank release
        expected = {(labels[x], x) for x in getattr(variant, "feedback", ()) if x in labels}
        assert expected <= named, (student, assignment, row["misconceptions"])
        assert set(row["misconceptions"]) <= set(row["lost"]) | set(row["practice"])
        counted += len(expected)
        if student == "perfect":
            assert named == set()
    assert counted >= len(PRESENT), counted  # at least one mistake per assignment


def _section(page: str, assignment: str) -> str:
    return page[page.index(f'<section id="{assignment}">'):].split("</section>", 1)[0]


def test_the_class_report_agrees_with_scores_json(graded, tmp_path):
    """The real class's report: each cell's mean as the rows give it, and each
    misconception with the students and points it cost, counted here from the rows."""
    course, _classes, _rows = graded
    page = write_report(results=course / "out", out=tmp_path / "report.html")
    page = page.read_text(encoding="utf-8")
    data = json.loads((course / "out" / "scores.json").read_text(encoding="utf-8"))
    for assignment in PRESENT:
        section = _section(page, assignment)
        mine = [r for r in data if r["assignment"] == assignment and r["status"] != "failed"]
        for cell in (c for c in mine[0]["max_scores"] if c not in mine[0]["manual"]):
            scores = [r["cells"][cell] or 0.0 for r in mine if cell not in r["grader_errors"]]
            assert re.search(f'<tr data-cell="{cell}">.*?<td class="n mean">'
                             f"{sum(scores) / len(scores):.2f}</td>", section), cell
        cost: dict[str, list[float]] = {}
        for r in mine:
            lost: dict[str, float] = {}
            for cell, found in r["misconceptions"].items():
                short = r["max_scores"].get(cell, 0.0) - (r["cells"].get(cell) or 0.0)
                for m in found:
                    if cell not in r["grader_errors"] and short > 0:
                        lost[m["key"]] = lost.get(m["key"], 0.0) + short
            for key, points in lost.items():
                cost.setdefault(key, []).append(points)
        assert cost, assignment  # every assignment's class has a mistake that costs points
        for key, points in cost.items():
            assert re.search(f'<tr data-key="{key}"><td>[^<]*</td><td class="n students">'
                             f'{len(points)}</td><td class="n points">{sum(points):g}</td>',
                             section), (assignment, key)


def test_scores_json_has_a_row_per_notebook(graded):
    course, classes, _rows = graded
    data = json.loads((course / "out" / "scores.json").read_text(encoding="utf-8"))
    assert len(data) == sum(len(c) for c in classes.values())


@pytest.mark.parametrize("assignment", PRESENT)
def test_the_solution_runs_cleanly_in_the_sandbox(graded, assignment):
    """Nothing on stderr and no error: a figure the child draws finds its fonts, a
    tokenizer its table, as in a kernel."""
    course, _classes, _rows = graded
    nb = nbs.read(course / "autograded" / "perfect" / assignment / f"{assignment}.ipynb")
    outputs = [o for c in nb.cells for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert not [o.get("text") for o in outputs if o.get("name") == "stderr"]
    assert any("image/png" in o.get("data", {}) for o in outputs)
