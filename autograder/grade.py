"""``autograder grade``: grade a class through nbgrader, one isolated course per submission.

The design is for robustness rather than speed:

1. A *prepared* course is made once per batch: the repository's config, the source
   notebooks and a gradebook filled by nbgrader's ``generate_assignment``.
2. Each submission is checked (readable JSON, file name, nbgrader metadata) and then
   graded in its own temporary course (a copy of the config, the source and the
   prepared ``gradebook.db``) by a worker subprocess with a wall-clock limit. The
   worker runs nbgrader's ``autograde`` and ``generate_feedback`` in-process and
   writes the per-cell scores to ``result.json``.
3. Workers run N at a time; a submission that crashes, loops or kills its kernel only
   loses its own row, which says why, in Chinese and English.

Outputs in ``out``: ``scores.csv`` and ``scores.json`` (one row per student and
assignment, one column per grade cell, the automatic total, its maximum, a status and
a reason) and ``feedback/<student>/<assignment>/<assignment>.html``.
"""

from __future__ import annotations

import csv
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .course import ASSIGNMENTS, CourseError, check_assignment, find_root, new_course
from .integrity import scan_cells

__all__ = ["Submission", "Result", "find_submissions", "prepare", "grade", "grade_prepared",
           "write_outputs", "DEFAULT_TIMEOUT"]

#: Wall-clock seconds one submission may take (kernel start, all cells, feedback).
DEFAULT_TIMEOUT = 300.0
#: Seconds one cell may run before nbgrader interrupts it (the rest still runs).
DEFAULT_CELL_TIMEOUT = 60

Progress = Callable[[int, int, str], None]

OK, NOTE, FAILED = "ok", "note", "failed"


@dataclass
class Submission:
    """One ``<student>/<assignment>`` folder given in."""

    student: str
    assignment: str
    folder: Path


@dataclass
class Result:
    """The grade of one submission; ``cells`` maps grade id -> score (None: not graded)."""

    student: str
    assignment: str
    status: str = FAILED
    reason: str = ""
    auto_score: float = 0.0
    auto_max: float = 0.0
    cells: dict[str, float | None] = field(default_factory=dict)
    max_scores: dict[str, float] = field(default_factory=dict)
    manual: list[str] = field(default_factory=list)
    feedback: str | None = None
    seconds: float = 0.0
    #: Why an instructor should look at the code (see :mod:`autograder.integrity`).
    review: list[str] = field(default_factory=list)

    def add_reason(self, zh: str, en: str) -> None:
        text = f"{zh} / {en}"
        self.reason = f"{self.reason}; {text}" if self.reason else text

    @property
    def lost(self) -> list[str]:
        """Autograded cells that scored less than full marks."""
        return [c for c, s in self.cells.items()
                if c not in self.manual and (s or 0.0) < self.max_scores.get(c, 0.0)]


# ------------------------------------------------------------------ discovery


def find_submissions(submissions: Path, assignment: str | None = None) -> list[Submission]:
    """``<student>/<assignment>/`` folders under ``submissions`` (or its ``submitted/``)."""
    submissions = Path(submissions)
    if not submissions.is_dir():
        raise CourseError(f"submissions folder {submissions} does not exist: give the folder "
                          "laid out as submitted/<student>/<assignment>/<assignment>.ipynb")
    if (submissions / "submitted").is_dir():
        submissions = submissions / "submitted"
    if assignment is not None:
        check_assignment(assignment)
    found = []
    for student in sorted(p for p in submissions.iterdir() if p.is_dir()):
        if student.name.startswith("."):
            continue
        for folder in sorted(p for p in student.iterdir() if p.is_dir()):
            if folder.name.startswith("."):
                continue
            if assignment is None or folder.name == assignment:
                found.append(Submission(student.name, folder.name, folder))
    if not found:
        which = f" for {assignment}" if assignment else ""
        raise CourseError(f"no submissions{which} in {submissions}: expected "
                          "<student>/<assignment>/<assignment>.ipynb folders")
    return found


# ------------------------------------------------------------------ preparation


def prepare(course: Path, root: Path, assignments: list[str]) -> Path:
    """A course with the gradebook filled by ``generate_assignment`` for ``assignments``."""
    return new_course(course, root, assignments)


def _grade_cells(course: Path, assignment: str) -> dict[str, tuple[float, bool]]:
    """Grade id -> (max score, manual) of the prepared course's source notebook."""
    from . import notebooks as nbs

    nb = nbs.read(course / "source" / assignment / f"{assignment}.ipynb")
    cells = {}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade"):
            cells[meta["grade_id"]] = (float(meta.get("points", 0.0)),
                                       cell.cell_type == "markdown")
    return cells


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def repair(nb, release) -> tuple[list[str], list[str]]:
    """Undo what breaks nbgrader's autograde in a student's notebook, in place.

    nbgrader fails on a notebook whose grade cells lost their metadata or were renamed
    (``OverwriteCells.add_missing_cells`` looks up neighbours that are gone). Cells are
    matched to the release by cell id, else by identical source; a matched cell gets the
    release's nbgrader metadata back, an unknown or duplicated grade id is dropped, and
    grade cells still missing are put back (their release version, which nbgrader then
    overwrites with the source's) after the nearest preceding nbgrader cell.
    Returns (grade ids whose metadata was restored, grade ids put back).
    """
    import copy

    ref = [c for c in release.cells if _meta(c).get("grade_id")]
    by_id = {c.get("id"): c for c in ref if c.get("id")}
    by_source = {}
    for c in ref:
        if _meta(c).get("locked"):
            by_source.setdefault(c.source, c)
    known = {_meta(c)["grade_id"]: c for c in ref}
    restored, seen = [], set()
    for cell in nb.cells:
        gid = _meta(cell).get("grade_id")
        if gid in known and gid not in seen and cell.cell_type == known[gid].cell_type:
            seen.add(gid)
            continue
        match = by_id.get(cell.get("id")) or by_source.get(cell.get("source"))
        mgid = _meta(match).get("grade_id") if match is not None else None
        if mgid and mgid not in seen and match.cell_type == cell.cell_type:
            cell.setdefault("metadata", {})["nbgrader"] = copy.deepcopy(_meta(match))
            seen.add(mgid)
            restored.append(mgid)
        elif "nbgrader" in cell.get("metadata", {}):
            del cell.metadata["nbgrader"]
    inserted, last = [], -1
    for ref_cell in ref:
        gid = _meta(ref_cell)["grade_id"]
        where = next((i for i, c in enumerate(nb.cells) if _meta(c).get("grade_id") == gid), None)
        if where is None and _meta(ref_cell).get("grade") and ref_cell.cell_type == "code":
            nb.cells.insert(last + 1, copy.deepcopy(ref_cell))
            inserted.append(gid)
            where = last + 1
        if where is not None:
            last = max(last, where)
    return restored, inserted


def _inspect(sub: Submission, release_path: Path, result: Result, target: Path) -> bool:
    """Check one submission and copy it to ``target``; False when it cannot be graded."""
    import nbformat

    a = sub.assignment
    notebooks = sorted(p for p in sub.folder.glob("*.ipynb") if p.is_file())
    expected = sub.folder / f"{a}.ipynb"
    if expected.is_file():
        chosen = expected
    elif len(notebooks) == 1:
        chosen = notebooks[0]
        result.add_reason(f"文件名应为 {a}.ipynb，实际为 {chosen.name}，已按此文件评分",
                          f"notebook should be named {a}.ipynb, graded {chosen.name} instead")
    else:
        names = ", ".join(p.name for p in notebooks) or "none"
        result.add_reason(f"没有找到 {a}.ipynb（文件夹中的 notebook：{names}）",
                          f"no {a}.ipynb in the submission (notebooks found: {names})")
        return False
    try:
        nb = nbformat.read(str(chosen), as_version=4)
    except Exception as err:  # invalid JSON, not a notebook, unreadable
        result.add_reason("文件不是有效的 notebook（JSON 无法解析），无法评分",
                          f"not a valid notebook ({type(err).__name__}), cannot be graded")
        return False
    release = nbformat.read(str(release_path), as_version=4)
    restored, inserted = repair(nb, release)
    result.review = scan_cells(c.source for c in nb.cells
                               if c.cell_type == "code" and not _meta(c).get("locked"))
    if restored:
        which = ", ".join(restored) if len(restored) <= 4 else f"{len(restored)} cells"
        result.add_reason(f"nbgrader 元数据被删除或改动，已按发放版恢复（{which}）",
                          f"nbgrader metadata stripped or changed, restored ({which})")
    if inserted:
        result.add_reason(f"测试单元格被删除，已由评分程序放回：{', '.join(inserted)}",
                          f"test cells deleted, put back by the grader: {', '.join(inserted)}")
    target.parent.mkdir(parents=True, exist_ok=True)
    for extra in sub.folder.iterdir():  # data files the notebook may read, as nbgrader does
        if extra.suffix != ".ipynb" and not extra.name.startswith("."):
            if extra.is_dir():
                shutil.copytree(extra, target.parent / extra.name, dirs_exist_ok=True)
            elif extra.is_file():
                shutil.copy(extra, target.parent / extra.name)
    nbformat.write(nb, str(target))
    return True


# ------------------------------------------------------------------ one submission


def _kill_tree(pid: int) -> None:
    """Kill a worker and every process it started (the kernel runs in its own session)."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil comes with jupyter
        psutil = None
    if psutil is None:
        os.kill(pid, 9)
        return
    try:
        parent = psutil.Process(pid)
        procs = [*parent.children(recursive=True), parent]
    except psutil.NoSuchProcess:
        return
    for proc in procs:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=5)


class _Worker:
    """A long-lived ``python -m autograder.grade --serve`` process.

    It imports nbgrader once (seconds saved per submission) and grades one submission
    at a time, each in its own course folder with its own kernel: the student's code
    never runs in the worker. A worker that overruns the wall-clock limit or dies is
    killed with its kernel and replaced by a fresh one.
    """

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        env = {**os.environ, "PYTHONWARNINGS": "ignore",
               "PATH": os.pathsep.join([str(Path(sys.executable).parent),
                                        os.environ.get("PATH", "")])}
        return subprocess.Popen([sys.executable, "-m", "autograder.grade", "--serve"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)

    def run(self, task: dict, timeout: float) -> tuple[str, str]:
        """("done" | "timeout" | "died", text): the task's outcome is in its result.json."""
        import select

        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        token = f"{time.monotonic_ns()}"
        try:
            self.proc.stdin.write(json.dumps({**task, "token": token}) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.stop()
            return "died", "the grading worker could not be started"
        deadline = time.monotonic() + timeout
        seen = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()
                return "timeout", ""
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if not ready:
                continue
            line = self.proc.stdout.readline()
            if not line:  # the worker died
                self.stop()
                return "died", "".join(seen)
            if line.strip() == f"DONE {token}":
                return "done", "".join(seen)
            seen.append(line)

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                _kill_tree(self.proc.pid)
            for stream in (self.proc.stdin, self.proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            self.proc.wait()
            self.proc = None


def _grade_one(sub: Submission, prepared: Path, work: Path, feedback_dir: Path,
               cells: dict[str, tuple[float, bool]], timeout: float,
               cell_timeout: int, workers) -> Result:
    started = time.monotonic()
    a, student = sub.assignment, sub.student
    result = Result(student, a)
    result.max_scores = {c: m for c, (m, _manual) in cells.items()}
    result.manual = [c for c, (_m, manual) in cells.items() if manual]
    result.cells = {c: None for c in cells}
    result.auto_max = float(sum(m for c, (m, manual) in cells.items() if not manual))
    course = Path(tempfile.mkdtemp(prefix="c-", dir=work))
    try:
        target = course / "submitted" / student / a / f"{a}.ipynb"
        if not _inspect(sub, prepared / "release" / a / f"{a}.ipynb", result, target):
            return result
        shutil.copy(prepared / "nbgrader_config.py", course / "nbgrader_config.py")
        shutil.copy(prepared / "gradebook.db", course / "gradebook.db")
        shutil.copytree(prepared / "source" / a, course / "source" / a)
        task = {"course": str(course), "assignment": a, "student": student,
                "cell_timeout": int(cell_timeout)}
        worker = workers.get()
        try:
            status, log = worker.run(task, timeout)
        finally:
            workers.put(worker)
        if status == "timeout":
            result.add_reason(f"评分超过 {timeout:g} 秒的时限被停止（死循环或运行太慢？）",
                              f"grading exceeded the {timeout:g} s wall-clock limit and was stopped")
            return result
        outcome_file = course / "result.json"
        outcome = json.loads(outcome_file.read_text()) if outcome_file.is_file() else None
        if outcome is None or not outcome.get("success"):
            text = json.dumps(outcome) if outcome else (log or "the grading worker died")
            if "DeadKernel" in text or "Kernel died" in text or "kernel died" in text:
                result.add_reason("运行中内核退出（如 os._exit、exit() 或内存耗尽），无法评分",
                                  "the kernel died while running the notebook "
                                  "(os._exit, crash or out of memory)")
            elif "UnresponsiveKernel" in text:
                result.add_reason("内核无响应（无法中断的死循环？），无法评分",
                                  "the kernel became unresponsive (uninterruptible loop?)")
            else:
                last = _last_line(outcome.get("error", "") if outcome else log)
                result.add_reason(f"nbgrader 评分失败：{last}", f"nbgrader autograde failed: {last}")
            return result
        for c in outcome["cells"]:
            if c["cell"] in result.cells or c["cell"] not in cells:
                result.cells[c["cell"]] = None if c["score"] is None else float(c["score"])
        if outcome.get("timeouts"):
            names = ", ".join(outcome["timeouts"])
            result.add_reason(f"有单元格运行超过 {cell_timeout} 秒被中断：{names}",
                              f"cells interrupted after {cell_timeout} s: {names}")
        html = course / "feedback" / student / a / f"{a}.html"
        if html.is_file():
            dest = feedback_dir / student / a / f"{a}.html"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(html, dest)
            result.feedback = str(Path("feedback") / student / a / f"{a}.html")
        else:
            result.add_reason("未能生成反馈 HTML", "feedback HTML could not be generated")
        result.auto_score = float(sum(s or 0.0 for c, s in result.cells.items()
                                      if c not in result.manual))
        result.status = NOTE if result.reason else OK
        return result
    except Exception as err:  # never lose the batch over one submission
        result.status = FAILED
        result.add_reason(f"评分程序内部错误：{type(err).__name__}: {err}",
                          f"internal grading error: {type(err).__name__}: {err}")
        return result
    finally:
        result.seconds = round(time.monotonic() - started, 2)
        shutil.rmtree(course, ignore_errors=True)


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return (lines[-1] if lines else "unknown error")[:200]


# ------------------------------------------------------------------ the batch


def grade_prepared(subs: list[Submission], prepared: Path, out: Path, *, jobs: int = 2,
                   timeout: float = DEFAULT_TIMEOUT, cell_timeout: int = DEFAULT_CELL_TIMEOUT,
                   progress: Progress | None = None) -> list[Result]:
    """Grade ``subs`` against an already prepared course; write the outputs into ``out``."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".grading-", dir=out.parent))
    try:
        work = staging / "courses"
        work.mkdir()
        feedback_dir = staging / "out" / "feedback"
        feedback_dir.mkdir(parents=True)
        cell_info = {a: _grade_cells(prepared, a) for a in {s.assignment for s in subs}
                     if (prepared / "source" / a).is_dir()}
        results: list[Result | None] = [None] * len(subs)
        pending = []
        for i, sub in enumerate(subs):
            if sub.assignment not in cell_info:
                res = Result(sub.student, sub.assignment)
                if sub.assignment in ASSIGNMENTS:
                    res.add_reason(f"作业 {sub.assignment} 还没有源 notebook，无法评分",
                                   f"assignment {sub.assignment} has no source notebook yet")
                else:
                    res.add_reason(f"未知的作业 {sub.assignment}",
                                   f"unknown assignment {sub.assignment!r}; expected one of "
                                   f"{', '.join(ASSIGNMENTS)}")
                results[i] = res
            else:
                pending.append(i)
        done = len(subs) - len(pending)
        if progress:
            progress(done, len(subs), "")
        jobs = max(1, min(jobs, len(pending) or 1))
        workers: queue.Queue[_Worker] = queue.Queue()
        for _ in range(jobs):
            workers.put(_Worker())
        try:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                futures = {pool.submit(_grade_one, subs[i], prepared, work, feedback_dir,
                                       cell_info[subs[i].assignment], timeout, cell_timeout,
                                       workers): i
                           for i in pending}
                for fut in as_completed(futures):
                    i = futures[fut]
                    results[i] = fut.result()
                    done += 1
                    if progress:
                        progress(done, len(subs), f"{subs[i].student}/{subs[i].assignment}")
        finally:
            while not workers.empty():
                workers.get().stop()
        final = [r for r in results if r is not None]
        write_outputs(final, staging / "out")
        _move_into(staging / "out", out)
        return final
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _move_into(src: Path, out: Path) -> None:
    """Move the finished outputs into ``out``, replacing what they replace."""
    out.mkdir(parents=True, exist_ok=True)
    for name in ("scores.csv", "scores.json"):
        os.replace(src / name, out / name)
    for student_dir in sorted((src / "feedback").iterdir()):
        for a_dir in sorted(student_dir.iterdir()):
            dest = out / "feedback" / student_dir.name / a_dir.name
            if dest.exists():
                shutil.rmtree(dest)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(a_dir), str(dest))


def _columns(results: list[Result]) -> list[tuple[str, str, str]]:
    """(column name, assignment, grade id) for every grade cell, in notebook order."""
    assignments = sorted({r.assignment for r in results}, key=_order)
    several = len(assignments) > 1
    cols, seen = [], set()
    for a in assignments:
        for r in results:
            if r.assignment != a:
                continue
            for cell in r.max_scores:
                if (a, cell) not in seen:
                    seen.add((a, cell))
                    cols.append((f"{a}/{cell}" if several else cell, a, cell))
    return cols


def _order(assignment: str) -> tuple[int, str]:
    return (ASSIGNMENTS.index(assignment) if assignment in ASSIGNMENTS else 99, assignment)


def write_outputs(results: list[Result], out: Path) -> None:
    """``scores.csv`` and ``scores.json`` for ``results`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    cols = _columns(results)
    fixed = ["student", "assignment", "status", "auto_score", "auto_max", "reason", "review"]
    with open(out / "scores.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(fixed + [name for name, _a, _c in cols])
        for r in results:
            row = [r.student, r.assignment, r.status, float(r.auto_score), float(r.auto_max),
                   r.reason, "; ".join(r.review)]
            for _name, a, cell in cols:
                value = r.cells.get(cell) if a == r.assignment else None
                row.append("" if value is None else float(value))
            writer.writerow(row)
    rows = []
    for r in results:
        row = asdict(r)
        row["cells"] = {c: (None if s is None else float(s)) for c, s in r.cells.items()}
        row["lost"] = r.lost
        rows.append(row)
    (out / "scores.json").write_text(json.dumps(rows, ensure_ascii=False, indent=2) + "\n",
                                     encoding="utf-8")


def grade(*, submissions: Path, out: Path, assignment: str | None = None, jobs: int | None = None,
          timeout: float = DEFAULT_TIMEOUT, cell_timeout: int = DEFAULT_CELL_TIMEOUT,
          root: Path | None = None, progress: Progress | None = None,
          on_prepare: Callable[[str], None] | None = None) -> list[Result]:
    """Grade every submission under ``submissions``; outputs go to ``out``."""
    root = find_root(root)
    subs = find_submissions(Path(submissions), assignment)
    if timeout <= 0 or cell_timeout <= 0:
        raise CourseError("timeouts must be positive numbers of seconds")
    wanted = sorted({s.assignment for s in subs
                     if s.assignment in ASSIGNMENTS
                     and (root / "source" / s.assignment / f"{s.assignment}.ipynb").is_file()},
                    key=_order)
    with tempfile.TemporaryDirectory(prefix="autograder-prepared-") as tmp:
        if on_prepare:
            on_prepare(", ".join(wanted))
        prepared = prepare(Path(tmp) / "course", root, wanted) if wanted else Path(tmp)
        return grade_prepared(subs, prepared, Path(out), jobs=jobs or default_jobs(),
                              timeout=timeout, cell_timeout=cell_timeout, progress=progress)


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


# ------------------------------------------------------------------ the worker


def _worker(course: Path, assignment: str, student: str, cell_timeout: int) -> None:
    """Autograde + feedback in ``course`` (in this process), scores to result.json."""
    os.chdir(course)
    import nbformat
    from nbgrader.apps import NbGraderAPI
    from nbgrader.apps.nbgraderapp import NbGraderApp
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    from .course import read_scores

    outcome: dict = {"success": False}
    try:
        app = NbGraderApp()
        app.initialize([])
        extra = Config()
        extra.Execute.timeout = int(cell_timeout)
        app.update_config(extra)
        coursedir = CourseDirectory(parent=app)
        api = NbGraderAPI(coursedir=coursedir, parent=app)
        done = api.autograde(assignment, student, force=True, create=True)
        if not done.get("success"):
            outcome = {"success": False, "error": done.get("error", ""),
                       "log": done.get("log", "")[-4000:]}
        else:
            graded = course / "autograded" / student / assignment / f"{assignment}.ipynb"
            timeouts = []
            if graded.is_file():
                nb = nbformat.read(str(graded), as_version=4)
                for index, cell in enumerate(nb.cells):
                    for output in cell.get("outputs", []):
                        if output.get("ename") == "CellTimeoutError":
                            gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                            timeouts.append(gid or f"cell {index + 1}")
            fb = api.generate_feedback(assignment, student, force=True)
            outcome = {"success": True, "feedback": bool(fb.get("success")),
                       "timeouts": timeouts,
                       "cells": [{"cell": c.cell, "score": c.score, "max": c.max_score,
                                  "manual": c.manual}
                                 for c in read_scores(course, assignment, student)]}
    except Exception as err:  # report whatever happened
        import traceback

        outcome = {"success": False, "error": traceback.format_exc()[-4000:],
                   "kind": type(err).__name__}
    (course / "result.json").write_text(json.dumps(outcome))


def _serve() -> int:
    """The worker loop: one JSON task per stdin line, ``DONE <token>`` when it is graded."""
    import logging

    import nbgrader.apps  # noqa: F401 - the slow import, once per worker

    logging.disable(logging.WARNING)
    home = os.getcwd()
    for line in sys.stdin:
        if not line.strip():
            continue
        task = json.loads(line)
        try:
            _worker(Path(task["course"]), task["assignment"], task["student"],
                    int(task["cell_timeout"]))
        finally:
            os.chdir(home)
        print(f"DONE {task['token']}", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover - the worker subprocess
    sys.exit(_serve())
