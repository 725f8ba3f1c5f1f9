"""The scores table: ``scores.csv`` and ``scores.json``, one row per submission.

Columns: student, assignment, status, the automatic total and its maximum, the core's and
the graded extensions' totals apart, the reason and what to review, then one column per
grade cell in notebook order (``<assignment>/<cell>`` when the table holds several
assignments). ``scores.json`` holds the same rows with every field of
:class:`~.batch.Result`. Every text a student could influence is cut and made printable.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from ..engine.host.stop import printable
from ..settings import ASSIGNMENTS
from .batch import Result
from .spreadsheet import write_csv

__all__ = ["write_outputs"]


def _columns(results: list[Result]) -> list[tuple[str, str, str]]:
    """(column name, assignment, grade id) for every grade cell, in notebook order."""
    assignments = sorted({r.assignment for r in results}, key=_order)
    several = len(assignments) > 1
    cols, seen = [], set()
    for a in assignments:
        for r in results:
            if r.assignment != a:
                continue
            for cell in r.max_scores:
                if (a, cell) not in seen:
                    seen.add((a, cell))
                    cols.append((f"{a}/{cell}" if several else cell, a, cell))
    return cols


def _order(assignment: str) -> tuple[int, str]:
    return (ASSIGNMENTS.index(assignment) if assignment in ASSIGNMENTS else 99, assignment)


def _named(result: Result) -> str:
    """``grade_id: label, label; ...`` for the CSV (scores.json has the keys as well)."""
    return "; ".join(f"{cell}: {', '.join(m['label'] for m in found)}"
                     for cell, found in result.misconceptions.items())


def write_outputs(results: list[Result], out: Path) -> None:
    """``scores.csv`` and ``scores.json`` for ``results`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    cols = _columns(results)
    fixed = ["student", "assignment", "status", "auto_score", "auto_max", "core_score",
             "core_max", "extension_score", "extension_max", "reason", "review", "misconceptions",
             "protection"]
    table = [fixed + [name for name, _a, _c in cols]]
    for r in results:
        row = [printable(r.student), printable(r.assignment), r.status,
               float(r.auto_score), float(r.auto_max),
               *map(float, r.part_total(False)), *map(float, r.part_total(True)),
               printable(r.reason, 10_000), printable("; ".join(r.review), 10_000),
               printable(_named(r), 10_000), r.protection]
        for _name, a, cell in cols:
            value = r.cells.get(cell) if a == r.assignment else None
            row.append("" if value is None else float(value))
        table.append(row)
    write_csv(out / "scores.csv", table)  # a student's name is never a live formula
    rows = []
    for r in results:
        row = {k: printable(v, 10_000) if isinstance(v, str) else v for k, v in asdict(r).items()}
        row["review"] = [printable(x, 300) for x in r.review]
        row["cells"] = {c: (None if s is None else float(s)) for c, s in r.cells.items()}
        row["lost"] = r.lost
        rows.append(row)
    (out / "scores.json").write_text(json.dumps(rows, ensure_ascii=False, indent=2) + "\n",
                                     encoding="utf-8")
