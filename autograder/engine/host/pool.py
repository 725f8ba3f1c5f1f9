"""Submissions graded in parallel: N worker processes sharing one warm zygote.

The parent imports the checks, starts the zygote and forks the workers before it starts
any thread of its own; each worker has its own link to the zygote
(:meth:`.zygote_link.Zygote.link`), grades one submission at a time (the pipeline) with the
next one already queued, and sends back a :class:`Graded` record: scores, notes, the
autograded notebook and its feedback page. A worker that dies or overruns its watchdog is replaced and its
submission reported as a grader error; the batch goes on. How the children's memory is
bounded (:mod:`.memcg`) and how they share the CPU (:mod:`.cpushare`) is chosen once per
batch, before the workers are forked, and logged.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import SandboxUnavailable, Unprotected
from ...settings import GradeSettings
from ..protocol.limits import Protection

if TYPE_CHECKING:  # the probe's Linux-only pieces load only when a batch runs
    from .protection import Verdict
    from .zygote_link import Zygote

__all__ = ["Submission", "Graded", "grade_tasks", "start_zygote", "SandboxUnavailable", "Unprotected", "WATCHDOG_SLACK"]

log = logging.getLogger("autograder.engine")

#: Seconds past a submission's own time limit before its worker is presumed stuck.
WATCHDOG_SLACK = 120.0
#: Submissions handed to a worker at once (the one it grades and the next).
PREFETCH = 2


@dataclass(frozen=True)
class Submission:
    """One ``<student>/<assignment>`` folder to grade."""

    student: str
    assignment: str
    folder: Path


@dataclass
class Graded:
    """What grading one submission produced (plain data, sent between processes)."""

    task: Submission
    cells: list = field(default_factory=list)  # job.CellResult, in notebook order
    notes: list = field(default_factory=list)  # pipeline.Note
    stopped: bool = False
    notebook: str | None = None  # the autograded notebook (JSON text)
    feedback: str | None = None  # the feedback page (HTML)
    files: list[str] = field(default_factory=list)  # data files beside the notebook
    unanswered: list[str] = field(default_factory=list)  # answer cells left as released
    seconds: float = 0.0
    crashed: str = ""  # a grader crash (traceback), not the student's doing
    practice: list = field(default_factory=list)  # practice extensions' CellResults
    review: list[str] = field(default_factory=list)  # code to review (integrity scan)
    timestamp: str | None = None  # timestamp.txt, ISO UTC (None: none or unreadable)
    memory_peak: int | None = None  # the child's peak bytes, where a cgroup measured it


def _grade_one(task: Submission, settings: GradeSettings, zygote, memory=None,
               protection: str = "") -> Graded:
    from .feedback_page import render_feedback
    from .graded_record import stamp, written
    from .job import Job
    from .manifest import load
    from .pipeline import run

    job = run(Job(task.student, task.assignment, task.folder, load(task.assignment), settings,
                  zygote=zygote, memory=memory, protection=protection))
    graded = Graded(task, list(job.cells.values()), job.notes, job.stopped,
                    seconds=job.seconds, files=sorted(job.files),
                    unanswered=sorted(job.unanswered), practice=list(job.practice.values()),
                    review=job.review, timestamp=job.timestamp, memory_peak=job.memory_peak)
    if job.nb is not None and not job.stopped:
        stamp(job)  # what the page needs to be rendered again after hand grading
        graded.notebook = written(job.nb)  # always readable back (graded_record)
        graded.feedback = render_feedback(job)
    return graded


def _worker(conn: Connection, settings: GradeSettings, level: int, zygote, memory,
            expected: Protection) -> None:
    """A worker's life: wait for the zygote (through its own link to it), then tasks
    until the parent closes the pipe. A zygote whose children would get another
    protection than the one decided up front (``expected``) runs none of them."""
    logging.getLogger("autograder").setLevel(level)
    from .zygote_link import ZygoteError

    try:
        isolation = zygote.isolation
    except ZygoteError as err:
        conn.send(("dead", str(err)))
        return
    if isolation.protection != expected:
        conn.send(("unprotected", f"the sandbox gave {isolation.protection} where "
                   f"{expected} was expected ({isolation.missing})"))  # before any child runs
        zygote.close()
        return
    conn.send(("ready", (isolation.protection, isolation.missing)))
    from .protection import UNPROTECTED

    marker = UNPROTECTED if expected == Protection.NONE else str(expected)
    try:
        while True:
            try:
                message = conn.recv()
            except EOFError:
                return
            if message is None:  # the parent's goodbye (forked workers share pipe ends,
                return           # so closing the pipe alone would not end them)
            position, task = message
            try:
                graded = _grade_one(task, settings, zygote, memory, marker)
            except Exception:  # a grader bug: reported, never the student's 0
                graded = Graded(task, crashed=traceback.format_exc())
            conn.send(("done", (position, graded)))
    finally:
        zygote.close()


class _Worker:
    def __init__(self, ctx, settings: GradeSettings, zygote, memory,
                 expected: Protection) -> None:
        self.conn, theirs = ctx.Pipe()
        level = logging.getLogger("autograder").getEffectiveLevel()
        link = zygote.link(ahead=True)
        self.memory, self.expected = memory, expected
        self.proc = ctx.Process(target=_worker, args=(theirs, settings, level, link, memory,
                                                      expected), daemon=True)
        self.proc.start()
        theirs.close()
        link.close()  # the worker's now
        self.queue: deque[tuple[int, Submission]] = deque()  # the first is being graded
        self.since = 0.0  # when the first started
        self.ready = False

    @property
    def task(self) -> Submission | None:
        return self.queue[0][1] if self.queue else None

    @property
    def position(self) -> int:
        return self.queue[0][0] if self.queue else -1

    def give(self, position: int, task: Submission) -> None:
        if not self.queue:
            self.since = time.monotonic()
        self.queue.append((position, task))
        self.conn.send((position, task))

    def finished(self) -> None:
        self.queue.popleft()
        self.since = time.monotonic()

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.conn.close()
        self.proc.join(timeout=10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()


def _logging_handlers_flushed() -> None:
    for handler in logging.getLogger().handlers + logging.getLogger("autograder").handlers:
        handler.flush()


def grade_tasks(tasks: Iterable[Submission], settings: GradeSettings, *, jobs: int,
                progress: Callable[[Graded], None] | None = None,
                started: Callable[[], None] | None = None,
                verdict: Verdict | None = None, zygote: Zygote | None = None) -> list[Graded]:
    """Grade every task on ``jobs`` workers; results in the order of ``tasks``.

    ``started`` is called once the workers are forked: the caller may start threads then.
    ``verdict``: the protection decided up front (:mod:`.protection`; decided here when
    not given); where it refuses, :class:`Unprotected` is raised before any child runs.
    ``zygote``: one :func:`start_zygote` started for this verdict while the caller did
    other work; the caller closes it (the one started here is closed here).
    """
    from .protection import decide

    tasks = list(tasks)
    verdict = verdict or decide(isolate=settings.isolate)
    verdict.require(settings.allow_unprotected)
    if not tasks:
        if started:
            started()
        return []
    from . import cpushare, memcg
    from .zygote_link import ZygoteError

    ctx = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    # one zygote for all workers: it starts while they are prepared and forked
    own = zygote is None
    zygote = start_zygote(verdict, notebooks=len(tasks)) if own else zygote
    memory = memcg.plan(cgroups=settings.cgroups)
    (log.warning if memory.mechanism == "none" else log.info)("%s", memory.describe())
    count = max(1, min(jobs, len(tasks)))
    memory.cpu = cpushare.plan(memory, workers=count, cgroups=settings.cgroups)
    (log.warning if memory.cpu.mechanism == "rlimits" else log.info)("%s", memory.cpu.describe())
    try:
        _preload({t.assignment for t in tasks})
        _logging_handlers_flushed()
        workers = [_Worker(ctx, settings, zygote, memory, verdict.level) for _ in range(count)]
        if started:
            started()
        return _run_batch(tasks, workers, ctx, settings, zygote, progress)
    except ZygoteError as err:
        raise SandboxUnavailable(str(err)) from None
    finally:
        if own:
            zygote.close()
        memory.close()


#: The fewest notebooks a batch warms its zygote up for (figures drawn, SymPy exercised:
#: about 1 s of CPU before the first child, each child then about 0.05 s quicker). One q2
#: solution graded: 2.57/2.31 s warm, 1.78/1.68 s not; with ``--jobs 2``, 8 of them
#: 6.29/6.00 s against 5.96/6.08 s, 16 of them 10.39/10.49 s against 10.64/11.01 s.
WARM_UP_FROM = 8


def start_zygote(verdict: Verdict, *, notebooks: int) -> Zygote:
    """The zygote a batch of ``notebooks`` under ``verdict`` forks its children from. It
    imports (and for a batch of :data:`WARM_UP_FROM` or more, warms up) in its own process
    (1-2 s), so a caller starts it before its own preparations (opening the gradebook:
    1 s) and hands it to :func:`grade_tasks`."""
    from .zygote_link import Zygote

    warm = notebooks >= WARM_UP_FROM
    log.info("zygote for %d notebook(s): %s", notebooks,
             "warmed up" if warm else f"not warmed up (fewer than {WARM_UP_FROM})")
    return Zygote(isolate=verdict.level == Protection.NAMESPACES, warm=warm)


def _run_batch(tasks: list[Submission], workers: list[_Worker], ctx, settings: GradeSettings,
               zygote, progress: Callable[[Graded], None] | None) -> list[Graded]:
    # longest first (a notebook's size stands in for its cost), so the batch does not end
    # with one worker grading a long notebook while the others wait
    pending = sorted(enumerate(tasks), key=lambda item: _size(item[1]))
    results: dict[int, Graded] = {}
    said: set[str] = set()  # the sandbox's protections are logged once, not per worker
    try:
        while len(results) < len(tasks):
            for w in workers:
                # one task queued behind the running one: a worker never waits for this
                # loop between two submissions; near the end, a task waits for an idle
                # worker instead, so the batch does not end behind one worker's queue
                while w.ready and pending and (not w.queue or (
                        len(w.queue) < PREFETCH and len(pending) > len(workers))):
                    w.give(*pending.pop())
            for position, graded in _collect(workers, ctx, settings, zygote, pending, said):
                results[position] = graded
                if progress:
                    progress(graded)
    finally:
        for w in workers:
            w.stop()
    return [results[i] for i in range(len(tasks))]


def _preload(assignments: set[str]) -> None:
    """Import and warm what every worker needs before forking them, so none pays for it
    (0.7 s of imports; the checks and what they load lazily; SymPy's lazily loaded
    parts; the feedback page's shared cells). It runs while the zygote starts, on the
    other core. A failure here is logged: the worker meets it again, per submission."""
    import nbformat  # noqa: F401

    from ...bank import runner
    from ..child.warmup import warm_sympy
    from . import feedback_page as feedback  # noqa: F401
    from .manifest import load, release_notebook

    warm_sympy()
    for assignment in assignments:
        try:
            runner.warm(assignment)
            feedback.warm(release_notebook(load(assignment)))
        except Exception as err:  # noqa: BLE001 - an optimisation only
            log.warning("could not preload %s (%s: %s)", assignment, type(err).__name__, err)


def _size(task: Submission) -> int:
    try:
        return sum(p.stat().st_size for p in task.folder.glob("*.ipynb"))
    except OSError:
        return 0


def _collect(workers: list[_Worker], ctx, settings: GradeSettings, zygote,
             pending: list[tuple[int, Submission]], said: set[str]) -> list[tuple[int, Graded]]:
    """Wait up to a few seconds for news from the workers; replace dead or stuck ones
    (the tasks queued behind a lost one go back to ``pending``)."""
    limit = settings.timeout + WATCHDOG_SLACK
    ready = wait([w.conn for w in workers], timeout=5.0)
    finished = []
    for i, w in enumerate(workers):
        if w.conn in ready:
            try:
                kind, payload = w.conn.recv()
            except (EOFError, OSError):
                kind, payload = "dead", "the grading worker exited"
            if kind == "ready":
                w.ready = True
                _say_protection(*payload, said)
            elif kind == "unprotected":
                raise Unprotected(payload)
            elif kind == "done":
                finished.append(payload)
                w.finished()
            else:
                finished += _lost(w, f"grading worker died: {payload}", pending)
                workers[i] = _Worker(ctx, settings, zygote, w.memory, w.expected)
        elif w.task is not None and time.monotonic() - w.since > limit:
            w.proc.kill()
            finished += _lost(w, f"grading worker stuck for more than {limit:g} s", pending)
            workers[i] = _Worker(ctx, settings, zygote, w.memory, w.expected)
    return finished


def _say_protection(protection: str, missing: str, said: set[str]) -> None:
    """Log which protections the children get, once per batch."""
    if protection not in said:
        said.add(protection)
        if protection == Protection.NAMESPACES:
            log.info("sandbox: Linux namespaces")
        else:
            log.warning("sandbox (%s): %s", protection, missing)


def _lost(worker: _Worker, reason: str,
          pending: list[tuple[int, Submission]]) -> list[tuple[int, Graded]]:
    log.error("%s", reason)
    if worker.task is None:
        if not worker.ready:
            raise SandboxUnavailable(reason)
        return []
    lost = [(worker.position, Graded(worker.task, crashed=reason))]
    worker.queue.popleft()
    pending.extend(worker.queue)  # never started: graded by another worker
    worker.queue.clear()
    return lost
