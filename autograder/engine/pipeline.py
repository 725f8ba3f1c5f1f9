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
6. :class:`ClearSubmittedOutputs`: every output, execution count, attachment and
   non-nbgrader metadata the submission brought is dropped (a cell that never runs shows
   nothing, and nothing the student pre-baked reaches a browser);
7. :class:`CollectFiles`: data files beside the notebook (no symlinks, bounded);
8. :class:`Execute`: a sandboxed child runs every code cell in order (test cells without
   their hidden regions); after each test cell the host runs its checks on the child's
   values, seeded by (salt, student, check); outputs keep safe types only, within one
   budget per notebook (:class:`~.outputs.OutputBudget`);
9. :class:`Score`: a test cell earns its points iff its visible part raised nothing and
   every check passed; a broken check leaves it ungraded and flags the row;
10. :class:`.screening.Review`: the review scan of the student's code.

A step marked ``optional`` (the timestamp, the review) that fails on a bug of ours is
logged and skipped with a note: it never costs the submission its scores.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from .. import bank
from ..symbolic import TimeLimit, time_limit
from . import memcg
from .budgets import FETCH_SECONDS, GET_SECONDS
from .errors import ChildGone, StudentFault
from .manifest import CellSpec, Manifest
from .outputs import OutputBudget, clean_outputs, verdict_output
from .proxy import Child, ZygoteLink
from .sandbox import REFUSED, SandboxLimits
from .screening import ReadTimestamp, Review, read_notebook
from .settings import GradeSettings
from .stop import Note, Stop

__all__ = ["Job", "CellResult", "Stop", "PIPELINE", "run", "Note"]

log = logging.getLogger("autograder.engine")

#: Largest notebook read, data files sent along (bytes, count).
MAX_NOTEBOOK = 50 << 20
MAX_FILES, MAX_FILE_BYTES = 200, 100 << 20


@dataclass
class CellResult:
    """One graded cell: ``status`` is passed, failed, error (grader), manual or not-run.

    ``part`` is ``core`` or the 拓展 section the cell belongs to; a ``practice`` cell (a
    test cell of an ungraded extension) is checked and reported, never scored.
    """

    grade_id: str
    title: str
    max_score: float
    manual: bool
    score: float | None = None
    status: str = "not-run"
    messages: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # grader tracebacks, instructor only
    part: str = "core"
    practice: bool = False


@dataclass
class Job:
    """One submission and everything the steps learn about it."""

    student: str
    assignment: str
    folder: Path
    manifest: Manifest
    settings: GradeSettings
    zygote: ZygoteLink | None = None
    memory: memcg.MemoryPlan | None = None  # the batch's memory bound (None: seccomp only)
    notebook_path: Path | None = None
    nb: NotebookNode | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)
    cells: dict[str, CellResult] = field(default_factory=dict)
    stopped: bool = False
    seconds: float = 0.0
    unanswered: set[str] = field(default_factory=set)
    timestamp: str | None = None  # from timestamp.txt, ISO, UTC
    review: list[str] = field(default_factory=list)
    memory_peak: int | None = None  # bytes, where a cgroup measured it

    def note(self, zh: str, en: str) -> None:
        note = Note(zh, en)
        self.notes.append(note)
        log.info("%s/%s: %s", self.student, self.assignment, note.en)

    #: Test cells of practice extensions: checked, reported, never scored.
    practice: dict[str, CellResult] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for spec in self.manifest.graded:
            self.cells[spec.grade_id] = CellResult(spec.grade_id, spec.title, spec.points,
                                                   spec.is_manual, part=spec.part)
        for spec in self.manifest.practice:
            self.practice[spec.grade_id] = CellResult(
                spec.grade_id, spec.title, spec.practice_points, False, part=spec.part,
                practice=True)

    def result_for(self, spec: CellSpec) -> CellResult:
        """The record a test cell's checks go to (scored or practice)."""
        return self.practice[spec.grade_id] if spec.is_practice else self.cells[spec.grade_id]


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


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


# ------------------------------------------------------------------ steps


class FindNotebook:
    name = "find notebook"

    def __call__(self, job: Job) -> None:
        a = job.assignment
        expected = job.folder / f"{a}.ipynb"
        found = sorted(p for p in job.folder.glob("*.ipynb")
                       if p.is_file() and not p.is_symlink())
        if expected in found:
            job.notebook_path = expected
        elif len(found) == 1:
            job.notebook_path = found[0]
            job.note(f"文件名应为 {a}.ipynb，实际为 {found[0].name}，已按此文件评分",
                     f"notebook should be named {a}.ipynb, graded {found[0].name} instead")
        else:
            names = ", ".join(p.name for p in found) or "none"
            raise Stop(f"没有找到 {a}.ipynb（文件夹中的 notebook：{names}）",
                       f"no {a}.ipynb in the submission (notebooks found: {names})")


class ReadNotebook:
    name = "read notebook"

    def __call__(self, job: Job) -> None:
        path = job.notebook_path
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as fh:
                raw = fh.read(MAX_NOTEBOOK + 1)
        except OSError as err:
            raise Stop("无法读取 notebook 文件", f"cannot read the notebook ({err})") from None
        if len(raw) > MAX_NOTEBOOK:
            raise Stop(f"notebook 超过 {MAX_NOTEBOOK >> 20} MB，无法评分",
                       f"the notebook exceeds {MAX_NOTEBOOK >> 20} MB")
        job.nb, notes = read_notebook(raw)
        for zh, en in notes:
            job.note(zh, en)


class RestoreMetadata:
    """Cells whose nbgrader metadata was stripped or changed get it back."""

    name = "restore metadata"

    def __call__(self, job: Job) -> None:
        ref = [s for s in job.manifest.cells if s.grade_id]
        by_id = {s.id: s for s in ref if s.id}
        by_text: dict[str, CellSpec] = {}
        for s in ref:
            if s.locked:
                by_text.setdefault(s.release, s)
        known = {s.grade_id: s for s in ref}
        restored, seen = [], set()
        for cell in job.nb.cells:
            gid = _meta(cell).get("grade_id")
            if gid in known and gid not in seen and cell.cell_type == known[gid].cell_type:
                seen.add(gid)
                continue
            match = by_id.get(cell.get("id")) or by_text.get(cell.get("source"))
            if match and match.grade_id not in seen and match.cell_type == cell.cell_type:
                cell.setdefault("metadata", {})["nbgrader"] = copy.deepcopy(match.nbgrader)
                seen.add(match.grade_id)
                restored.append(match.grade_id)
            elif "nbgrader" in cell.get("metadata", {}):
                del cell.metadata["nbgrader"]
        if restored:
            which = ", ".join(restored) if len(restored) <= 4 else f"{len(restored)} cells"
            job.note(f"nbgrader 元数据被删除或改动，已按发放版恢复（{which}）",
                     f"nbgrader metadata stripped or changed, restored ({which})")


class PutBackTests:
    """Deleted test cells come back after the nearest preceding nbgrader cell."""

    name = "put back tests"

    def __call__(self, job: Job) -> None:
        inserted, last = [], -1
        for spec in job.manifest.cells:
            if not spec.grade_id:
                continue
            where = next((i for i, c in enumerate(job.nb.cells)
                          if _meta(c).get("grade_id") == spec.grade_id), None)
            if where is None and spec.is_test:
                cell = nbformat.v4.new_code_cell(spec.release)
                cell.metadata = copy.deepcopy(spec.metadata)
                job.nb.cells.insert(last + 1, cell)
                inserted.append(spec.grade_id)
                where = last + 1
            if where is not None:
                last = max(last, where)
        if inserted:
            job.note(f"测试单元格被删除，已由评分程序放回：{', '.join(inserted)}",
                     f"test cells deleted, put back by the grader: {', '.join(inserted)}")


class OverwriteLocked:
    """Locked cells get the manifest's text and metadata; every cell gets a unique id."""

    name = "overwrite locked cells"

    def __call__(self, job: Job) -> None:
        seen_ids: set[str] = set()
        for cell in job.nb.cells:
            spec = job.manifest.by_grade_id(_meta(cell).get("grade_id"))
            if spec is not None:
                cell.metadata["nbgrader"] = copy.deepcopy(spec.nbgrader)
                if spec.locked:
                    cell.source = spec.source
            if cell.cell_type == "code":
                cell.setdefault("outputs", [])
                cell.setdefault("execution_count", None)
            cid = cell.get("id")
            if not isinstance(cid, str) or cid in seen_ids or not cid:
                cid = uuid.uuid4().hex[:8]
                cell["id"] = cid
            seen_ids.add(cid)
        job.nb.nbformat, job.nb.nbformat_minor = 4, max(job.nb.get("nbformat_minor", 5), 5)


class ClearSubmittedOutputs:
    """Nothing the submission brought with it is shown as if it had run: outputs and
    execution counts go (only the child's, from this run, come back), and so do
    attachments and cell metadata other than :data:`KEPT_METADATA` (HTML renderers read
    some of it; none of it is the student's answer). Notebook metadata keeps only the
    kernel, the language and the build's own note (a ``widgets`` entry, for one, makes
    nbconvert load widget scripts)."""

    name = "clear submitted outputs"

    def __call__(self, job: Job) -> None:
        cleared = 0
        for cell in job.nb.cells:
            if cell.cell_type == "code":
                cleared += bool(cell.get("outputs")) or cell.get("execution_count") is not None
                cell.outputs, cell.execution_count = [], None
            cell.pop("attachments", None)
            meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
            cell["metadata"] = NotebookNode({k: v for k, v in meta.items()
                                             if k in KEPT_METADATA and _plain(k, v)})
        job.nb.metadata = NotebookNode({k: v for k, v in job.nb.get("metadata", {}).items()
                                        if k in ("kernelspec", "language_info", "autograder")})
        if cleared:
            log.info("%s/%s: %d code cells came with outputs; cleared", job.student,
                     job.assignment, cleared)


#: Cell metadata kept from a submission (nbgrader's, checked by the steps before).
KEPT_METADATA = ("nbgrader", "deletable", "editable")


def _plain(key: str, value: object) -> bool:
    return key == "nbgrader" or isinstance(value, bool)


class CollectFiles:
    """Data files next to the notebook, which the student's code may read."""

    name = "collect files"

    def __call__(self, job: Job) -> None:
        total = 0
        for path in sorted(job.folder.rglob("*")):
            rel = path.relative_to(job.folder)
            if path.is_symlink() or not path.is_file() or path.suffix == ".ipynb" \
                    or any(part.startswith(".") for part in rel.parts):
                continue
            total += path.stat().st_size
            if len(job.files) >= MAX_FILES or total > MAX_FILE_BYTES:
                job.note("数据文件过多或过大，超出部分未随 notebook 一起运行",
                         "too many or too large data files; the rest were left out")
                return
            job.files[str(rel)] = path.read_bytes()


class Execute:
    """Run the cells in a sandboxed child; run each test cell's checks in the host."""

    name = "execute"

    def __call__(self, job: Job) -> None:
        settings = job.settings
        limits = SandboxLimits(memory=settings.memory_mb << 20,
                               cpu_seconds=int(settings.timeout) + 10,
                               shared_memory=job.memory.shared_memory if job.memory else REFUSED)
        child, cgroup = memcg.spawn(job.zygote, limits, job.memory,
                                    who=f"{job.student}/{job.assignment}")
        deadline = time.monotonic() + settings.timeout
        budget = OutputBudget(settings.output_mb << 20)
        try:
            child.send_files(job.files)
            for cell in job.nb.cells:
                if cell.cell_type == "code":
                    self._cell(job, child, cell, deadline, budget)
        except ChildGone as err:
            job.note(f"无法运行：{err}", f"could not run the notebook: {err.reason}")
        finally:
            job.zygote.retire(child)
            job.memory_peak, killed = memcg.settle(job.memory, cgroup)
            if job.memory_peak is not None:
                log.info("%s/%s: peak memory %d MB", job.student, job.assignment,
                         job.memory_peak >> 20)
            if killed:
                mb = settings.memory_mb
                job.note(f"内存用量超过上限 {mb} MB（共享内存和 /tmp 中的文件也计入），进程被终止",
                         f"killed for using more than {mb} MB of memory (shared memory and "
                         "files in /tmp count)")

    def _cell(self, job: Job, child: Child, cell: NotebookNode, deadline: float,
              budget: OutputBudget) -> None:
        spec = job.manifest.by_grade_id(_meta(cell).get("grade_id"))
        test = spec is not None and (spec.is_test or spec.is_practice)
        left = deadline - time.monotonic()
        if not child.alive or left <= 0:
            if child.alive:
                child.kill(f"整个 notebook 运行超过 {job.settings.timeout:g} 秒，已停止。")
                job.note(f"整个 notebook 运行超过 {job.settings.timeout:g} 秒，其余单元格未运行",
                         f"the notebook ran past {job.settings.timeout:g} s; later cells not run")
            if test:
                job.result_for(spec).messages.append(f"未运行：{child.death}")
            return
        started = time.monotonic()
        try:
            reply = child.run(spec.visible if test else cell.source,
                              seconds=min(job.settings.cell_timeout, left),
                              output_bytes=budget.left)
        except ChildGone as err:
            job.note(f"运行到第 {job.nb.cells.index(cell) + 1} 个单元格时进程终止：{err}",
                     f"the child died in cell {job.nb.cells.index(cell) + 1}: {err.reason}")
            if test:
                job.result_for(spec).messages.append(str(err))
            return
        spent = budget.exhausted
        cell.outputs = budget.take(clean_outputs(reply.get("outputs")),
                                   cut=reply.get("cut") is True)
        if budget.exhausted and not spent:
            mb = job.settings.output_mb
            job.note(f"输出超过 {mb} MB 的上限，其后的输出已省略",
                     f"output past the {mb} MB limit per notebook; later outputs dropped")
        count = reply.get("count")
        cell.execution_count = count if isinstance(count, int) else None
        if reply.get("interrupted_after") is not None:
            where = _meta(cell).get("grade_id") or f"cell {job.nb.cells.index(cell) + 1}"
            job.note(f"有单元格运行超过 {job.settings.cell_timeout:g} 秒被中断：{where}",
                     f"cells interrupted after {job.settings.cell_timeout:g} s: {where}")
        ran = time.monotonic()
        if test:
            self._checks(job, child, cell, spec, visible_ok=bool(reply.get("ok")))
        log.debug("%s/%s: cell %d ran in %.3f s, checks %.3f s", job.student, job.assignment,
                  job.nb.cells.index(cell) + 1, ran - started, time.monotonic() - ran)

    def _checks(self, job: Job, child: Child, cell: NotebookNode, spec: CellSpec,
                visible_ok: bool) -> None:
        result = job.result_for(spec)
        result.status = "passed" if visible_ok else "failed"
        for call in spec.checks:
            outcome = _evaluate(job, child, call)
            if outcome.status == "passed":
                continue
            if outcome.status == "error":
                result.status = "error"
                result.errors.append(outcome.detail)
                log.error("%s/%s: check %s broke:\n%s", job.student, job.assignment,
                          call.name, outcome.detail)
                cell.outputs.append(verdict_output("GraderError", outcome.message, "error"))
            elif result.status != "error":
                result.status = "failed"
            if outcome.status == "failed":
                result.messages.append(outcome.message)
                cell.outputs.append(verdict_output(
                    "CheckFailed", f"{outcome.title}：{outcome.message}", "failed"))
        if not visible_ok:
            result.messages.insert(0, _visible_failure(cell))


def _evaluate(job: Job, child: Child, call) -> bank.Outcome:
    """Fetch the check's values from the child (functions as proxies), run it in the host.

    Fetching and decoding run under the host's own time limit (:data:`FETCH_SECONDS`):
    whatever the child sends, a value too slow to read is the student's failure."""
    check = bank.get_check(call.name)
    try:
        with time_limit(FETCH_SECONDS):
            values = {kw: child.get(var, seconds=GET_SECONDS) for kw, var in call.values.items()}
    except StudentFault as err:  # missing, malformed, too large, or the child died
        return bank.Outcome(call.name, check.title, "failed", str(err))
    except TimeLimit:
        return bank.Outcome(call.name, check.title, "failed",
                            f"读取并解码返回的值超过 {FETCH_SECONDS:g} 秒，已停止。请返回普通的数组、"
                            "数或较小的 SymPy 表达式。")
    seed = bank.seed_for(call.name, student=job.student, salt=job.settings.salt)
    return bank.evaluate(call.name, values, seed=seed)


def _visible_failure(cell: NotebookNode) -> str:
    """The error the visible part raised, in one line, for the feedback's summary."""
    for out in cell.outputs:
        if out.get("output_type") == "error" and out.get("ename") not in ("CheckFailed",
                                                                          "GraderError"):
            text = f"{out.get('ename')}: {out.get('evalue')}".strip()
            return f"可见的断言没有通过：{text}" if out.get("ename") == "AssertionError" \
                else f"单元格运行出错：{text}"
    return "单元格运行出错。"


class Score:
    """Points per graded cell from the host's own records (never from the outputs).

    A written answer left exactly as released scores 0 ("No response."), as nbgrader
    decides it by the cell's checksum; any other answer waits for manual grading.
    """

    name = "score"

    def __call__(self, job: Job) -> None:
        for cell in job.nb.cells if job.nb is not None else []:
            meta = _meta(cell)
            if meta.get("solution") and meta.get("checksum") == compute_checksum(cell):
                job.unanswered.add(meta["grade_id"])
        for result in job.cells.values():
            if result.manual:
                unanswered = result.grade_id in job.unanswered
                result.status, result.score = "manual", (0.0 if unanswered else None)
                if unanswered:
                    result.messages.append("没有作答。")
            elif result.status == "passed":
                result.score = result.max_score
            elif result.status == "error":
                result.score = None
            else:
                result.score = 0.0
                if result.status == "not-run" and not result.messages:
                    result.messages.append("未运行。")
        for result in job.practice.values():  # reported, never scored
            if result.status == "not-run" and not result.messages:
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
