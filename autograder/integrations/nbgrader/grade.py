"""``autograder grade`` into an nbgrader course: results where nbgrader keeps them.

1. Discovery: ``<student>/<assignment>/`` folders (nbgrader's ``submitted/`` layout).
2. Grading: :func:`autograder.grading.batch.grade_submissions` on ``jobs`` workers.
3. Outputs, written only once everything is graded:

   - in ``out``: ``scores.csv`` / ``scores.json`` (:mod:`autograder.grading.scores`),
     ``feedback/<student>/<a>/<a>.html`` and ``grading.log``;
   - in the nbgrader course (the folder holding ``submitted/``, else ``out``):
     ``autograded/<student>/<a>/`` and the scores in ``gradebook.db``
     (:mod:`autograder.engine.host.gradebook`).

Each submission's gradebook rows and pages are kept as soon as it is graded (through the
batch's guard: one that fails costs that row its status, never the batch); pages are
staged and moved into place at the end, so nothing is half-written. A Canvas or Moodle
download is laid out first by :mod:`autograder.integrations.lms.intake`, which then
grades the layout here.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ...engine.host.files import move_into
from ...engine.host.gradebook import GradebookWriter, check_gradebook
from ...engine.host.manifest import load
from ...engine.host.pool import Submission, start_zygote
from ...engine.host.protection import Verdict, decide
from ...errors import CourseError
from ...grading.batch import Progress, Result, grade_submissions
from ...grading.guard import Guard, Key, Remark
from ...grading.salt import load_salt
from ...grading.scores import write_outputs
from ...settings import (
    ASSIGNMENTS,
    DEFAULTS,
    PRACTICE_SALT,
    GradeSettings,
    RowStatus,
    check_assignment,
    course_setting,
)

__all__ = ["find_submissions", "course_root", "default_jobs", "grade"]

log = logging.getLogger("autograder")


def find_submissions(submissions: Path, assignment: str | None = None) -> list[Submission]:
    """``<student>/<assignment>/`` folders under ``submissions`` (or its ``submitted/``)."""
    submissions = Path(submissions)
    if not submissions.is_dir():
        raise CourseError(f"submissions folder {submissions} does not exist: give the folder "
                          "laid out as submitted/<student>/<assignment>/<assignment>.ipynb, "
                          "or a Canvas/Moodle download (.zip)")
    if (submissions / "submitted").is_dir():
        submissions = submissions / "submitted"
    elif any((submissions / name).exists() for name in COURSE_MARKS):
        raise CourseError(f"{submissions} is a course folder without submitted/: give the "
                          "folder of the submissions (nbgrader collect puts them in submitted/)")
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
    if not any(s.assignment in ASSIGNMENTS for s in found):  # not a submissions folder
        found = []
    if not found:
        which = f" for {assignment}" if assignment else ""
        raise CourseError(f"no submissions{which} in {submissions}: expected "
                          "<student>/<assignment>/<assignment>.ipynb folders")
    return found


#: What only a course folder holds (never a student's name in ``submitted/``).
COURSE_MARKS = ("nbgrader_config.py", "gradebook.db", "release", "source")


def _protection(settings: GradeSettings, course: Path, out: Path, submissions: Path,
                said: Callable[[Verdict], None] | None) -> tuple[GradeSettings, Verdict]:
    """The protection decided once, before anything is written (refused: one line;
    else ``said`` hears it);
    ``c.Autograder.allow_unprotected`` in the course's config counts as ``--unprotected``."""
    verdict = decide(isolate=settings.isolate, private=[course, out, Path(submissions)])
    if not settings.allow_unprotected and course_setting(course, "allow_unprotected", False):
        settings = replace(settings, allow_unprotected=True)
    verdict.require(settings.allow_unprotected)
    if said:
        said(verdict)
    return settings, verdict


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


def grade(*, submissions: Path, out: Path, assignment: str | None = None, jobs: int | None = None,
          settings: GradeSettings = DEFAULTS, salt_file: Path | None = None,
          progress: Progress | None = None,
          remarks: dict[Key, Remark] | None = None,
          on_protection: Callable[[Verdict], None] | None = None) -> list[Result]:
    """Grade every submission under ``submissions`` (nbgrader's layout); see the module
    docstring for the outputs. ``remarks`` are what an intake says about submissions
    (:mod:`autograder.integrations.lms.intake`). ``on_protection`` hears the protection
    decided before grading (:mod:`autograder.engine.host.protection`).

    ``settings.salt`` is used as given when it is not the public practice salt;
    otherwise the course's secret salt is read (or created) by :mod:`autograder.grading.salt`.
    """
    subs = find_submissions(Path(submissions), assignment)
    out = Path(out).resolve()
    course = course_root(Path(submissions), out)
    settings, verdict = _protection(settings, course, out, submissions, on_protection)
    # reading a gradebook imports nbgrader (1 s): the zygote imports (and, for a batch of
    # pool.WARM_UP_FROM or more, warms up) in its own process meanwhile (without one, the
    # engine starts it when it needs it)
    zygote = start_zygote(verdict, notebooks=len(subs)) \
        if (course / "gradebook.db").is_file() else None
    try:
        return _grade(subs, out, course, settings, verdict, zygote, jobs=jobs,
                      salt_file=salt_file, progress=progress, remarks=remarks)
    finally:
        if zygote is not None:
            zygote.close()


def _grade(subs: list, out: Path, course: Path, settings: GradeSettings, verdict: Verdict,
           zygote, *, jobs: int | None, salt_file: Path | None, progress: Progress | None,
           remarks: dict[Key, Remark] | None) -> list[Result]:
    manifests = {a: load(a) for a in {s.assignment for s in subs} if a in ASSIGNMENTS}
    # a gradebook that cannot take these scores is refused before anything is written
    check_gradebook(course / "gradebook.db", manifests)
    if settings.salt == PRACTICE_SALT:
        settings = replace(settings, salt=load_salt(course=course, salt_file=salt_file))
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
                    started=writer.start, on_graded=arrived, remarks=remarks, guard=guard,
                    verdict=verdict, zygote=zygote)
                for key, why in writer.drain().items():
                    guard.fail(key, "gradebook.db", why)
                guard.mark(results, RowStatus.GRADER_ERROR)
                for result, graded in zip(results, records):
                    if graded is not None and (staging / "out" / _feedback_path(graded)).is_file():
                        result.feedback = str(_feedback_path(graded))
                write_outputs(results, staging / "out")
            except BaseException:
                writer.abort()
                raise
            writer.close()
            if (staging / "autograded").is_dir():
                move_into(staging / "autograded", course / "autograded", depth=2)
            move_into(staging / "out", out, depth=3)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return results
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        handler.close()
