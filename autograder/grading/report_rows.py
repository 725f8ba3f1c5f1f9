"""The class report's input: ``scores.json`` (and the due dates) read strictly.

``scores.json`` is hostile: a student chose their name, their notebook chose what the
reasons quote, and anyone could have edited the file. It is bounded in bytes, rows and
cells per row; every field is type-checked, cut and made printable; and a file that is
not what ``autograder grade`` writes is one :class:`~autograder.errors.CourseError`
naming the row and the field. Nothing here counts or draws (:mod:`.report_stats`,
:mod:`.report_charts`, :mod:`.report`).
"""

from __future__ import annotations

import json
import math
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from ..engine.host.files import read_at_most
from ..engine.host.stop import printable
from ..errors import CourseError
from ..settings import RowStatus

__all__ = ["Row", "Due", "read_rows", "parse_due", "due_dates", "MAX_BYTES", "MAX_ROWS"]

#: Bytes of ``scores.json`` read (10 000 rows of five assignments are a few MB).
MAX_BYTES = 256 << 20
MAX_ROWS = 100_000
#: Grade cells (and practice cells, and misconceptions per cell) per row.
MAX_CELLS = 200
#: Characters of a student's or an assignment's name, and of a reason.
MAX_NAME, MAX_REASON = 200, 2000

_AGAIN = "regenerate it with `autograder grade` (RESULTS is its --out folder)"


@dataclass(frozen=True)
class Row:
    """One submission's row, every field checked."""

    student: str
    assignment: str
    status: str
    reason: str
    auto_score: float
    auto_max: float
    cells: dict[str, float | None]
    max_scores: dict[str, float]
    manual: frozenset[str]
    grader_errors: frozenset[str]
    parts: dict[str, tuple[float, float]]  # part -> (score, max)
    practice: dict[str, str]  # practice grade id -> status
    misconceptions: dict[str, tuple[tuple[str, str], ...]]  # grade id -> ((key, label), ...)
    review: tuple[str, ...]
    feedback: str | None  # relative to RESULTS, checked to be a plain path below it
    timestamp: datetime | None  # naive UTC
    timed_out: bool
    protection: str = ""  # what walled its code off (``none (unprotected)``: nothing)

    @property
    def graded(self) -> bool:
        """Its code ran and its checks were counted (a grader error included)."""
        return self.status in (RowStatus.OK, RowStatus.NOTE, RowStatus.GRADER_ERROR)

    @property
    def complete(self) -> bool:
        """Graded with every check counted: its total is final."""
        return self.status in (RowStatus.OK, RowStatus.NOTE) and not self.grader_errors

    def lost(self, cell: str) -> float:
        """Points this row lost in an autograded ``cell`` (0 for a grader error)."""
        if cell in self.manual or cell in self.grader_errors or cell not in self.max_scores:
            return 0.0
        return max(0.0, self.max_scores[cell] - (self.cells.get(cell) or 0.0))


@dataclass(frozen=True)
class Due:
    """An assignment's due date (naive UTC) and where it came from."""

    when: datetime
    source: str


class _Bad(Exception):
    """A field that is not what ``autograder grade`` writes (message: which, and why)."""


def _text(value, field: str, limit: int = MAX_NAME) -> str:
    if not isinstance(value, str):
        raise _Bad(f"'{field}' must be a string")
    return printable(value, limit)


def _number(value, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _Bad(f"'{field}' must be a finite number")
    return float(value)


def _mapping(value, field: str) -> dict:
    if not isinstance(value, dict) or len(value) > MAX_CELLS:
        raise _Bad(f"'{field}' must be an object of at most {MAX_CELLS} entries")
    return {printable(k, MAX_NAME): v for k, v in value.items()}


def _names(value, field: str) -> frozenset[str]:
    if not isinstance(value, list) or len(value) > MAX_CELLS:
        raise _Bad(f"'{field}' must be a list of at most {MAX_CELLS} strings")
    return frozenset(_text(v, field) for v in value)


def _misconceptions(value) -> dict[str, tuple[tuple[str, str], ...]]:
    found = {}
    for cell, named in _mapping(value, "misconceptions").items():
        if not isinstance(named, list) or len(named) > MAX_CELLS or \
                not all(isinstance(m, dict) for m in named):
            raise _Bad("'misconceptions' must map grade ids to lists of {key, label}")
        found[cell] = tuple((_text(m.get("key"), "misconceptions key"),
                             _text(m.get("label"), "misconceptions label", 300)) for m in named)
    return found


def _parts(value) -> dict[str, tuple[float, float]]:
    parts = {}
    for part, p in _mapping(value, "parts").items():
        if not isinstance(p, dict):
            raise _Bad("'parts' must map parts to {score, max}")
        parts[part] = (_number(p.get("score"), "parts score"), _number(p.get("max"), "parts max"))
    return parts


def _feedback(value) -> str | None:
    """A plain relative path without ``..`` (anything else is no link, not an error)."""
    if value is None:
        return None
    path = PurePosixPath(_text(value, "feedback", 1000))
    if path.is_absolute() or ".." in path.parts or "\\" in str(path) or ":" in str(path):
        return None
    return str(path)


def _timestamp(value) -> datetime | None:
    """ISO, as the grader writes it; anything else is unknown, not an error."""
    if not isinstance(value, str):
        return None
    try:
        return _utc(datetime.fromisoformat(value[:64]))
    except ValueError:
        return None


def _utc(when: datetime) -> datetime:
    """Naive UTC (a naive date is taken as UTC, as nbgrader stores them)."""
    return when.astimezone(timezone.utc).replace(tzinfo=None) if when.tzinfo else when


def _row(data) -> Row:
    if not isinstance(data, dict):
        raise _Bad("a row must be an object")
    cells = {c: None if s is None else _number(s, f"cells.{c}")
             for c, s in _mapping(data.get("cells", {}), "cells").items()}
    review = data.get("review", [])
    if not isinstance(review, list):
        raise _Bad("'review' must be a list of strings")
    return Row(
        student=_text(data.get("student"), "student"),
        assignment=_text(data.get("assignment"), "assignment"),
        status=_text(data.get("status"), "status", 40),
        reason=_text(data.get("reason", ""), "reason", MAX_REASON),
        auto_score=_number(data.get("auto_score"), "auto_score"),
        auto_max=_number(data.get("auto_max"), "auto_max"),
        cells=cells,
        max_scores={c: _number(m, f"max_scores.{c}")
                    for c, m in _mapping(data.get("max_scores", {}), "max_scores").items()},
        manual=_names(data.get("manual", []), "manual"),
        grader_errors=_names(data.get("grader_errors", []), "grader_errors"),
        parts=_parts(data.get("parts", {})),
        practice={c: _text(s, f"practice.{c}", 40)
                  for c, s in _mapping(data.get("practice", {}), "practice").items()},
        misconceptions=_misconceptions(data.get("misconceptions", {})),
        review=tuple(_text(r, "review", 300) for r in review[:20]),
        feedback=_feedback(data.get("feedback")),
        timestamp=_timestamp(data.get("timestamp")),
        timed_out=data.get("timed_out") is True,
        protection=_text(data.get("protection", ""), "protection", 40))


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def read_rows(path: Path) -> list[Row]:
    """The rows of ``path`` (a ``scores.json``), or a one-line :class:`CourseError`."""
    path = Path(path)
    try:
        raw = read_at_most(path, MAX_BYTES)
    except OSError as err:
        raise CourseError(f"cannot read {path} ({err.strerror or err}): give the --out "
                          "folder of `autograder grade`, which holds scores.json") from None
    if len(raw) > MAX_BYTES:
        raise CourseError(f"{path} is over {MAX_BYTES >> 20} MB: not a scores.json of "
                          f"`autograder grade`; {_AGAIN}")
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError) as err:
        where = f"line {err.lineno}" if isinstance(err, json.JSONDecodeError) else "its values"
        raise CourseError(f"{path} is not valid JSON ({where}): {_AGAIN}") from None
    if not isinstance(data, list) or len(data) > MAX_ROWS:
        raise CourseError(f"{path} must be a list of at most {MAX_ROWS} rows: {_AGAIN}")
    rows = []
    for i, item in enumerate(data):
        try:
            rows.append(_row(item))
        except _Bad as err:
            raise CourseError(f"{path}: row {i + 1}: {err}; {_AGAIN}") from None
    return rows


def _date(text: str, what: str) -> datetime:
    text = text.strip()
    if text[-1:] in ("Z", "z"):  # Python 3.10's fromisoformat knows only "+00:00"
        text = text[:-1] + "+00:00"
    try:
        return _utc(datetime.fromisoformat(text))
    except ValueError:
        raise CourseError(f"{what} {text!r} is not a date: write it as ISO 8601, e.g. "
                          "2026-12-01T23:59+08:00 (no zone: UTC)") from None


def parse_due(values: tuple[str, ...] | list[str]) -> dict[str | None, datetime]:
    """``--due`` values: ``DATE`` (every assignment) or ``ASSIGNMENT=DATE``."""
    due: dict[str | None, datetime] = {}
    for value in values:
        assignment, sep, when = value.rpartition("=")
        due[assignment.strip() if sep else None] = _date(when, "--due")
    return due


def due_dates(*, assignments: list[str], due: dict[str | None, datetime],
              gradebook: Path | None) -> dict[str, Due]:
    """Each assignment's due date: ``--due ASSIGNMENT=DATE``, else ``--due DATE``, else
    nbgrader's ``gradebook.db`` (its ``duedate``), else none."""
    books = _gradebook_dates(gradebook) if gradebook is not None else {}
    found = {}
    for a in assignments:
        if a in due:
            found[a] = Due(due[a], f"--due {a}=…")
        elif None in due:
            found[a] = Due(due[None], "--due")
        elif a in books:
            found[a] = Due(books[a], f"gradebook.db ({gradebook})")
    return found


def _gradebook_dates(path: Path) -> dict[str, datetime]:
    """nbgrader's due dates, read-only; an unreadable gradebook gives none (the report
    then says no due date is known)."""
    if not Path(path).is_file():
        return {}
    try:
        with closing(sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro",
                                     uri=True)) as db:
            rows = db.execute("SELECT name, duedate FROM assignment "
                              "WHERE duedate IS NOT NULL LIMIT 1000").fetchall()
    except sqlite3.Error:
        return {}
    dates = {}
    for name, when in rows:
        stamp = _timestamp(when) if isinstance(name, str) else None
        if stamp is not None:
            dates[name] = stamp
    return dates
