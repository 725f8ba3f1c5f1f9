"""Scores into nbgrader's ``gradebook.db``, through nbgrader's own API.

nbgrader stays the system of record: after ``autograder grade`` the course's gradebook
holds each submission with the automatic score of every grade cell, exactly the rows
``nbgrader autograde`` would have written, so ``nbgrader formgrader`` (manual grading of
the written answers), ``generate_feedback`` and ``export`` work unchanged. When the
gradebook does not know the assignment yet, it is created from the manifest's copy of
the rows ``generate_assignment`` made. Everything is written in one transaction at the
end of the batch, by one process.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Iterable
from pathlib import Path

from ..course import CourseError
from .manifest import Manifest

__all__ = ["write_gradebook"]

log = logging.getLogger("autograder.engine")


def _ensure_assignment(gb, manifest: Manifest) -> None:
    from nbgrader.api import MissingEntry

    a = manifest.assignment
    rows = manifest.gradebook
    try:
        known = {c.name: float(c.max_score) for c in gb.find_notebook(a, a).grade_cells}
    except MissingEntry:
        known = None
    wanted = {c["name"]: float(c["max_score"]) for c in rows["grade_cells"]}
    if known is not None:
        if known != wanted:
            raise CourseError(f"the gradebook's {a} has other grade cells than this package's "
                              "(was it generated from another version?): regenerate the "
                              "assignment or grade into a new course folder")
        return
    log.info("gradebook: creating assignment %s from the manifest", a)
    gb.update_or_create_assignment(a)
    gb.update_or_create_notebook(a, a)
    for c in rows["grade_cells"]:
        gb.update_or_create_grade_cell(c["name"], a, a, max_score=c["max_score"],
                                       cell_type=c["cell_type"])
    for c in rows["solution_cells"]:
        gb.update_or_create_solution_cell(c["name"], a, a)
    for c in rows.get("task_cells", []):
        gb.update_or_create_task_cell(c["name"], a, a, max_score=c["max_score"],
                                      cell_type=c["cell_type"])
    for c in rows["source_cells"]:
        gb.update_or_create_source_cell(c["name"], a, a, cell_type=c["cell_type"],
                                        locked=c["locked"], source=c["source"],
                                        checksum=c["checksum"])


def write_gradebook(path: Path, graded: Iterable, manifests: dict[str, Manifest]) -> int:
    """Record every graded submission (``pool.Graded`` with a notebook) in ``path``.

    Returns the number of submissions written. Submissions that could not be run (a
    broken file) are not recorded, as ``nbgrader autograde`` records none.
    """
    from nbgrader.api import Gradebook

    graded = [g for g in graded if g.notebook is not None and not g.crashed]
    # a new gradebook asks the `alembic` command for its schema version: it must be on
    # PATH even when this interpreter's virtual environment was never activated
    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join([bindir, os.environ.get("PATH", "")])
    with Gradebook(f"sqlite:///{path}") as gb, warnings.catch_warnings():
        # nbgrader's add_submission builds rows before adding them: SQLAlchemy's
        # autoflush warnings about it are nbgrader's, and harmless
        warnings.simplefilter("ignore")
        for a in sorted({g.task.assignment for g in graded}):
            _ensure_assignment(gb, manifests[a])
        for g in graded:
            _record(gb, g, manifests[g.task.assignment])
        gb.db.commit()
    log.info("gradebook: %d submission(s) written to %s", len(graded), path)
    return len(graded)


def _record(gb, g, manifest: Manifest) -> None:
    a, student = g.task.assignment, g.task.student
    gb.update_or_create_student(student)
    timestamp = _timestamp(g.task.folder)
    gb.update_or_create_submission(a, student, **({"timestamp": timestamp} if timestamp else {}))
    for cell in g.cells:
        grade = gb.find_grade(cell.grade_id, a, a, student)
        grade.auto_score = cell.score
        grade.needs_manual_grade = grade.manual_score is not None or cell.score is None
    for name in (row["name"] for row in manifest.gradebook["solution_cells"]):
        comment = gb.find_comment(name, a, a, student)
        comment.auto_comment = "No response." if name in g.unanswered else None


def _timestamp(folder: Path) -> str | None:
    """nbgrader's ``timestamp.txt`` beside the notebook, when the submission has one."""
    stamp = folder / "timestamp.txt"
    if stamp.is_file() and not stamp.is_symlink():
        text = stamp.read_text(encoding="utf-8", errors="replace").strip()
        return text[:64] or None
    return None
