"""``autograder export RESULTS --to canvas|moodle|csv``: the gradebook file an LMS imports.

RESULTS is the ``--out`` folder of ``autograder grade``: ``scores.json`` and, when a
Canvas or Moodle download was graded, ``lms.json`` with the students' names. Every
format carries the automatic total of each assignment under the LMS's own student id
(the written answers are graded by hand and are not in it). A submission that could not
be graded counts 0; one whose check broke (``grader-error``) or whose file the intake
refused (``refused``, see :mod:`autograder.integrations.lms.intake`) is left blank, so the import changes
nothing for it until it is graded.

- ``canvas``: Canvas's gradebook import: ``Student, ID, SIS User ID, SIS Login ID,
  Section``, then one column per assignment, headed by its Canvas title, best
  ``Title (assignment id)`` (``columns`` maps our assignment ids to those headers);
- ``moodle``: the assignment's offline grading worksheet (Moodle's "Upload grading
  worksheet"): ``Identifier`` (``Participant <id>``), ``Full name``, ``Grade``,
  ``Maximum Grade``, ``Last modified (grade)``; one assignment per file;
- ``csv``: ``student_id, name``, one column per assignment, ``total`` (blank while a
  check is broken; an assignment not submitted is blank and adds nothing).

Every text cell is spreadsheet-safe (:mod:`autograder.grading.spreadsheet`): a name a
student chose never starts a formula; scores stay numbers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ...errors import CourseError
from ...grading.spreadsheet import write_csv
from ...settings import ASSIGNMENTS, EXPORT_FORMATS, RowStatus

__all__ = ["FORMATS", "Gradebook", "load_gradebook", "export"]

FORMATS = EXPORT_FORMATS  # defined once, in settings
CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_HEADER = ["Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)"]


@dataclass
class Gradebook:
    """Totals per student and assignment; ``None``: no usable total (left blank)."""

    assignments: list[str]
    maxima: dict[str, float]
    names: dict[str, str]
    totals: dict[str, dict[str, float | None]] = field(default_factory=dict)
    blanks: list[str] = field(default_factory=list)
    graded_at: str = ""


#: Statuses whose total is left blank: a broken check, or a file the intake refused.
BLANK = (RowStatus.GRADER_ERROR, RowStatus.REFUSED)


def _total(row: dict) -> float | None:
    if row.get("status") in BLANK:
        return None
    return float(row.get("auto_score") or 0.0)


def load_gradebook(results: Path) -> Gradebook:
    """Read ``scores.json`` (and ``lms.json``) from an ``autograder grade`` output folder."""
    from .intake import read_roster

    path = Path(results) / "scores.json"
    if not path.is_file():
        raise CourseError(f"no scores.json in {results}: give the --out folder of "
                          "`autograder grade`")
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise CourseError(f"{path} is not valid JSON: grade the class again") from None
    roster = read_roster(results).get("students", {})
    order = {a: i for i, a in enumerate(ASSIGNMENTS)}
    book = Gradebook(sorted({r["assignment"] for r in rows}, key=lambda a: order.get(a, 99)),
                     {}, {})
    for r in rows:
        student, a = str(r["student"]), r["assignment"]
        book.names[student] = roster.get(student, {}).get("name") or student
        book.maxima[a] = max(book.maxima.get(a, 0.0), float(r.get("auto_max") or 0.0))
        book.totals.setdefault(student, {})[a] = _total(r)
        if book.totals[student][a] is None:
            book.blanks.append(f"{student}/{a}")
    stamp = datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc)
    book.graded_at = stamp.isoformat(timespec="seconds")
    return book


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def _students(book: Gradebook) -> list[str]:
    return sorted(book.totals, key=lambda s: (book.names[s].lower(), s))


def _numeric_ids(book: Gradebook, lms: str) -> None:
    odd = [s for s in book.totals if not s.isdigit()]
    if odd:
        raise CourseError(f"student {odd[0]!r} has no {lms} id (the class did not come from a "
                          f"{lms} download, or grading was anonymous): use --to csv")


def _canvas(book: Gradebook, columns: dict[str, str]) -> list[list[str]]:
    _numeric_ids(book, "Canvas")
    rows = [CANVAS_HEADER + [columns.get(a, a) for a in book.assignments]]
    for s in _students(book):
        scores = [_number(book.totals[s].get(a)) for a in book.assignments]
        rows.append([book.names[s], s, "", "", ""] + scores)
    return rows


def _moodle(book: Gradebook, assignment: str) -> list[list[str]]:
    _numeric_ids(book, "Moodle")
    rows = [list(MOODLE_HEADER)]
    for s in _students(book):
        if assignment in book.totals[s]:
            rows.append([f"Participant {s}", book.names[s],
                         _number(book.totals[s][assignment]),
                         _number(book.maxima[assignment]), book.graded_at])
    return rows


def _plain(book: Gradebook) -> list[list[str]]:
    rows = [["student_id", "name", *book.assignments, "total"]]
    for s in _students(book):
        scores = [book.totals[s].get(a) for a in book.assignments]
        broken = any(a in book.totals[s] and book.totals[s][a] is None for a in book.assignments)
        total = None if broken else sum(x for x in scores if x is not None)
        rows.append([s, book.names[s], *map(_number, scores), _number(total)])
    return rows


def _one_assignment(book: Gradebook, assignment: str | None) -> str:
    if assignment is not None:
        if assignment not in book.assignments:
            raise CourseError(f"{assignment} is not in these results (they hold "
                              f"{', '.join(book.assignments)})")
        return assignment
    if len(book.assignments) != 1:
        raise CourseError(f"these results hold {len(book.assignments)} assignments "
                          f"({', '.join(book.assignments)}): a Moodle worksheet holds one, "
                          "pass --assignment")
    return book.assignments[0]


def export(*, results: Path, to: str, out: Path, assignment: str | None = None,
           columns: dict[str, str] | None = None) -> Gradebook:
    """Write the ``to`` gradebook file for ``results`` to ``out``; returns what was read."""
    if to not in FORMATS:
        raise CourseError(f"unknown format {to!r}: choose one of {', '.join(FORMATS)}")
    book = load_gradebook(results)
    if assignment is not None and to != "moodle":
        book.assignments = [_one_assignment(book, assignment)]
    if to == "canvas":
        rows = _canvas(book, columns or {})
    elif to == "moodle":
        rows = _moodle(book, _one_assignment(book, assignment))
    else:
        rows = _plain(book)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_csv(out, rows)  # a name a student chose is never a live formula (OWASP)
    return book
