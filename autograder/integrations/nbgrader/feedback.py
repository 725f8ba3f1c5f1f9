"""``autograder feedback COURSE``: every student's page again, after hand grading.

nbgrader's route is ``autograde`` -> formgrader (manual scores, comments) ->
``generate_feedback`` -> ``release_feedback``. ``generate_feedback`` writes nbgrader's
own page (its MathJax from a CDN, our verdicts as raw tracebacks); this command writes
OURS in its place, from what the course already holds and without running any student
code again:

- ``autograded/<student>/<a>/<a>.ipynb``: the notebook ``autograder grade`` ran, with
  the host's record of every cell (:mod:`autograder.engine.host.graded_record`);
- ``gradebook.db``: the instructor's scores and comments
  (:mod:`autograder.engine.host.hand_grades`).

Each page goes where ``generate_feedback`` puts its own and ``release_feedback`` looks:
``feedback/<student>/<a>/<a>.html``, with the ``timestamp.txt`` and
``submission_secret.txt`` of the autograded submission beside it (``release_feedback``
names the released file by a hash of that secret, and ``fetch_feedback`` finds it so).
Every page is rendered before any is written, and each folder is replaced whole, so a
failure leaves the old pages as they were. An autograded notebook that cannot be read
back costs only its own page: it is left out with a one-line note, every other page is
written. Each page is bounded in time and work (:class:`~.feedback_page.Budget`).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ...engine.host.feedback_page import render_feedback
from ...engine.host.files import move_into, read_at_most
from ...engine.host.gradebook import open_gradebook
from ...engine.host.graded_record import MAX_AUTOGRADED, RecordMissing, read_back, restore
from ...engine.host.hand_grades import apply_hand_grades, read_hand_grades
from ...engine.host.job import Job
from ...engine.host.manifest import load
from ...engine.host.stop import Stop
from ...errors import CourseError
from ...settings import ASSIGNMENTS, DEFAULTS, check_assignment

__all__ = ["Written", "write_feedback", "NBGRADER_FILES"]

log = logging.getLogger("autograder")

#: The files of a submission ``release_feedback`` reads beside the page.
NBGRADER_FILES = ("timestamp.txt", "submission_secret.txt")


@dataclass
class Written:
    """What :func:`write_feedback` wrote: the pages, those with hand grades in them,
    and the submissions ``release_feedback`` cannot release (no secret beside them)."""

    pages: list[Path] = field(default_factory=list)
    hand_graded: list[str] = field(default_factory=list)
    unreleasable: list[str] = field(default_factory=list)
    not_in_gradebook: list[str] = field(default_factory=list)
    #: One line per autograded notebook left out: "student/assignment: why, what to do".
    unreadable: list[str] = field(default_factory=list)

    def report(self) -> str:
        """What the command prints: the count, then what the instructor should know."""
        lines = [f"wrote {len(self.pages)} feedback page(s) "
                 f"({len(self.hand_graded)} with hand grades or comments)"]
        for what, keys in (("not in gradebook.db, automatic scores only", self.not_in_gradebook),
                           ("no submission_secret.txt, so nbgrader release_feedback cannot "
                            "release them (nbgrader submit/collect writes it)", self.unreleasable)):
            if keys:
                lines.append(f"{what}: {', '.join(keys)}")
        lines += [f"no page for {line}" for line in self.unreadable]
        return "\n".join(lines)


def _autograded(course: Path, assignment: str | None, student: str | None) -> list[tuple[str, str]]:
    """(student, assignment) of every autograded notebook, filtered."""
    top = course / "autograded"
    if not top.is_dir():
        raise CourseError(f"{top} does not exist: grade the course first "
                          f"(autograder grade {course / 'submitted'})")
    found = [(s.name, a) for s in sorted(top.iterdir())
             if s.is_dir() and not s.is_symlink() and not s.name.startswith(".")
             for a in ASSIGNMENTS if (s / a / f"{a}.ipynb").is_file()
             and (assignment is None or a == assignment) and (student is None or s.name == student)]
    if not found:
        which = " ".join(f"--{k} {v}" for k, v in (("assignment", assignment),
                                                   ("student", student)) if v)
        raise CourseError(f"no autograded notebooks in {top}{' for ' + which if which else ''}: "
                          "check the names, or grade the course first")
    return found


class Unreadable(Exception):
    """An autograded notebook that cannot be read back: its page is left out."""


def _job(course: Path, student: str, assignment: str) -> Job:
    """The graded submission, restored from its autograded notebook (read as hostile)."""
    folder = course / "autograded" / student / assignment
    path = folder / f"{assignment}.ipynb"
    manifest = load(assignment)
    try:
        nb = read_back(read_at_most(path, MAX_AUTOGRADED), manifest)
        return restore(Job(student, assignment, folder, manifest, DEFAULTS), nb)
    except (OSError, Stop, RecordMissing) as err:
        why = err.note.en if isinstance(err, Stop) else str(err)
        raise Unreadable(f"{student}/{assignment}: {path} cannot be read back ({why}); "
                         "grade it again with autograder grade") from None


def _small_file(path: Path) -> bytes | None:
    try:
        raw = read_at_most(path, 4096)
    except OSError:
        return None
    return raw if len(raw) <= 4096 else None


def _stage(course: Path, staging: Path, key: tuple[str, str], page: str) -> bool:
    """One page and nbgrader's files into ``staging``; False when no secret came."""
    student, a = key
    folder = staging / student / a
    folder.mkdir(parents=True)
    (folder / f"{a}.html").write_text(page, encoding="utf-8")
    found = {}
    for name in NBGRADER_FILES:  # the autograded copy, as generate_feedback reads it
        for where in (course / "autograded", course / "submitted"):
            if (data := _small_file(where / student / a / name)) is not None:
                found[name] = data
                break
    for name, data in found.items():
        (folder / name).write_bytes(data)
    return "submission_secret.txt" in found


def _render(course: Path, keys: list[tuple[str, str]], written: Written) -> dict:
    """Every page, rendered before any is written; the gradebook only read."""
    from sqlalchemy.exc import SQLAlchemyError

    pages = {}
    try:
        with open_gradebook(course / "gradebook.db") as gb:
            for key in keys:
                try:
                    job = _job(course, *key)
                except Unreadable as err:  # this student's page only
                    written.unreadable.append(str(err))
                    log.warning("feedback: %s", err)
                    continue
                hand = read_hand_grades(gb, student=key[0], assignment=key[1])
                if hand is None:
                    written.not_in_gradebook.append("/".join(key))
                else:
                    apply_hand_grades(job, hand)
                    if hand.scores or hand.comments:
                        written.hand_graded.append("/".join(key))
                pages[key] = render_feedback(job)
    except SQLAlchemyError as err:
        raise CourseError(f"{course / 'gradebook.db'} cannot be read ({type(err).__name__}): "
                          "give the gradebook nbgrader and autograder grade wrote") from None
    return pages


def write_feedback(*, course: Path, assignment: str | None = None,
                   student: str | None = None) -> Written:
    """Render every (or one assignment's, one student's) feedback page of the nbgrader
    ``course`` from its autograded notebooks and ``gradebook.db``, into
    ``feedback/<student>/<assignment>/`` (see the module docstring)."""
    course = Path(course).resolve()
    if assignment is not None:
        check_assignment(assignment)
    if not (course / "gradebook.db").is_file():
        raise CourseError(f"no gradebook.db in {course}: give the nbgrader course folder "
                          "(the one holding submitted/ and autograded/)")
    keys = _autograded(course, assignment, student)
    written = Written()
    pages = _render(course, keys, written)
    feedback = course / "feedback"
    feedback.mkdir(exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".feedback-", dir=feedback))
    try:
        for key, page in pages.items():
            if not _stage(course, staging, key, page):
                written.unreleasable.append("/".join(key))
        move_into(staging, feedback, depth=2)  # each <student>/<a>/ replaced whole
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    written.pages = [feedback / s / a / f"{a}.html" for s, a in pages]
    log.info("feedback: %d page(s) written to %s (%d with hand grades)", len(pages), feedback,
             len(written.hand_graded))
    return written
