"""An assignment's cells in ``gradebook.db`` made to agree with the package's manifest.

``autograder grade`` scores the cells of the installed manifest, and the gradebook must
hold those cells for the scores to be written. It may know the assignment otherwise:
the instructor's own ``nbgrader generate_assignment`` saves the cells of the release it
made, perhaps under another extension setting, an older ``nbgrader_config.py`` or an
edited source. Before a batch is written, :func:`agree` makes the gradebook's rows the
manifest's, as ``generate_assignment`` itself would, and never drops what a person
entered:

- no notebook yet: it is made from the manifest's rows;
- other rows, no submission recorded: the notebook is replaced (what nbgrader's
  ``generate_assignment`` does itself);
- other rows, submissions recorded: missing cells are added, with an empty grade and
  comment for each submission (as nbgrader's ``add_submission`` makes them), changed
  ones updated, and cells the package does not have removed with their automatic
  scores. A cell holding a hand grade, extra credit or comment is never removed:
  :class:`CourseError` names those cells and the one action that brings them back.

:func:`plan` says, without writing, what :func:`agree` would do.
"""

from __future__ import annotations

import json
import logging

from ...errors import CourseError
from .manifest import Manifest

__all__ = ["agree", "plan", "AGREES", "CREATE", "REPLACE", "MERGE"]

log = logging.getLogger("autograder.engine")

AGREES, CREATE, REPLACE, MERGE = "agrees", "create", "replace", "merge"
#: The rows nbgrader keeps per cell kind, and the fields compared.
_FIELDS = {"grade_cells": ("max_score", "cell_type"), "solution_cells": (),
           "task_cells": ("max_score", "cell_type"),
           "source_cells": ("cell_type", "locked", "source", "checksum")}
_GRADED_KINDS = ("grade_cells", "solution_cells", "task_cells")


def _known(notebook) -> dict[str, dict[str, tuple]]:
    return {kind: {c.name: tuple(getattr(c, f) for f in fields)
                   for c in getattr(notebook, kind)} for kind, fields in _FIELDS.items()}


def _wanted(manifest: Manifest) -> dict[str, dict[str, tuple]]:
    rows = manifest.gradebook
    return {kind: {r["name"]: tuple(r[f] for f in fields) for r in rows.get(kind, [])}
            for kind, fields in _FIELDS.items()}


def _entered(cell) -> bool:
    """Whether a person entered something on ``cell`` for any submission (nbgrader gives
    a grade cell no comments and a solution cell no grades: ``None``)."""
    return any(g.manual_score is not None or g.extra_credit is not None
               for g in cell.grades or []) \
        or any((c.manual_comment or "").strip() for c in cell.comments or [])


def _stale(notebook, wanted: dict) -> list:
    """The notebook's graded, solution and task cells the manifest does not have."""
    return [cell for kind in _GRADED_KINDS for cell in getattr(notebook, kind)
            if cell.name not in wanted[kind]]


def _decide(gb, manifest: Manifest) -> tuple[str, object]:
    """(what :func:`agree` does, the gradebook's notebook or ``None``); raises the
    refusal when only dropping what a person entered would make them agree."""
    from nbgrader.api import MissingEntry

    a = manifest.assignment
    try:
        notebook = gb.find_notebook(a, a)
    except MissingEntry:
        return CREATE, None
    wanted = _wanted(manifest)
    if _known(notebook) == wanted:
        return AGREES, notebook
    if not notebook.submissions:
        return REPLACE, notebook
    entered = sorted({cell.name for cell in _stale(notebook, wanted) if _entered(cell)})
    if entered:
        raise CourseError(
            f"gradebook.db holds hand grades or comments on {a}'s cells {', '.join(entered)}, "
            "which this release does not have, and grading would delete them: set "
            "c.Autograder.extensions in nbgrader_config.py back to the setting they were "
            "graded under and run `autograder build`")
    return MERGE, notebook


def plan(gb, manifest: Manifest) -> str:
    """What :func:`agree` would do (:data:`AGREES`, :data:`CREATE`, :data:`REPLACE` or
    :data:`MERGE`), or the :class:`CourseError` it would raise; nothing is written."""
    return _decide(gb, manifest)[0]


def agree(gb, manifest: Manifest) -> str:
    """Make ``gb``'s rows of the manifest's assignment the manifest's; returns what was
    done (see :func:`plan`)."""
    action, notebook = _decide(gb, manifest)
    a = manifest.assignment
    if action == AGREES:
        return action
    if action == REPLACE:
        log.info("gradebook: %s's cells replaced by the package's (no submission yet)", a)
        gb.remove_notebook(a, a)
    if action == MERGE:
        log.info("gradebook: %s's cells brought into agreement with the package's", a)
        _remove_stale(gb, notebook, _wanted(manifest))
    _write_rows(gb, manifest)
    if action == MERGE:
        _fill_submissions(gb, gb.find_notebook(a, a))
    return action


def _remove_stale(gb, notebook, wanted: dict) -> None:
    """Cells the manifest does not have, with their grades and comments (automatic ones
    only: :func:`_decide` refused otherwise)."""
    for cell in _stale(notebook, wanted):
        for row in [*(cell.grades or []), *(cell.comments or [])]:
            gb.db.delete(row)
        gb.db.delete(cell)
    for cell in notebook.source_cells:
        if cell.name not in wanted["source_cells"]:
            gb.db.delete(cell)
    gb.db.flush()
    gb.db.expire_all()


def _write_rows(gb, manifest: Manifest) -> None:
    """The manifest's rows, made or updated through nbgrader's API (what
    ``generate_assignment`` saved when the package built the release)."""
    a, rows = manifest.assignment, manifest.gradebook
    gb.update_or_create_assignment(a)
    # the release's kernel, which nbgrader autograde gives every submission it runs
    kernelspec = manifest.notebook_metadata.get("kernelspec", {})
    gb.update_or_create_notebook(a, a, kernelspec=json.dumps(kernelspec))
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


def _fill_submissions(gb, notebook) -> None:
    """Each recorded submission gets an empty grade and comment for every cell it lacks,
    as nbgrader's ``add_submission`` gives a new one."""
    from nbgrader.api import Comment, Grade

    for submitted in notebook.submissions:
        graded = {g.cell_id for g in submitted.grades}
        commented = {c.cell_id for c in submitted.comments}
        for cell in [*notebook.grade_cells, *notebook.task_cells]:
            if cell.id not in graded:
                gb.db.add(Grade(cell_id=cell.id, notebook=submitted))
        for cell in [*notebook.solution_cells, *notebook.task_cells]:
            if cell.id not in commented:
                gb.db.add(Comment(cell_id=cell.id, notebook=submitted))
    gb.db.commit()
