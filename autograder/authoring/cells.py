"""Notebook cells for authoring: the nbgrader metadata the "Create Assignment" toolbar writes.

:func:`md`, :func:`code`, :func:`solution`, :func:`tests` and :func:`written` make cells
with the metadata nbgrader's toolbar would give them, so source notebooks can be produced
by a script as well as by hand; :func:`read`, :func:`write`, :func:`grade_id` and
:func:`is_solution_cell` are the few notebook helpers everything else shares. The marker
grammar (solutions, hidden tests) is :mod:`autograder.engine.host.hidden`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from ..engine.host import hidden
from ..engine.host.hidden import SOLUTION_BEGIN, SOLUTION_END
from ..errors import CourseError, HiddenTestError

__all__ = ["md", "code", "solution", "tests", "written", "new_notebook", "read", "write",
           "grade_id", "is_solution_cell", "check_markers"]

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


def check_markers(nb: NotebookNode, where: str) -> None:
    """A one-line :class:`CourseError` naming ``where`` (the notebook) and the cell when a
    cell's solution or hidden-test markers break the one grammar
    (:mod:`autograder.engine.host.hidden`)."""
    for index, cell in enumerate(nb.cells, 1):
        try:
            hidden.check_markers(cell.source)
        except HiddenTestError as err:
            raise CourseError(f"{where}, cell {index} ({grade_id(cell) or cell.get('id', '?')}): "
                              f"{err}") from None
