"""Notebook helpers: nbgrader cells for authoring, regions, and sample submissions.

The authoring helpers (:func:`md`, :func:`code`, :func:`solution`, :func:`tests`,
:func:`written`) write the nbgrader metadata that the "Create Assignment" toolbar
would write, so source notebooks can be produced by a script as well as by hand.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from .variants import Edit, Variant

__all__ = [
    "md", "code", "solution", "tests", "written", "new_notebook", "read", "write",
    "grade_id", "is_solution_cell", "strip_region", "strip_markers", "Edit", "Variant",
    "make_submission", "HIDDEN_BEGIN", "HIDDEN_END", "SOLUTION_BEGIN", "SOLUTION_END",
]

HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
SOLUTION_BEGIN, SOLUTION_END = "### BEGIN SOLUTION", "### END SOLUTION"
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}


def _nbgrader(cell_id: str, *, grade: bool, solution: bool, locked: bool,
              points: float | None = None) -> dict:
    meta = {"grade": grade, "grade_id": cell_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def _locked(cell: NotebookNode, cell_id: str) -> NotebookNode:
    """Mark ``cell`` read-only for students, as nbgrader's "Read-only" cell type does."""
    cell.metadata.nbgrader = _nbgrader(cell_id, grade=False, solution=False, locked=True)
    cell.metadata.editable = False
    cell.metadata.deletable = False
    return cell


def md(text: str, cell_id: str | None = None) -> NotebookNode:
    """A markdown cell; with ``cell_id`` it is locked (read-only) for students."""
    cell = nbformat.v4.new_markdown_cell(text.strip("\n"))
    return _locked(cell, cell_id) if cell_id else cell


def code(source: str, cell_id: str | None = None) -> NotebookNode:
    """A code cell; with ``cell_id`` it is locked (read-only) for students."""
    cell = nbformat.v4.new_code_cell(source.strip("\n"))
    return _locked(cell, cell_id) if cell_id else cell


def solution(cell_id: str, source: str) -> NotebookNode:
    """An autograded-answer cell: the part between solution markers is hidden from students."""
    if SOLUTION_BEGIN not in source:
        raise ValueError(f"solution cell {cell_id!r} has no {SOLUTION_BEGIN!r} region")
    cell = nbformat.v4.new_code_cell(source.strip("\n"))
    cell.metadata.nbgrader = _nbgrader(cell_id, grade=False, solution=True, locked=False)
    return cell


def tests(cell_id: str, points: float, source: str) -> NotebookNode:
    """An autograder-tests cell worth ``points``."""
    cell = nbformat.v4.new_code_cell(source.strip("\n"))
    cell.metadata.nbgrader = _nbgrader(cell_id, grade=True, solution=False, locked=True,
                                       points=float(points))
    cell.metadata.editable = False
    cell.metadata.deletable = False
    return cell


def written(cell_id: str, points: float, answer: str) -> NotebookNode:
    """A manually graded markdown answer; ``answer`` is the model answer (hidden in release)."""
    text = f"{SOLUTION_BEGIN}\n{answer.strip()}\n{SOLUTION_END}"
    cell = nbformat.v4.new_markdown_cell(text)
    cell.metadata.nbgrader = _nbgrader(cell_id, grade=True, solution=True, locked=False,
                                       points=float(points))
    return cell


def new_notebook(cells: Iterable[NotebookNode]) -> NotebookNode:
    """A notebook with the python3 kernelspec and the given cells."""
    nb = nbformat.v4.new_notebook(cells=list(cells))
    nb.metadata.kernelspec = dict(KERNELSPEC)
    nb.metadata.language_info = {"name": "python"}
    return nb


def read(path: str | Path) -> NotebookNode:
    return nbformat.read(str(path), as_version=4)


def write(nb: NotebookNode, path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


def grade_id(cell: NotebookNode) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def is_solution_cell(cell: NotebookNode) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution"))


def strip_region(source: str, begin: str, end: str) -> str:
    """Remove every ``begin``..``end`` region (marker lines included)."""
    pattern = re.compile(rf"^[ \t]*{re.escape(begin)}.*?^[ \t]*{re.escape(end)}[^\n]*\n?",
                         re.S | re.M)
    return pattern.sub("", source).rstrip("\n")


def strip_markers(source: str) -> str:
    """Keep the solution but drop the marker lines around it."""
    lines = [ln for ln in source.split("\n")
             if ln.strip() not in (SOLUTION_BEGIN, SOLUTION_END)]
    return "\n".join(lines)


# ------------------------------------------------------------------ sample submissions


def _apply(source: str, edit: Edit) -> str:
    count = source.count(edit.old)
    if count != 1:
        raise ValueError(f"edit for cell {edit.cell!r} must match exactly once, matched {count}: "
                         f"{edit.old!r}")
    return source.replace(edit.old, edit.new)


def make_submission(source_nb: NotebookNode, release_nb: NotebookNode,
                    variant: Variant | None) -> NotebookNode:
    """A student's notebook: ``release_nb`` with solution cells answered as ``variant`` says.

    ``variant=None`` is the blank submission (the release notebook untouched).
    """
    sub = copy.deepcopy(release_nb)
    if variant is None:
        return sub
    answers = {grade_id(c): c.source for c in source_nb.cells if is_solution_cell(c)}
    pending = {e.cell for e in variant.edits} - set(answers)
    if pending:
        raise ValueError(f"variant {variant.name!r} edits unknown solution cells {sorted(pending)}")
    for cell in sub.cells:
        cid = grade_id(cell)
        if cid in answers and is_solution_cell(cell):
            text = answers[cid]
            for edit in variant.edits:
                if edit.cell == cid:
                    text = _apply(text, edit)
            cell.source = strip_markers(strip_region(text, HIDDEN_BEGIN, HIDDEN_END))
    return sub
