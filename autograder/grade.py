"""``autograder grade``: a class graded by the trusted engine, results where nbgrader keeps them.

1. Discovery: ``<student>/<assignment>/`` folders (nbgrader's ``submitted/`` layout).
2. Grading: :mod:`autograder.engine` on ``jobs`` workers; each submission's code runs in
   a sandboxed child, every check in the grader (see the engine's docstrings).
3. Outputs, written only once everything is graded:

   - in ``out``: ``scores.csv`` / ``scores.json`` (one row per submission: status,
     reason, automatic total, one column per grade cell), ``feedback/<student>/<a>/<a>.html``
     and ``grading.log``;
   - in the nbgrader course (the folder holding ``submitted/``, else ``out``):
     ``autograded/<student>/<a>/`` and the scores in ``gradebook.db``.

A broken, looping or hostile submission gets its own row with the reason; a bug in a
check marks the row ``grader-error`` (traceback in the log) instead of scoring 0.

No single submission stops the batch: every step the parent takes per submission (its
record as it arrives, its row, its staged pages, its gradebook rows) runs through
:class:`Guard`, so a step that fails costs that submission its row's status
(``grader-error``) and a reason, and the others go on. An LMS file the intake refused
(:mod:`autograder.lms`) has a ``refused`` row: not graded, left blank by the export.
"""

from __future__ import annotations

import contextlib
import csv
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .course import ASSIGNMENTS, CourseError, check_assignment
from .engine.settings import DEFAULTS, GradeSettings
from .engine.stop import printable
from .guard import Guard, Key, Remark

__all__ = ["Submission", "Result", "Remark", "Guard", "find_submissions", "grade",
           "grade_submissions", "write_outputs", "course_root", "default_jobs", "OK", "NOTE",
           "FAILED", "GRADER_ERROR", "REFUSED"]

log = logging.getLogger("autograder")

OK, NOTE, FAILED, GRADER_ERROR, REFUSED = "ok", "note", "failed", "grader-error", "refused"
Progress = Callable[[int, int, str], None]


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
    #: Student code that tries to reach the grader (harmless in the sandbox; for review).
    review: list[str] = field(default_factory=list)
    #: Grade cells whose check broke (the instructor's to look at; see grading.log).
    grader_errors: list[str] = field(default_factory=list)
    #: Automatic points and their maximum per part: ``core`` and each graded 拓展 section.
    parts: dict[str, dict[str, float]] = field(default_factory=dict)
    #: Test cells of practice 拓展 sections: grade id -> status (checked, never scored).
    practice: dict[str, str] = field(default_factory=dict)

    @property
    def failed_practice(self) -> set[str]:
        """Practice cells (ungraded 拓展) whose checks did not pass."""
        return {c for c, status in self.practice.items() if status != "passed"}

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


# ------------------------------------------------------------------ discovery


def find_submissions(submissions: Path, assignment: str | None = None) -> list[Submission]:
    """``<student>/<assignment>/`` folders under ``submissions`` (or its ``submitted/``)."""
    submissions = Path(submissions)
    if not submissions.is_dir():
        raise CourseError(f"submissions folder {submissions} does not exist: give the folder "
                          "laid out as submitted/<student>/<assignment>/<assignment>.ipynb, "
                          "or a Canvas/Moodle download (.zip)")
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


def course_root(submissions: Path, out: Path) -> Path:
    """Where nbgrader's ``autograded/`` and ``gradebook.db`` go: the course holding the
    ``submitted/`` folder, else the output folder."""
    submissions = Path(submissions).resolve()
    if submissions.name == "submitted":
        return submissions.parent
    if (submissions / "submitted").is_dir():
        return submissions
    return Path(out).resolve()


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


# ------------------------------------------------------------------ grading


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
    for note in graded.notes:
        result.add_reason(note.zh, note.en)
    if graded.crashed:
        result.status = GRADER_ERROR
        result.add_reason("评分程序内部错误，已记录在 grading.log", "internal grading error "
                          f"(see grading.log): {graded.crashed.strip().splitlines()[-1][:200]}")
        log.error("%s/%s: grading crashed:\n%s", sub.student, sub.assignment, graded.crashed)
        return result
    if graded.stopped:
        return result
    for cell in graded.cells:
        result.cells[cell.grade_id] = cell.score
        if cell.status == "error":
            result.grader_errors.append(cell.grade_id)
        if not cell.manual and cell.part in result.parts:
            result.parts[cell.part]["score"] += cell.score or 0.0
    result.practice = {cell.grade_id: cell.status for cell in graded.practice}
    result.auto_score = float(sum(s or 0.0 for c, s in result.cells.items()
                                  if c not in result.manual))
    if result.grader_errors:
        result.status = GRADER_ERROR
        result.add_reason(f"检查程序出错，以下单元格暂未计分：{', '.join(result.grader_errors)}",
                          f"a check broke; not scored: {', '.join(result.grader_errors)} "
                          "(traceback in grading.log)")
    else:
        result.status = NOTE if result.reason else OK
    return result


def _refused(sub: Submission, manifest, remark: Remark) -> Result:
    result = _skeleton(sub, manifest)
    result.status = REFUSED
    for zh, en in remark.notes:
        result.add_reason(zh, en)
    return result


def _with_remark(result: Result, remark: Remark | None) -> Result:
    for zh, en in remark.notes if remark else ():
        result.add_reason(zh, en)
        if result.status == OK:
            result.status = NOTE
    return result


def grade_submissions(subs: list[Submission], *, settings: GradeSettings, jobs: int,
                      progress: Progress | None = None,
                      started: Callable[[], None] | None = None,
                      on_graded: Callable[[object], None] | None = None,
                      remarks: dict[Key, Remark] | None = None,
                      guard: Guard | None = None) -> tuple[list[Result], list]:
    """Grade ``subs``; returns the table rows and the engine's records (same order).
    ``started`` runs once the grading workers exist (see :func:`.engine.pool.grade_tasks`);
    ``on_graded`` gets each engine record as soon as it is done; ``remarks`` come from
    the intake; ``guard`` keeps what failed per submission (the caller may add more
    and mark the rows again)."""
    from .engine.pool import Task, grade_tasks

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
        tasks.append(Task(sub.student, sub.assignment, sub.folder))
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
    records = grade_tasks(tasks, settings, jobs=jobs, progress=tick, started=started)
    engine_records: list = [None] * len(subs)
    for i, graded in zip(where, records):
        sub, key = subs[i], (subs[i].student, subs[i].assignment)
        manifest = manifests[sub.assignment]
        row = guard.run(key, "row", _result, sub, manifest, graded) or _skeleton(sub, manifest)
        row.review = [printable(r, 300) for r in graded.review[:20]]
        results[i] = _with_remark(row, remarks.get(key))
        engine_records[i] = graded
    guard.mark(results, GRADER_ERROR)
    return results, engine_records


def _manifest(manifests: dict, assignment: str):
    """The manifest of ``assignment`` (None for an unknown one), loaded once."""
    from .engine.manifest import ManifestError, load

    if assignment not in ASSIGNMENTS:
        return None
    try:
        manifests[assignment] = manifests.get(assignment) or load(assignment)
    except ManifestError as err:
        raise CourseError(str(err)) from None
    return manifests[assignment]


# ------------------------------------------------------------------ outputs


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
    fixed = ["student", "assignment", "status", "auto_score", "auto_max", "core_score",
             "core_max", "extension_score", "extension_max", "reason", "review"]
    with open(out / "scores.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(fixed + [name for name, _a, _c in cols])
        for r in results:
            row = [printable(r.student), printable(r.assignment), r.status,
                   float(r.auto_score), float(r.auto_max),
                   *map(float, r.part_total(False)), *map(float, r.part_total(True)),
                   printable(r.reason, 10_000), printable("; ".join(r.review), 10_000)]
            for _name, a, cell in cols:
                value = r.cells.get(cell) if a == r.assignment else None
                row.append("" if value is None else float(value))
            writer.writerow(row)
    rows = []
    for r in results:
        row = {k: printable(v, 10_000) if isinstance(v, str) else v for k, v in asdict(r).items()}
        row["review"] = [printable(x, 300) for x in r.review]
        row["cells"] = {c: (None if s is None else float(s)) for c, s in r.cells.items()}
        row["lost"] = r.lost
        rows.append(row)
    (out / "scores.json").write_text(json.dumps(rows, ensure_ascii=False, indent=2) + "\n",
                                     encoding="utf-8")


def _stage(graded, staging: Path) -> None:
    """One submission's feedback page and autograded notebook (with its data files)
    into ``staging``, as soon as it is graded; what failed halfway is removed again."""
    if graded is None or graded.notebook is None:
        return
    a, rel = graded.task.assignment, Path(graded.task.student) / graded.task.assignment
    page = staging / "out" / _feedback_path(graded)
    folder = staging / "autograded" / rel
    try:
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(graded.feedback, encoding="utf-8")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{a}.ipynb").write_text(graded.notebook, encoding="utf-8")
        for name in graded.files:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(graded.task.folder / name, folder / name)
    except BaseException:
        for made in (page.parent, folder):  # this submission's folders, then empty parents
            shutil.rmtree(made, ignore_errors=True)
            with contextlib.suppress(OSError):
                made.parent.rmdir()
        raise


def _feedback_path(graded) -> Path:
    a = graded.task.assignment
    return Path("feedback") / graded.task.student / a / f"{a}.html"


def _move_into(src: Path, dest: Path, depth: int) -> None:
    """Move ``src``'s tree into ``dest``, replacing each ``depth``-level folder whole."""
    dest.mkdir(parents=True, exist_ok=True)
    for item in sorted(src.iterdir()):
        target = dest / item.name
        if item.is_dir() and depth > 1:
            _move_into(item, target, depth - 1)
            continue
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
        shutil.move(str(item), str(target))


def grade(*, submissions: Path, out: Path, assignment: str | None = None, jobs: int | None = None,
          settings: GradeSettings = DEFAULTS, salt_file: Path | None = None,
          progress: Progress | None = None,
          remarks: dict[Key, Remark] | None = None) -> list[Result]:
    """Grade every submission under ``submissions``; see the module docstring for outputs.

    ``submissions`` may also be a Canvas or Moodle download (zip or folder): see
    :mod:`autograder.lms`; the results then carry the LMS's own student ids, and the
    intake's ``remarks``.

    ``settings.salt`` is used as given when it is not the public practice salt;
    otherwise the course's secret salt is read (or created) by :mod:`autograder.salt`.
    """
    from dataclasses import replace

    from .engine.gradebook import GradebookWriter
    from .engine.manifest import ManifestError, load
    from .engine.settings import PRACTICE_SALT
    from .lms import grade_download, is_download
    from .salt import load_salt

    if is_download(Path(submissions)):  # a Canvas/Moodle download (zip or folder)
        return grade_download(submissions=Path(submissions), out=out, assignment=assignment,
                              jobs=jobs, settings=settings, salt_file=salt_file,
                              progress=progress)
    subs = find_submissions(Path(submissions), assignment)
    out = Path(out).resolve()
    course = course_root(Path(submissions), out)
    if settings.salt == PRACTICE_SALT:
        settings = replace(settings, salt=load_salt(course=course, salt_file=salt_file))
    try:
        manifests = {a: load(a) for a in {s.assignment for s in subs} if a in ASSIGNMENTS}
    except ManifestError as err:
        raise CourseError(str(err)) from None
    out.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(out / "grading.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("autograder")
    level = logger.level
    logger.setLevel(min(logger.getEffectiveLevel(), logging.INFO))  # the log keeps every step
    logger.addHandler(handler)
    writer = GradebookWriter(course / "gradebook.db", manifests)
    staging = Path(tempfile.mkdtemp(prefix=".grading-", dir=out))
    guard = Guard()

    def arrived(graded) -> None:  # each record is kept as soon as it is graded
        key = (graded.task.student, graded.task.assignment)
        guard.run(key, "gradebook.db", writer.add, graded)
        guard.run(key, "feedback and autograded/", _stage, graded, staging)

    try:
        try:
            try:
                results, records = grade_submissions(
                    subs, settings=settings, jobs=jobs or default_jobs(), progress=progress,
                    started=writer.start, on_graded=arrived, remarks=remarks, guard=guard)
                for key, why in writer.drain().items():
                    guard.fail(key, "gradebook.db", why)
                guard.mark(results, GRADER_ERROR)
                for result, graded in zip(results, records):
                    if graded is not None and (staging / "out" / _feedback_path(graded)).is_file():
                        result.feedback = str(_feedback_path(graded))
                write_outputs(results, staging / "out")
            except BaseException:
                writer.abort()
                raise
            writer.close()
            if (staging / "autograded").is_dir():
                _move_into(staging / "autograded", course / "autograded", depth=2)
            _move_into(staging / "out", out, depth=3)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return results
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        handler.close()
