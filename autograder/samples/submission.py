"""A sample student's notebook: the release, answered as a :class:`~.variants.Variant` says."""

from __future__ import annotations

import copy

from nbformat import NotebookNode

from ..authoring.cells import grade_id, is_solution_cell
from ..engine.host.hidden import strip_markers, strip_region
from .variants import Edit, Variant

__all__ = ["make_submission"]

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
            cell.source = strip_markers(strip_region(text))
    return sub
