"""The batch, wherever it runs: submissions in, one scores-table row per submission out.

:func:`grade_submissions` hands the submissions to the engine's worker pool
(:func:`autograder.engine.host.pool.grade_tasks`: each submission's code in a sandboxed
child, every check in the grader) and turns each engine record into a :class:`Result`
row: status, reason, automatic total, one score per grade cell. A broken, looping or
hostile submission gets its own row with the reason; a bug in a check marks the row
``grader-error`` (traceback in the log) instead of scoring 0.

No single submission stops the batch: every step the parent takes per submission (its
record as it arrives, its row, the caller's own steps) runs through a
:class:`~.guard.Guard`, so a step that fails costs that submission its row's status
(``grader-error``) and a reason, and the others go on. A file the LMS intake refused
(:mod:`autograder.integrations.lms.intake`) has a ``refused`` row: not graded.

Where the results go (nbgrader's ``autograded/`` and ``gradebook.db``, Gradescope's
``results.json``) is each integration's business (:mod:`autograder.integrations`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from ..engine.host.manifest import load
from ..engine.host.pool import Submission, grade_tasks
from ..engine.host.stop import TIMEOUT, printable
from ..settings import ASSIGNMENTS, GradeSettings, RowStatus, Status
from .guard import Guard, Key, Remark

__all__ = ["Result", "grade_submissions", "Progress"]

log = logging.getLogger("autograder")

Progress = Callable[[int, int, str], None]


@dataclass
class Result:
    """The grade of one submission; ``cells`` maps grade id -> score (None: not graded)."""

    student: str
    assignment: str
    status: RowStatus = RowStatus.FAILED
    reason: str = ""
    auto_score: float = 0.0
    auto_max: float = 0.0
    cells: dict[str, float | None] = field(default_factory=dict)
    max_scores: dict[str, float] = field(default_factory=dict)
    manual: list[str] = field(default_factory=list)
    feedback: str | None = None
    seconds: float = 0.0
    #: Student code that tries to reach the grader (harmless in the sandbox; for review).
    review: list[str] = field(default_factory=list)
    #: Grade cells whose check broke (the instructor's to look at; see grading.log).
    grader_errors: list[str] = field(default_factory=list)
    #: Automatic points and their maximum per part: ``core`` and each graded 拓展 section.
    parts: dict[str, dict[str, float]] = field(default_factory=dict)
    #: Test cells of practice 拓展 sections: grade id -> status (checked, never scored).
    practice: dict[str, Status] = field(default_factory=dict)
    #: grade id -> the misconceptions its failed checks named ({"key", "label"} each),
    #: practice cells included: what the class report counts.
    misconceptions: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    #: When it was submitted (nbgrader's ``timestamp.txt``, ISO, UTC; None: not known).
    timestamp: str | None = None
    #: The notebook, or one of its cells, ran out of time (a note says which).
    timed_out: bool = False
    #: What walled the student's code off (``protection.Verdict.marker``: ``namespaces``,
    #: ``separate-user`` or ``none (unprotected)``); empty where no code ran.
    protection: str = ""

    @property
    def failed_practice(self) -> set[str]:
        """Practice cells (ungraded 拓展) whose checks did not pass."""
        return {c for c, status in self.practice.items() if status != Status.PASSED}

    def part_total(self, extension: bool) -> tuple[float, float]:
        """(points, maximum) of the core, or of every graded extension together."""
        rows = [v for k, v in self.parts.items() if (k != "core") == extension]
        return sum(r["score"] for r in rows), sum(r["max"] for r in rows)

    def add_reason(self, zh: str, en: str) -> None:
        text = printable(f"{zh} / {en}", 2000)
        self.reason = f"{self.reason}; {text}" if self.reason else text

    @property
    def lost(self) -> list[str]:
        """Autograded cells that scored less than full marks."""
        return [c for c, s in self.cells.items()
                if c not in self.manual and (s or 0.0) < self.max_scores.get(c, 0.0)]


def _skeleton(sub: Submission, manifest) -> Result:
    result = Result(sub.student, sub.assignment)
    if manifest is not None:
        for spec in manifest.graded:
            result.cells[spec.grade_id] = None
            result.max_scores[spec.grade_id] = spec.points
            if spec.is_manual:
                result.manual.append(spec.grade_id)
            else:
                part = result.parts.setdefault(spec.part, {"score": 0.0, "max": 0.0})
                part["max"] += spec.points
        result.auto_max = manifest.auto_max
    return result


def _result(sub: Submission, manifest, graded) -> Result:
    """A scores-table row from the engine's record of one submission."""
    result = _skeleton(sub, manifest)
    result.seconds = graded.seconds
    result.timestamp = graded.timestamp
    for note in graded.notes:
        result.add_reason(note.zh, note.en)
        result.timed_out = result.timed_out or note.kind == TIMEOUT
    if graded.crashed:
        result.status = RowStatus.GRADER_ERROR
        result.add_reason("评分程序内部错误，已记录在 grading.log", "internal grading error "
                          f"(see grading.log): {graded.crashed.strip().splitlines()[-1][:200]}")
        log.error("%s/%s: grading crashed:\n%s", sub.student, sub.assignment, graded.crashed)
        return result
    if graded.stopped:
        return result
    for cell in graded.cells:
        result.cells[cell.grade_id] = cell.score
        if cell.status == Status.ERROR:
            result.grader_errors.append(cell.grade_id)
        if not cell.manual and cell.part in result.parts:
            result.parts[cell.part]["score"] += cell.score or 0.0
    result.practice = {cell.grade_id: cell.status for cell in graded.practice}
    result.misconceptions = {cell.grade_id: [{"key": k, "label": label}
                                             for k, label in cell.misconceptions]
                             for cell in [*graded.cells, *graded.practice] if cell.misconceptions}
    if result.misconceptions:
        log.info("%s/%s: misconceptions %s", sub.student, sub.assignment,
                 "; ".join(f"{c}: {', '.join(m['key'] for m in ms)}"
                           for c, ms in result.misconceptions.items()))
    result.auto_score = float(sum(s or 0.0 for c, s in result.cells.items()
                                  if c not in result.manual))
    if result.grader_errors:
        result.status = RowStatus.GRADER_ERROR
        result.add_reason(f"检查程序出错，以下单元格暂未计分：{', '.join(result.grader_errors)}",
                          f"a check broke; not scored: {', '.join(result.grader_errors)} "
                          "(traceback in grading.log)")
    else:
        result.status = RowStatus.NOTE if result.reason else RowStatus.OK
    return result


def _refused(sub: Submission, manifest, remark: Remark) -> Result:
    result = _skeleton(sub, manifest)
    result.status = RowStatus.REFUSED
    for zh, en in remark.notes:
        result.add_reason(zh, en)
    return result


def _with_remark(result: Result, remark: Remark | None) -> Result:
    for zh, en in remark.notes if remark else ():
        result.add_reason(zh, en)
        if result.status == RowStatus.OK:
            result.status = RowStatus.NOTE
    return result


def grade_submissions(subs: list[Submission], *, settings: GradeSettings, jobs: int,
                      progress: Progress | None = None,
                      started: Callable[[], None] | None = None,
                      on_graded: Callable[[object], None] | None = None,
                      remarks: dict[Key, Remark] | None = None,
                      guard: Guard | None = None,
                      verdict=None, zygote=None) -> tuple[list[Result], list]:
    """Grade ``subs``; returns the table rows and the engine's records (same order).
    ``started`` runs once the grading workers exist (see :func:`.engine.pool.grade_tasks`);
    ``on_graded`` gets each engine record as soon as it is done; ``remarks`` come from
    the intake; ``guard`` keeps what failed per submission (the caller may add more
    and mark the rows again); ``verdict``: the protection decided up front
    (:mod:`autograder.engine.host.protection`), decided here when not given: where it
    refuses, :class:`~autograder.errors.Unprotected` is raised before anything runs;
    ``zygote``: one already started for that verdict (:func:`.engine.host.pool.start_zygote`),
    which the caller closes."""
    if verdict is None:
        from ..engine.host.protection import decide

        verdict = decide(isolate=settings.isolate)
    verdict.require(settings.allow_unprotected)
    remarks, guard = remarks or {}, guard or Guard()
    manifests, results, tasks, where = {}, [None] * len(subs), [], []
    for i, sub in enumerate(subs):
        remark = remarks.get((sub.student, sub.assignment))
        if remark is not None and remark.refused:
            results[i] = _refused(sub, _manifest(manifests, sub.assignment), remark)
            continue
        if sub.assignment not in ASSIGNMENTS:
            results[i] = _skeleton(sub, None)
            results[i].add_reason(f"未知的作业 {sub.assignment}",
                                  f"unknown assignment {sub.assignment!r}; expected one of "
                                  f"{', '.join(ASSIGNMENTS)}")
            continue
        _manifest(manifests, sub.assignment)
        tasks.append(sub)
        where.append(i)
    done = [len(subs) - len(tasks)]

    def tick(graded) -> None:  # in the batch's loop: nothing here may raise
        done[0] += 1
        key = (graded.task.student, graded.task.assignment)
        if on_graded:
            guard.run(key, "record", on_graded, graded)
        if progress:
            guard.run(key, "progress", progress, done[0], len(subs), "/".join(key))

    if progress:
        progress(done[0], len(subs), "")
    records = grade_tasks(tasks, settings, jobs=jobs, progress=tick, started=started,
                          verdict=verdict, zygote=zygote)
    engine_records: list = [None] * len(subs)
    for i, graded in zip(where, records):
        sub, key = subs[i], (subs[i].student, subs[i].assignment)
        manifest = manifests[sub.assignment]
        row = guard.run(key, "row", _result, sub, manifest, graded) or _skeleton(sub, manifest)
        row.review = [printable(r, 300) for r in graded.review[:20]]
        row.protection = verdict.marker
        results[i] = _with_remark(row, remarks.get(key))
        engine_records[i] = graded
    guard.mark(results, RowStatus.GRADER_ERROR)
    return results, engine_records


def _manifest(manifests: dict, assignment: str):
    """The manifest of ``assignment`` (None for an unknown one), loaded once."""
    if assignment not in ASSIGNMENTS:
        return None
    manifests[assignment] = manifests.get(assignment) or load(assignment)
    return manifests[assignment]
