"""Hostile edges, third pass (issue 29): what a student's text, names and sizes do to the
class outside the sandbox. Each test failed before its fix (see the commit messages).

- exports: a name a student chose is never a live formula in any CSV the package writes,
  and the LMS still imports the file (its own column rules, read back here);
- pages: 1 MB of adversarial Markdown, LaTeX and HTML renders in seconds, plainly and
  saying so once the page's budget is spent;
- read-back: ``autograder feedback`` reads every autograded notebook grading wrote, and
  skips one it cannot read with a note, writing every other page.
"""

from __future__ import annotations

import csv
import html
import json
import re
import time
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from autograder.engine.host.feedback_page import (
    TOO_LARGE,
    TOO_LARGE_PAGE,
    Budget,
    markdown_html,
    render_feedback,
)
from autograder.grading.batch import Result
from autograder.grading.scores import write_outputs
from autograder.grading.spreadsheet import FORMULA_START
from autograder.integrations.lms.export import export
from autograder.settings import RowStatus

A = "q1_value_scaling"
#: Names a Moodle student may give themselves (issue 29's, and the other OWASP starts).
EVIL_NAMES = ["=1+1", "+WEBSERVICE(CONCAT(CHAR(104),CHAR(116)))", "@SUM(1+1)", "-2+3+cmd|' /C calc'!A0",
              "\t=1+1", "\r=1+1"]
_NUMBER = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")


def _rows(path: Path) -> list[list[str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh))


def _no_live_formula(rows: list[list[str]]) -> None:
    """What a spreadsheet would evaluate: a cell that starts a formula and is no number."""
    live = [c for row in rows for c in row if c.startswith(FORMULA_START) and not _NUMBER.match(c)]
    assert not live, live


def _score(cell: str) -> float | None:
    """An LMS's grade column: blank or a number (anything else fails the import)."""
    return None if cell == "" else float(cell)


@pytest.fixture
def evil_results(tmp_path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    ids = [str(100 + i) for i in range(len(EVIL_NAMES))]
    rows = [{"student": s, "assignment": A, "status": "ok", "auto_score": 12.5 - i,
             "auto_max": 17.0} for i, s in enumerate(ids)]
    (folder / "scores.json").write_text(json.dumps(rows), encoding="utf-8")
    roster = {"lms": "moodle", "students": {s: {"name": n} for s, n in zip(ids, EVIL_NAMES)}}
    (folder / "lms.json").write_text(json.dumps(roster), encoding="utf-8")
    return folder


def test_exports_carry_no_live_formula_and_the_lms_still_imports_them(evil_results, tmp_path):
    expected = {str(100 + i): 12.5 - i for i in range(len(EVIL_NAMES))}
    export(results=evil_results, to="canvas", out=tmp_path / "canvas.csv")
    canvas = _rows(tmp_path / "canvas.csv")
    _no_live_formula(canvas)
    head = canvas[0]  # Canvas: matched on ID (digits), the assignment column a number
    got = {r[head.index("ID")]: _score(r[5]) for r in canvas[1:]}
    assert got == expected
    assert sorted(r[0].lstrip("'") for r in canvas[1:]) == sorted(EVIL_NAMES)

    export(results=evil_results, to="moodle", out=tmp_path / "moodle.csv")
    moodle = _rows(tmp_path / "moodle.csv")
    _no_live_formula(moodle)
    head = moodle[0]  # Moodle: matched on "Participant <id>", Grade/Maximum Grade numbers
    got = {re.fullmatch(r"Participant (\d+)", r[0]).group(1): _score(r[head.index("Grade")])
           for r in moodle[1:]}
    assert got == expected and {_score(r[3]) for r in moodle[1:]} == {17.0}

    export(results=evil_results, to="csv", out=tmp_path / "plain.csv")
    plain = _rows(tmp_path / "plain.csv")
    _no_live_formula(plain)
    assert {r[0]: _score(r[2]) for r in plain[1:]} == expected


def test_scores_csv_carries_no_live_formula_and_keeps_negative_numbers(tmp_path):
    rows = [Result(student=name, assignment=A, status=RowStatus.OK, reason=f"-{name}",
                   auto_score=-1.5, auto_max=17.0, cells={"c": -1.5}, max_scores={"c": 17.0})
            for name in EVIL_NAMES]
    write_outputs(rows, tmp_path)
    table = _rows(tmp_path / "scores.csv")
    _no_live_formula(table)
    head = table[0]
    assert [float(r[head.index("auto_score")]) for r in table[1:]] == [-1.5] * len(EVIL_NAMES)
    assert [float(r[head.index("c")]) for r in table[1:]] == [-1.5] * len(EVIL_NAMES)
    assert all(r[0].startswith("'") for r in table[1:] if r[0][:1] in "=+-@")


# ------------------------------------------------------------------ pages

#: 1 MB of what made the old page quadratic, and of what each renderer finds hardest
#: (measured: mistune's links, latex2mathml's ``\text{<b>`` and many small formulas,
#: Pygments' brackets).
MB = 1 << 20
ADVERSARIAL = {
    "math placeholders": '<div class="math">$$' * (MB // 20),
    "markdown": "[a](" * (MB // 4),
    "latex": "$$" + "\\text{<b>" * (MB // 9) + "$$",
    "html": "<div><span>" * (MB // 11),
    "inline maths": "$x^2$ " * (MB // 6),  # one conversion each: 16 s before they cost
}


def _page_job(cells: list, outputs: list, code: str = "[" * MB) -> SimpleNamespace:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(text) for text in cells]
    nb.cells.append(nbformat.v4.new_code_cell(code, outputs=outputs))
    return SimpleNamespace(assignment=A, student="s1", cells={}, practice={}, comments={},
                           nb=nb, verdicts=set())


def test_a_page_of_adversarial_text_renders_in_seconds_and_says_it_is_plain():
    """Each 1 MB text as a written answer, as a ``text/markdown`` display and as a
    ``text/latex`` output, on one page: before the fix the first alone took ~10 minutes
    (the placeholder regex), and this test ran past a 300 s timeout."""
    outputs = [nbformat.v4.new_output("display_data", data={"text/markdown": text})
               for text in ADVERSARIAL.values()]
    outputs.append(nbformat.v4.new_output("display_data", data={"text/latex": ADVERSARIAL["latex"]}))
    pieces = [text[i:i + (40 << 10)] for i in range(0, MB, 40 << 10)  # rendered richly
              for text in ADVERSARIAL.values()]                         # until spent
    job = _page_job(pieces + list(ADVERSARIAL.values()), outputs)
    started = time.monotonic()
    page = render_feedback(job)
    assert time.monotonic() - started < 120  # ~2 s unloaded; the old page: > 10 min
    assert TOO_LARGE_PAGE in page and page.count(TOO_LARGE) >= len(ADVERSARIAL)
    assert "<script" not in page and 'class="math"' not in page
    assert html.escape(ADVERSARIAL["html"][:200]) in page  # shown as the text it is


def test_a_page_past_its_time_renders_the_rest_plainly():
    job = _page_job(["$x^2$ **bold**"], [], code="x = 1")
    page = render_feedback(job, Budget(seconds=-1))
    assert "<math" not in page and "<strong>" not in page and TOO_LARGE in page
    assert "<math" in render_feedback(job) and TOO_LARGE not in render_feedback(job)


def test_a_typed_math_placeholder_is_only_text():
    """The student's own ``<div class="math">$$…$$</div>`` is no longer read back as maths."""
    assert "<math" not in markdown_html('<div class="math">$$x^2$$</div>')
    assert "<math" in markdown_html("$$x^2$$")
