"""LMS bulk downloads in: Canvas's and Moodle's "download all submissions", as an nbgrader class.

``autograder grade`` accepts, besides nbgrader's ``submitted/<student>/<assignment>/``:

- **Canvas** ("Download Submissions", a zip of flat files):
  ``<name>_<userid>_<attachmentid>_<filename>``, with ``LATE_`` before the user id
  (or at the start) for late work, ``anon_<id>`` instead of name and user id under
  anonymous grading, and ``-1``, ``-2`` appended by Canvas to re-uploaded file names;
- **Moodle** (assignment "Download all submissions"): one folder per participant,
  ``<Full Name>_<participantid>_assignsubmission_file_/<filename>``, or the older flat
  files ``<Full Name>_<participantid>_assignsubmission_file_<filename>``.

The zip is read safely (no absolute or ``..`` paths, no links, bounded sizes; only
``.ipynb`` members are written) and each notebook becomes
``<student>/<assignment>/<file>`` in a temporary nbgrader layout, where the student is
the LMS's own id (Canvas user id, Moodle participant id), read from the LMS's own
fields (:mod:`autograder.integrations.lms.names`). The assignment comes from ``assignment``, else
the file name, else the notebook's cells. A roster (``lms.json`` beside the scores)
keeps the names, late flags and file names for ``autograder export``.

No file decides another student's grade, and nothing is resolved silently: each is a
:class:`~autograder.grading.guard.Remark` on the student's row.

- A file whose name parses two ways (the uploaded name is another student's download
  name) is *refused*: not graded, and its row (under the LMS's own id) says why. The
  student it names is graded on their own notebook.
- A student with several notebooks for one assignment is graded on the latest (Canvas:
  highest attachment id, a file named as the assignment first), and the row names the
  others, which were not graded.
- One id under two names (a forged or merged download) is refused, every file of it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from ...engine.host.files import find_notebooks
from ...errors import CourseError
from ...grading.guard import Remark
from ...settings import ASSIGNMENTS, MAX_NOTEBOOK_BYTES, check_assignment
from ..nbgrader.grade import find_submissions
from ..nbgrader.grade import grade as grade_layout
from .names import CANVAS, MOODLE_DIR, MOODLE_FILE, Entry, conflicting, parse_name
from .unzip import member_name, open_zip, unpack

__all__ = ["Entry", "Intake", "parse_name", "is_download", "check_download", "open_download",
           "Batch", "opened", "grade", "read_roster", "ROSTER"]

log = logging.getLogger("autograder")

ROSTER = "lms.json"
#: Canvas appends -1, -2 ... to a file name the student uploaded again.
REUPLOAD = re.compile(r"-\d+$")


@dataclass
class Intake:
    """A download laid out for grading: ``folder`` holds ``<student>/<assignment>/``;
    ``remarks`` what the rows must say (files not graded, and why)."""

    lms: str
    folder: Path
    students: dict[str, dict] = field(default_factory=dict)
    remarks: dict[tuple[str, str], Remark] = field(default_factory=dict)


def _looks_like_lms(names: list[str]) -> bool:
    return any(MOODLE_DIR.match(n) or MOODLE_FILE.match(n) or
               (n.lower().endswith(".ipynb") and CANVAS.match(n)) for n in names)


def is_download(path: Path) -> bool:
    """A file (a zip, to be checked) or a folder named as an LMS download names its parts."""
    path = Path(path)
    if path.is_file():
        return True
    if not path.is_dir():
        return False
    children = [p for p in path.iterdir() if not p.name.startswith(".")]
    if len(children) == 1 and children[0].is_dir():  # the download unpacked into a folder
        children += list(children[0].iterdir())
    return _looks_like_lms([p.name for p in children])


def _count_notebooks(path: Path, assignment: str | None) -> int:
    """Fail early on a missing file, a non-zip or no notebooks; returns the count."""
    path = Path(path)
    if assignment is not None:
        check_assignment(assignment)
    if path.is_file():
        with open_zip(path) as zf:
            names = [member_name(i) for i in zf.infolist() if not i.is_dir()]
        count = sum(n.lower().endswith(".ipynb") for n in names)
    else:
        count = len(find_notebooks(path, recursive=True))
    if not count:
        raise CourseError(f"no notebooks (.ipynb) in {path}: download the submissions of the "
                          "notebook assignment (Canvas: Download Submissions; Moodle: "
                          "Download all submissions)")
    return count


# ------------------------------------------------------------------ assignments


def _guess(entry: Entry) -> str | None:
    """The assignment from the file name (Canvas's -N removed), else from the cells."""
    import nbformat

    from ...engine.host.manifest import detect_assignment

    stem = REUPLOAD.sub("", Path(entry.filename).stem)
    try:
        nb = nbformat.reads(entry.source.read_text(encoding="utf-8"), as_version=4)
    except Exception:  # unreadable: the name alone decides, the grader reports the rest
        nb = nbformat.v4.new_notebook()
    try:
        return detect_assignment(Path(f"{stem}.ipynb"), nb)
    except CourseError:
        return None


def _assign(entries: list[Entry], forced: str | None) -> None:
    """Set each entry's assignment; one the batch cannot place is an error."""
    for e in entries:
        e.assignment = check_assignment(forced) if forced else _guess(e)
    known = {e.assignment for e in entries} - {None}
    for e in entries:
        if e.assignment is None and len(known) == 1:
            e.assignment = next(iter(known))
        elif e.assignment is None:
            raise CourseError(f"cannot tell which assignment {e.source.name} is: pass "
                              f"--assignment (one of {', '.join(ASSIGNMENTS)})")


def _target_name(entry: Entry) -> str:
    """``<assignment>.ipynb`` when the student named it so (Canvas's -N aside), else a
    sanitized version of their own name (the grader then notes the wrong name)."""
    stem = REUPLOAD.sub("", Path(entry.filename).stem)
    if stem == entry.assignment:
        return f"{stem}.ipynb"
    safe = re.sub(r"[^\w.() -]", "_", Path(entry.filename).name)[-100:]
    return safe if safe.endswith(".ipynb") else f"{safe}.ipynb"


_LMS = {"canvas": "Canvas", "moodle": "Moodle"}


def _refusals(group: list[Entry], students: set[str]) -> dict[int, tuple[str, str]]:
    """Why each refused entry of one (student, assignment) is refused, by its index."""
    names = sorted({e.name for e in group})
    if len(names) > 1:  # no LMS names one id twice: forged, or two downloads merged
        both = "、".join(names)
        why = (f"本次下载中同一个学号 {group[0].student} 对应多个姓名（{both}），未评分：请重新下载",
               f"the download names {_LMS[group[0].lms]} id {group[0].student} as "
               f"{' and '.join(map(repr, names))}: not graded; download the submissions again")
        return dict.fromkeys(range(len(group)), why)
    refused = {}
    for i, e in enumerate(group):
        if e.too_large:
            mb = MAX_NOTEBOOK_BYTES >> 20
            refused[i] = (f"上传的文件“{e.filename}”超过 {mb} MB，未评分：请学生重新上传，或人工评分",
                          f"the uploaded file {e.filename!r} is larger than {mb} MB: not "
                          "graded; ask for a new upload or grade it by hand")
        elif others := conflicting(e, students):
            ids = ", ".join(others)
            refused[i] = (f"上传的文件名“{e.filename}”也可读作另一位学生（{ids}）的下载文件名，"
                          f"未评分：请在 {_LMS[e.lms]} 中核对后人工评分",
                          f"the uploaded file name {e.filename!r} also reads as the download "
                          f"name of another student ({ids}): not graded; check it in "
                          f"{_LMS[e.lms]} and grade it by hand")
    return refused


def _layout(entries: list[Entry], folder: Path) -> tuple[dict[str, dict], dict]:
    """One notebook per (student, assignment) into ``folder``; returns the roster and
    the rows' remarks (see the module docstring)."""
    groups: dict[tuple[str, str], list[Entry]] = {}
    for e in entries:
        groups.setdefault((e.student, e.assignment), []).append(e)
    ids = {e.student for e in entries}
    students: dict[str, dict] = {}
    remarks: dict[tuple[str, str], Remark] = {}
    for (student, assignment), group in sorted(groups.items()):
        refused = _refusals(group, ids)
        usable = sorted((e for i, e in enumerate(group) if i not in refused),
                        key=lambda e: (_target_name(e) == f"{assignment}.ipynb", e.order,
                                       e.filename))
        row = students.setdefault(student, {"name": group[0].name, "late": False,
                                             "files": {}, "ignored": []})
        (folder / student / assignment).mkdir(parents=True, exist_ok=True)
        notes = list(dict.fromkeys(refused.values()))
        if usable:
            chosen = usable[-1]
            shutil.copyfile(chosen.source, folder / student / assignment / _target_name(chosen))
            row["late"] = row["late"] or chosen.late
            row["files"][assignment] = chosen.filename
            row["ignored"] += [e.filename for e in usable[:-1]]
            if len(usable) > 1:
                notes.append(_several(chosen, usable[:-1]))
        if refused:
            row.setdefault("refused", []).extend(group[i].filename for i in sorted(refused))
        if notes:
            log.warning("%s/%s: %s", student, assignment, "; ".join(en for _zh, en in notes))
            remarks[(student, assignment)] = Remark(tuple(notes), refused=not usable)
    return students, remarks


def _several(chosen: Entry, others: list[Entry]) -> tuple[str, str]:
    names = ", ".join(e.filename for e in others)
    return (f"本次下载中有该学生的 {len(others) + 1} 个 notebook：评分的是“{chosen.filename}”"
            f"（最新的一个），未评分：{names}",
            f"the download holds {len(others) + 1} notebooks of this student: graded "
            f"{chosen.filename!r} (the latest), not graded: {names}")


def _entries(root: Path, too_large: set[Path]) -> list[Entry]:
    """The download's notebooks as entries. A notebook not named as the LMS names them
    belongs to no student we can tell: it is left out and the log says so (one odd file
    must not stop the class)."""
    entries, strays = [], []
    for path in find_notebooks(root, recursive=True):
        rel = PurePosixPath(path.relative_to(root).as_posix())
        entry = parse_name(rel, path)
        if entry is not None:
            entries.append(replace(entry, too_large=path in too_large))
        else:
            strays.append(str(rel))
    if entries and strays:
        log.warning("not graded, not named as Canvas or Moodle name their downloads (grade "
                    "them on their own): %s", ", ".join(strays))
    return entries


def open_download(path: Path, *, assignment: str | None, work: Path) -> Intake | None:
    """Lay ``path`` (zip or folder) out under ``work``; None when it is already nbgrader's
    layout (a zip holding one is unpacked and graded as such)."""
    path = Path(path)
    _count_notebooks(path, assignment)
    if path.is_file():
        root = work / "download"
        too_large = unpack(path, root)
    else:
        root, too_large = path, set()
    entries = _entries(root, too_large)
    if not entries:
        find_submissions(root, assignment)  # an nbgrader layout, else its error
        return Intake("nbgrader", root) if path.is_file() else None
    kinds = {e.lms for e in entries}
    if len(kinds) > 1:
        raise CourseError(f"{path} mixes Canvas and Moodle file names: grade each download "
                          "on its own")
    _assign(entries, assignment)
    folder = work / "class"
    students, remarks = _layout(entries, folder)
    return Intake(kinds.pop(), folder, students, remarks)


def _laid_out(path: Path, assignment: str | None, work: Path) -> Intake:
    intake = open_download(Path(path), assignment=assignment, work=work)
    if intake is None:
        raise CourseError(f"{path} is not an LMS download")
    return intake


def _size(intake: Intake, assignment: str | None) -> int:
    """How many submissions a laid-out download holds."""
    return sum(1 for p in intake.folder.glob("*/*") if p.is_dir()) if \
        intake.students else _count_notebooks(intake.folder, assignment)


def check_download(path: Path, assignment: str | None = None) -> int:
    """Everything :func:`open_download` would refuse, refused now (before any grading);
    returns how many submissions the download holds."""
    with tempfile.TemporaryDirectory(prefix="autograder-lms-check-") as work:
        return _size(_laid_out(path, assignment, Path(work)), assignment)


# ------------------------------------------------------------------ grading


@dataclass
class Batch:
    """Submissions ready to grade: nbgrader's layout as it is, or an LMS download laid
    out once by the intake (``intake``; its folder lives as long as the batch)."""

    submissions: Path
    assignment: str | None
    size: int
    intake: Intake | None = None

    def grade(self, *, out: Path, **options) -> list:
        """Grade the batch (``options`` are :func:`autograder.integrations.nbgrader.grade.grade`'s);
        an LMS download's rows carry the LMS's ids, and ``out/lms.json`` their names."""
        if self.intake is None:
            return grade_layout(submissions=self.submissions, out=out,
                                assignment=self.assignment, **options)
        results = grade_layout(submissions=self.intake.folder, out=out,
                               assignment=self.assignment, remarks=self.intake.remarks,
                               **options)
        if self.intake.lms != "nbgrader":
            roster = {"lms": self.intake.lms, "download": self.submissions.name,
                      "students": self.intake.students}
            Path(out, ROSTER).write_text(json.dumps(roster, ensure_ascii=False, indent=2)
                                         + "\n", encoding="utf-8")
        return results


@contextlib.contextmanager
def opened(*, submissions: Path, assignment: str | None = None) -> Iterator[Batch]:
    """What ``autograder grade SUBMISSIONS`` grades, opened once: whatever it would refuse
    (a missing folder, a broken zip...) is refused now, before any work."""
    submissions = Path(submissions)
    if not is_download(submissions):
        yield Batch(submissions, assignment, len(find_submissions(submissions, assignment)))
        return
    with tempfile.TemporaryDirectory(prefix="autograder-lms-") as work:
        intake = _laid_out(submissions, assignment, Path(work))
        yield Batch(submissions, assignment, _size(intake, assignment), intake)


def grade(*, submissions: Path, out: Path, assignment: str | None = None, **options) -> list:
    """``autograder grade``: nbgrader's ``submitted/`` layout as it is
    (:func:`autograder.integrations.nbgrader.grade.grade`), a Canvas or Moodle download
    laid out by the intake first. ``options`` are the former's."""
    with opened(submissions=submissions, assignment=assignment) as batch:
        return batch.grade(out=out, **options)


def read_roster(results: Path) -> dict:
    """The roster :meth:`Batch.grade` left in a results folder ({} when there is none)."""
    path = Path(results) / ROSTER
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise CourseError(f"{path} is not valid JSON: grade the download again") from None

