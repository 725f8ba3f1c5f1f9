"""One submission through a declared, ordered list of small steps, as nbgrader's converters.

:data:`PIPELINE` is the list; each step takes the :class:`Job` and either changes it or
raises :class:`Stop` with the reason the submission cannot be graded further. Every
step logs what it did. The steps, in order:

1. :class:`FindNotebook`: the notebook in the submission folder (by name, or the only one);
2. :class:`ReadNotebook`: valid JSON and nbformat, within a size limit, not a symlink;
3. :class:`RestoreMetadata`: nbgrader metadata a student stripped or changed comes back
   (cells matched to the manifest by grade id, cell id or identical released text);
4. :class:`PutBackTests`: deleted test cells are put back where they belong;
5. :class:`OverwriteLocked`: locked cells get the manifest's text (hidden tests included),
   as ``nbgrader autograde``'s ``OverwriteCells`` does;
6. :class:`CollectFiles`: data files beside the notebook (no symlinks, bounded);
7. :class:`Execute`: a sandboxed child runs every code cell in order (test cells without
   their hidden regions); after each test cell the host runs its checks on the child's
   values, seeded by (salt, student, check);
8. :class:`Score`: a test cell earns its points iff its visible part raised nothing and
   every check passed; a broken check leaves it ungraded and flags the row.
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
from .budgets import FETCH_SECONDS, GET_SECONDS
from .errors import ChildGone, StudentFault
from .manifest import CellSpec, Manifest
from .outputs import clean_outputs, verdict_output
from .proxy import Child, ZygoteLink
from .sandbox import SandboxLimits
from .settings import GradeSettings

__all__ = ["Job", "CellResult", "Stop", "PIPELINE", "run", "Note"]

log = logging.getLogger("autograder.engine")

#: Largest notebook read, data files sent along (bytes, count).
MAX_NOTEBOOK = 50 << 20
MAX_FILES, MAX_FILE_BYTES = 200, 100 << 20


@dataclass(frozen=True)
class Note:
    """A reason shown in the scores table, in Chinese and English."""

    zh: str
    en: str


class Stop(Exception):
    """The submission cannot be graded further; the note says why."""

    def __init__(self, zh: str, en: str) -> None:
        super().__init__(en)
        self.note = Note(zh, en)


@dataclass
class CellResult:
    """One graded cell: ``status`` is passed, failed, error (grader), manual or not-run."""

    grade_id: str
    title: str
    max_score: float
    manual: bool
    score: float | None = None
    status: str = "not-run"
    messages: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # grader tracebacks, instructor only


@dataclass
class Job:
    """One submission and everything the steps learn about it."""

    student: str
    assignment: str
    folder: Path
    manifest: Manifest
    settings: GradeSettings
    zygote: ZygoteLink | None = None
    notebook_path: Path | None = None
    nb: NotebookNode | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)
    cells: dict[str, CellResult] = field(default_factory=dict)
    stopped: bool = False
    seconds: float = 0.0
    unanswered: set[str] = field(default_factory=set)

    def note(self, zh: str, en: str) -> None:
        self.notes.append(Note(zh, en))
        log.info("%s/%s: %s", self.student, self.assignment, en)

    def __post_init__(self) -> None:
        for spec in self.manifest.graded:
            self.cells[spec.grade_id] = CellResult(spec.grade_id, spec.title, spec.points,
                                                   spec.is_manual)


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
        try:
            nb = nbformat.reads(raw.decode("utf-8"), as_version=4)
            if not isinstance(nb.get("cells"), list):
                raise ValueError("no cells")
            for cell in nb.cells:
                if cell.get("cell_type") not in ("code", "markdown", "raw"):
                    raise ValueError("unknown cell type")
                if not isinstance(cell.get("source", ""), str):
                    raise ValueError("cell source is not text")
        except Exception as err:  # nbformat raises several kinds for a broken file
            raise Stop("文件不是有效的 notebook（JSON 无法解析），无法评分",
                       f"not a valid notebook ({type(err).__name__}), cannot be graded") from None
        job.nb = nb


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
                               cpu_seconds=int(settings.timeout) + 10)
        child = job.zygote.spawn(limits)
        deadline = time.monotonic() + settings.timeout
        try:
            child.send_files(job.files)
            for cell in job.nb.cells:
                if cell.cell_type == "code":
                    self._cell(job, child, cell, deadline)
        except ChildGone as err:
            job.note(f"无法运行：{err}", f"could not run the notebook: {err.reason}")
        finally:
            job.zygote.retire(child)

    def _cell(self, job: Job, child: Child, cell: NotebookNode, deadline: float) -> None:
        spec = job.manifest.by_grade_id(_meta(cell).get("grade_id"))
        test = spec is not None and spec.is_test
        left = deadline - time.monotonic()
        if not child.alive or left <= 0:
            if child.alive:
                child.kill(f"整个 notebook 运行超过 {job.settings.timeout:g} 秒，已停止。")
                job.note(f"整个 notebook 运行超过 {job.settings.timeout:g} 秒，其余单元格未运行",
                         f"the notebook ran past {job.settings.timeout:g} s; later cells not run")
            if test:
                job.cells[spec.grade_id].messages.append(f"未运行：{child.death}")
            return
        started = time.monotonic()
        try:
            reply = child.run(spec.visible if test else cell.source,
                              seconds=min(job.settings.cell_timeout, left))
        except ChildGone as err:
            job.note(f"运行到第 {job.nb.cells.index(cell) + 1} 个单元格时进程终止：{err}",
                     f"the child died in cell {job.nb.cells.index(cell) + 1}: {err.reason}")
            if test:
                job.cells[spec.grade_id].messages.append(str(err))
            return
        cell.outputs = clean_outputs(reply.get("outputs"))
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
        result = job.cells[spec.grade_id]
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


PIPELINE: tuple = (FindNotebook(), ReadNotebook(), RestoreMetadata(), PutBackTests(),
                   OverwriteLocked(), CollectFiles(), Execute(), Score())


def run(job: Job, steps: tuple = PIPELINE) -> Job:
    """Put ``job`` through ``steps``; a :class:`Stop` ends it with its note (nothing scored)."""
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
    job.seconds = round(time.monotonic() - started, 3)
    return job
