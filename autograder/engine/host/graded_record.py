"""The host's record of a graded submission, kept in its autograded notebook.

A feedback page can be rendered again later (after hand grading, by
:mod:`autograder.integrations.nbgrader.feedback`) without running the student's code
again: :func:`stamp` writes, into the autograded notebook's metadata under :data:`KEY`,
what the page needs that the notebook itself does not say: each cell's status, score
and messages, the misconceptions, the answers left blank, and *which outputs are the
host's verdicts*, by position. So the rule of :mod:`.feedback_page` stays the same when
the page is rendered again: verdicts are the outputs the host marked, never outputs
recognised by their name.

Only the host writes :data:`KEY`: :class:`~.prepare.ClearSubmittedOutputs` drops every
notebook metadata key a submission brings but the kernel, the language and the build's
note, and :func:`stamp` runs after the pipeline. :func:`restore` still reads the record
as hostile data (types checked, unknown cells and statuses ignored, sizes bounded): it
never gives a cell a title, a maximum or a part (those come from the manifest), and the
notebook's outputs pass :func:`~.outputs.clean_outputs` again, as the child's did.

What grading writes is always readable back (:func:`written`, :func:`read_back`): strings
are written whole, never one list entry per line (nbformat's default made 48 MB of
newline-only Markdown a 239 MB file), so the file is at most the submission (within
``MAX_NOTEBOOK_BYTES``) plus the output budget and the record; and it is read back with
room for the test cells grading put back (a 2000-cell submission without its tests
becomes a 2017-cell notebook).
"""

from __future__ import annotations

import nbformat
from nbformat import NotebookNode

from ...settings import MAX_NOTEBOOK_BYTES, Status
from .job import CellResult, Job
from .manifest import Manifest
from .outputs import clean_outputs
from .screening import MAX_CELLS, read_notebook
from .stop import Stop

__all__ = ["KEY", "VERSION", "stamp", "restore", "RecordMissing", "written", "read_back",
           "MAX_AUTOGRADED"]

#: The notebook metadata key of the record (never one a submission's metadata keeps).
KEY = "autograder_graded"
VERSION = 1
#: Messages kept per cell, and characters per message, when the record is read.
_MAX_MESSAGES, _MAX_TEXT = 50, 20_000


#: Largest autograded notebook read back: a submission within MAX_NOTEBOOK_BYTES, its
#: outputs within the output budget (16 MB), and the record (:func:`written` keeps it so).
MAX_AUTOGRADED = 2 * MAX_NOTEBOOK_BYTES


class RecordMissing(ValueError):
    """The autograded notebook has no usable record (graded before records existed)."""


def _cell(result: CellResult) -> dict:
    return {"status": str(result.status), "score": result.score,
            "messages": list(result.messages),
            "misconceptions": [list(m) for m in result.misconceptions]}


def stamp(job: Job) -> None:
    """Write the host's record into ``job.nb`` (once the pipeline is done)."""
    verdicts = [[i, j] for i, cell in enumerate(job.nb.cells)
                for j, out in enumerate(cell.get("outputs", [])) if id(out) in job.verdicts]
    job.nb.metadata[KEY] = {
        "version": VERSION,
        "cells": {gid: _cell(r) for gid, r in {**job.cells, **job.practice}.items()},
        "unanswered": sorted(job.unanswered),
        "verdicts": verdicts,
        "protection": job.protection,
    }


def written(nb: NotebookNode) -> str:
    """The autograded notebook's file: nbformat's JSON with every string whole (no
    larger than the strings the submission brought, escaped as they came).

    The bytes ``nbformat.writes`` gives, without its schema validation, which only logs
    (the submission was validated when it was read, and every output was built by
    ``nbformat.v4.new_output``, which validates it): 0.3 % of a class's grading."""
    version, _ = nbformat.reader.get_version(nb)
    return nbformat.versions[version].writes_json(nb, split_lines=False)


def read_back(raw: bytes, manifest: Manifest) -> NotebookNode:
    """The notebook :func:`written` wrote (read as hostile data all the same), within
    the bounds of what grading writes; :class:`Stop` when it is not such a file."""
    if len(raw) > MAX_AUTOGRADED:
        raise Stop(f"超过 {MAX_AUTOGRADED >> 20} MB", f"larger than {MAX_AUTOGRADED >> 20} MB")
    return read_notebook(raw, max_cells=MAX_CELLS + len(manifest.cells))[0]


def _text(value: object) -> str | None:
    return value[:_MAX_TEXT] if isinstance(value, str) else None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if value == value and abs(value) != float("inf") else None


def _apply(result: CellResult, raw: object) -> None:
    if not isinstance(raw, dict):
        return
    try:
        result.status = Status(raw.get("status"))
    except ValueError:
        result.status = Status.NOT_RUN
    result.score = _number(raw.get("score"))
    messages = raw.get("messages") if isinstance(raw.get("messages"), list) else []
    result.messages = [t for t in map(_text, messages[:_MAX_MESSAGES]) if t is not None]
    found = raw.get("misconceptions") if isinstance(raw.get("misconceptions"), list) else []
    result.misconceptions = [(m[0][:200], m[1][:200]) for m in found[:_MAX_MESSAGES]
                             if isinstance(m, list) and len(m) == 2
                             and all(isinstance(x, str) for x in m)]


def _verdicts(nb: NotebookNode, raw: object) -> set[int]:
    """The outputs the record names as the host's verdicts (by identity, as in a Job)."""
    marked = set()
    for item in raw if isinstance(raw, list) else []:
        if not (isinstance(item, list) and len(item) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) for x in item)):
            continue
        i, j = item
        if 0 <= i < len(nb.cells):
            outputs = nb.cells[i].get("outputs") or []
            if 0 <= j < len(outputs):
                marked.add(id(outputs[j]))
    return marked


def restore(job: Job, nb: NotebookNode) -> Job:
    """``job`` (fresh from the manifest) with the autograded notebook ``nb`` and the
    results its record holds; :class:`RecordMissing` when it holds none."""
    record = nb.get("metadata", {}).get(KEY)
    if not isinstance(record, dict) or record.get("version") != VERSION:
        raise RecordMissing(f"no {KEY} record of version {VERSION}")
    for cell in nb.cells:  # the file's outputs pass the child's filter again
        if cell.cell_type == "code":
            cell.outputs = clean_outputs(cell.get("outputs"))
    job.nb = nb
    cells = record.get("cells") if isinstance(record.get("cells"), dict) else {}
    for gid, result in {**job.cells, **job.practice}.items():
        _apply(result, cells.get(gid))
    unanswered = record.get("unanswered") if isinstance(record.get("unanswered"), list) else []
    job.unanswered = {gid for gid in unanswered if isinstance(gid, str) and gid in job.cells}
    for result in job.cells.values():
        result.blank = result.manual and result.grade_id in job.unanswered
    job.verdicts = _verdicts(nb, record.get("verdicts"))
    job.protection = _text(record.get("protection")) or ""
    return job
