"""One submission through a declared, ordered list of small steps, as nbgrader's converters.

:data:`PIPELINE` is the list; each step takes the :class:`Job` and either changes it or
raises :class:`Stop` with the reason the submission cannot be graded further. Every
step logs what it did. The steps, in order:

1. :class:`FindNotebook`: the notebook in the submission folder (by name, or the only one);
2. :class:`ReadNotebook`: valid JSON and nbformat, within size, depth and cell-count
   limits, not a symlink; fields of the wrong type dropped (:mod:`.screening`);
3. :class:`.screening.ReadTimestamp`: nbgrader's ``timestamp.txt``, or a note;
4. :class:`RestoreMetadata`: nbgrader metadata a student stripped or changed comes back
   (cells matched to the manifest by grade id, cell id or identical released text);
5. :class:`PutBackTests`: deleted test cells are put back where they belong;
6. :class:`OverwriteLocked`: locked cells get the manifest's text (hidden tests included),
   as ``nbgrader autograde``'s ``OverwriteCells`` does;
7. :class:`ClearSubmittedOutputs`: every output, execution count, attachment and
   non-nbgrader metadata the submission brought is dropped (a cell that never runs shows
   nothing, and nothing the student pre-baked reaches a browser);
8. :class:`CollectFiles`: data files beside the notebook (no symlinks, bounded);
9. :class:`Execute`: a sandboxed child runs every code cell in order (test cells without
   their hidden regions); after each test cell the host runs its checks on the child's
   values, seeded by (salt, student, check); outputs keep safe types only, within one
   budget per notebook (:class:`~.outputs.OutputBudget`);
10. :class:`Score`: a test cell earns its points iff its visible part raised nothing and
   every check passed; a broken check leaves it ungraded and flags the row;
11. :class:`.screening.Review`: the review scan of the student's code.

A step marked ``optional`` (the timestamp, the review) that fails on a bug of ours is
logged and skipped with a note: it never costs the submission its scores.
"""

from __future__ import annotations

import hashlib
import logging
import time

from nbformat import NotebookNode

from ...settings import Status
from .execute import Execute
from .job import Job
from .job import nbgrader_meta as _meta
from .prepare import (
    ClearSubmittedOutputs,
    CollectFiles,
    FindNotebook,
    OverwriteLocked,
    PutBackTests,
    ReadNotebook,
    RestoreMetadata,
)
from .screening import ReadTimestamp, Review
from .stop import Stop

__all__ = ["PIPELINE", "run", "compute_checksum", "Score"]

log = logging.getLogger("autograder.engine")


def compute_checksum(cell: NotebookNode) -> str:
    """nbgrader's cell checksum (``nbgrader.utils.compute_checksum``), without importing
    nbgrader, whose package import costs seconds in every worker."""
    meta = _meta(cell)
    digest = hashlib.md5()
    grade, solution = meta.get("grade", False), meta.get("solution", False)
    locked = False if solution else (True if grade else meta.get("locked", False))
    parts = [cell.source, cell.cell_type, str(grade), str(solution), str(locked), meta["grade_id"]]
    if meta.get("grade"):
        parts.append(str(float(meta["points"])))
    for part in parts:
        digest.update(part.encode("utf-8"))
    return digest.hexdigest()


class Score:
    """Points per graded cell from the host's own records (never from the outputs).

    An answer left exactly as released scores 0 ("No response."), as nbgrader decides it
    by the cell's checksum; so does a written answer the student emptied (nothing to
    grade by hand). Either is *blank*, shown one way on every page: "没有作答", 0 points.
    Any other written answer waits for manual grading.
    """

    name = "score"

    def __call__(self, job: Job) -> None:
        for cell in job.nb.cells if job.nb is not None else []:
            meta = _meta(cell)
            if meta.get("solution") and (meta.get("checksum") == compute_checksum(cell) or (
                    meta.get("grade") and cell.cell_type == "markdown" and not cell.source.strip())):
                job.unanswered.add(meta["grade_id"])
        for result in job.cells.values():
            if result.manual:
                result.blank = result.grade_id in job.unanswered
                result.status, result.score = Status.MANUAL, (0.0 if result.blank else None)
            elif result.status == Status.PASSED:
                result.score = result.max_score
            elif result.status == Status.ERROR:
                result.score = None
            else:
                result.score = 0.0
                if result.status == Status.NOT_RUN and not result.messages:
                    result.messages.append("未运行。")
        for result in job.practice.values():  # reported, never scored
            if result.status == Status.NOT_RUN and not result.messages:
                result.messages.append("未运行。")


PIPELINE: tuple = (FindNotebook(), ReadNotebook(), ReadTimestamp(),
                   RestoreMetadata(), PutBackTests(), OverwriteLocked(),
                   ClearSubmittedOutputs(), CollectFiles(), Execute(), Score(), Review())


def run(job: Job, steps: tuple = PIPELINE) -> Job:
    """Put ``job`` through ``steps``; a :class:`Stop` ends it with its note (nothing
    scored); an ``optional`` step that fails is skipped with a note."""
    started = time.monotonic()
    for step in steps:
        log.debug("%s/%s: %s", job.student, job.assignment, step.name)
        try:
            step(job)
        except Stop as stop:
            job.notes.append(stop.note)
            job.stopped = True
            log.info("%s/%s: stopped at %s: %s", job.student, job.assignment, step.name,
                     stop.note.en)
            break
        except Exception as err:
            if not getattr(step, "optional", False):
                raise
            log.exception("%s/%s: step %s failed", job.student, job.assignment, step.name)
            job.note(f"评分程序的“{step.name}”步骤出错，已跳过（详见 grading.log）",
                     f"the grader's step {step.name!r} failed and was skipped "
                     f"({type(err).__name__}; see grading.log)")
    job.seconds = round(time.monotonic() - started, 3)
    return job
