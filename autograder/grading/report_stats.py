"""The class report's numbers, counted from the checked rows of :mod:`.report_rows`.

Per assignment: the totals of the rows whose every check counted (a grader error's total
is not final: it is left out and counted apart), the core's and the graded extensions'
totals apart when an extension was graded, per grade cell the mean, the share at full
marks and the share of grader errors, per practice cell the share that passed, and per
misconception the students it cost points, the points (of the cells it was named in
that the student lost) and the practice cells it was named in. Across assignments: the
submissions that were late, broken, timed out, flagged or hit a grader error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..engine.host.manifest import load
from ..errors import ManifestError
from ..settings import ASSIGNMENTS, RowStatus, Status
from .report_rows import MAX_CELLS, Due, Row

__all__ = ["CellStats", "PracticeStats", "Misconception", "AssignmentStats", "Concerns",
           "assignment_stats", "concerns"]


@dataclass
class CellStats:
    grade_id: str
    title: str
    points: float
    graded: int = 0  # rows whose code ran
    errors: int = 0  # of those, the cell's check broke
    total: float = 0.0  # points of the rows scored
    full: int = 0  # rows at full marks

    @property
    def scored(self) -> int:
        return self.graded - self.errors

    @property
    def mean(self) -> float | None:
        return self.total / self.scored if self.scored else None

    @property
    def full_share(self) -> float | None:
        return self.full / self.scored if self.scored else None

    @property
    def error_share(self) -> float | None:
        return self.errors / self.graded if self.graded else None


@dataclass
class PracticeStats:
    grade_id: str
    title: str
    checked: int = 0
    passed: int = 0

    @property
    def share(self) -> float | None:
        return self.passed / self.checked if self.checked else None


@dataclass
class Misconception:
    key: str
    label: str
    cost: list[Row] = field(default_factory=list)  # rows it cost points
    points: float = 0.0
    practice: list[Row] = field(default_factory=list)  # rows naming it in a practice cell


@dataclass
class AssignmentStats:
    assignment: str
    rows: int
    graded: int
    totals: list[float]
    auto_max: float
    incomplete: int  # graded rows left out of the totals (a grader error)
    parts: dict[str, tuple[list[float], float]]  # "core", "extension" -> (totals, max)
    cells: list[CellStats]
    practice: list[PracticeStats]
    misconceptions: list[Misconception]


def _titles(assignment: str) -> dict[str, str]:
    """grade id -> title, from the installed manifest (none for an unknown assignment)."""
    try:
        return {c.grade_id: c.title for c in load(assignment).cells if c.grade_id}
    except ManifestError:
        return {}


def _cells(rows: list[Row], titles: dict[str, str]) -> list[CellStats]:
    stats: dict[str, CellStats] = {}
    for r in rows:
        for cell, points in r.max_scores.items():
            if cell in r.manual or (cell not in stats and len(stats) >= MAX_CELLS):
                continue
            s = stats.setdefault(cell, CellStats(cell, titles.get(cell, cell), points))
            if not r.graded:
                continue
            s.graded += 1
            if cell in r.grader_errors:
                s.errors += 1
                continue
            score = r.cells.get(cell) or 0.0
            s.total += score
            s.full += score >= points
    return list(stats.values())


def _practice(rows: list[Row], titles: dict[str, str]) -> list[PracticeStats]:
    stats: dict[str, PracticeStats] = {}
    for r in rows:
        for cell, status in r.practice.items():
            if cell not in stats and len(stats) >= MAX_CELLS:
                continue
            s = stats.setdefault(cell, PracticeStats(cell, titles.get(cell, cell)))
            s.checked += 1
            s.passed += status == Status.PASSED
    return list(stats.values())


def _misconceptions(rows: list[Row]) -> list[Misconception]:
    found: dict[str, Misconception] = {}
    for r in rows:
        cost: dict[str, float] = {}
        practiced: set[str] = set()
        for cell, named in r.misconceptions.items():
            for key, label in named:
                if key not in found and len(found) >= MAX_CELLS:
                    continue
                found.setdefault(key, Misconception(key, label))
                if cell in r.practice:
                    practiced.add(key)
                elif r.lost(cell) > 0:
                    cost[key] = cost.get(key, 0.0) + r.lost(cell)
        for key, points in cost.items():
            found[key].cost.append(r)
            found[key].points += points
        for key in practiced:
            found[key].practice.append(r)
    return sorted(found.values(), key=lambda m: (-m.points, -len(m.cost), -len(m.practice),
                                                  m.key))


def _parts(rows: list[Row]) -> dict[str, tuple[list[float], float]]:
    """Core and extension totals apart, when some extension was graded (has points)."""
    if not any(p != "core" and m > 0 for r in rows for p, (_s, m) in r.parts.items()):
        return {}
    core = [sum(s for p, (s, _m) in r.parts.items() if p == "core") for r in rows]
    ext = [sum(s for p, (s, _m) in r.parts.items() if p != "core") for r in rows]
    top = {name: max((sum(m for p, (_s, m) in r.parts.items() if (p != "core") == is_ext)
                      for r in rows), default=0.0)
           for name, is_ext in (("core", False), ("extension", True))}
    return {"core": (core, top["core"]), "extension": (ext, top["extension"])}


def assignment_stats(rows: list[Row]) -> list[AssignmentStats]:
    """One entry per assignment of the course that has rows, in the lecture's order
    (rows of another assignment are listed as broken by :func:`concerns`)."""
    found = []
    for a in ASSIGNMENTS:
        mine = [r for r in rows if r.assignment == a]
        if not mine:
            continue
        titles = _titles(a)
        complete = [r for r in mine if r.complete]
        found.append(AssignmentStats(
            assignment=a, rows=len(mine), graded=sum(r.graded for r in mine),
            totals=[r.auto_score for r in complete],
            auto_max=max((r.auto_max for r in mine), default=0.0),
            incomplete=sum(r.graded and not r.complete for r in mine),
            parts=_parts(complete), cells=_cells(mine, titles),
            practice=_practice(mine, titles), misconceptions=_misconceptions(mine)))
    return found


@dataclass
class Concerns:
    """Submissions to look at, each list in the rows' order."""

    late: list[tuple[Row, Due]]
    undated: list[Row]  # a due date is known but the row has no timestamp
    no_due: list[str]  # assignments with no due date known
    broken: list[Row]
    timed_out: list[Row]
    flagged: list[Row]
    grader_errors: list[Row]


def concerns(rows: list[Row], due: dict[str, Due]) -> Concerns:
    late, undated = [], []
    for r in rows:
        d = due.get(r.assignment)
        if d is not None and r.timestamp is None:
            undated.append(r)
        elif d is not None and r.timestamp > d.when:
            late.append((r, d))
    known = [a for a in ASSIGNMENTS if any(r.assignment == a for r in rows)]
    return Concerns(
        late=late, undated=undated, no_due=[a for a in known if a not in due],
        broken=[r for r in rows if not r.graded],  # failed, refused (or a status unknown)
        timed_out=[r for r in rows if r.timed_out],
        flagged=[r for r in rows if r.review],
        grader_errors=[r for r in rows if r.status == RowStatus.GRADER_ERROR
                       or r.grader_errors])
