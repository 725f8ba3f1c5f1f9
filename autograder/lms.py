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
fields (:mod:`autograder.lms_names`). The assignment comes from ``assignment``, else
the file name, else the notebook's cells. A roster (``lms.json`` beside the scores)
keeps the names, late flags and file names for ``autograder export``.

No file decides another student's grade, and nothing is resolved silently: each is a
:class:`~autograder.guard.Remark` on the student's row.

- A file whose name parses two ways (the uploaded name is another student's download
  name) is *refused*: not graded, and its row (under the LMS's own id) says why. The
  student it names is graded on their own notebook.
- A student with several notebooks for one assignment is graded on the latest (Canvas:
  highest attachment id, a file named as the assignment first), and the row names the
  others, which were not graded.
- One id under two names (a forged or merged download) is refused, every file of it.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .course import ASSIGNMENTS, CourseError, check_assignment
from .guard import Remark
from .lms_names import CANVAS, MOODLE_DIR, MOODLE_FILE, Entry, conflicting, parse_name

__all__ = ["Entry", "Intake", "parse_name", "is_download", "check_download", "open_download",
           "grade_download", "read_roster", "ROSTER"]

log = logging.getLogger("autograder")

ROSTER = "lms.json"
#: Canvas appends -1, -2 ... to a file name the student uploaded again.
REUPLOAD = re.compile(r"-\d+$")
MAX_MEMBERS, MAX_NOTEBOOK, MAX_TOTAL = 20000, 50 << 20, 2 << 30
_SKIP = {"__MACOSX", ".ipynb_checkpoints"}


@dataclass
class Intake:
    """A download laid out for grading: ``folder`` holds ``<student>/<assignment>/``;
    ``remarks`` what the rows must say (files not graded, and why)."""

    lms: str
    folder: Path
    students: dict[str, dict] = field(default_factory=dict)
    remarks: dict[tuple[str, str], Remark] = field(default_factory=dict)


def _notebooks(root: Path) -> list[Path]:
    """The ``.ipynb`` files under ``root`` (no links, hidden or checkpoint folders)."""
    found = []
    for path in sorted(root.rglob("*.ipynb")):
        rel = path.relative_to(root)
        if path.is_file() and not path.is_symlink() and not any(
                p.startswith(".") or p in _SKIP for p in rel.parts):
            found.append(path)
    return found


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


# ------------------------------------------------------------------ the zip


def _member_name(info: zipfile.ZipInfo) -> str:
    name = info.filename
    if not info.flag_bits & 0x800:  # not flagged UTF-8: try it before cp437
        try:
            name = name.encode("cp437").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            pass
    return name.replace("\\", "/")


def _safe_parts(zip_path: Path, name: str, info: zipfile.ZipInfo) -> tuple[str, ...]:
    """The member's path parts, or a :class:`CourseError` for a dangerous member."""
    parts = PurePosixPath(name).parts
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name) or ".." in parts or "\0" in name:
        raise CourseError(f"{zip_path} has a member outside the download ({name!r}): "
                          "download the submissions again from the LMS")
    if stat.S_ISLNK(info.external_attr >> 16):
        raise CourseError(f"{zip_path} has a symbolic link ({name!r}): download the "
                          "submissions again from the LMS")
    if info.file_size > MAX_NOTEBOOK:
        raise CourseError(f"{zip_path}: {name!r} is larger than {MAX_NOTEBOOK >> 20} MB: "
                          "remove it from the download or grade that student by hand")
    return parts


def _open_zip(path: Path) -> zipfile.ZipFile:
    if not zipfile.is_zipfile(path):
        raise CourseError(f"{path} is not a zip file: give the LMS's 'Download submissions' "
                          "zip, the folder it unpacks to, or nbgrader's submitted/ folder")
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as err:
        raise CourseError(f"{path} cannot be read as a zip ({err}): download it again") from None
    if len(zf.infolist()) > MAX_MEMBERS:
        zf.close()
        raise CourseError(f"{path} has more than {MAX_MEMBERS} files: split the download")
    return zf


def _copy_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path) -> int:
    """Copy one member, never more than the limit whatever its header claims."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with zf.open(info) as src, open(target, "xb") as dst:
            data = src.read(MAX_NOTEBOOK + 1)
            if len(data) > MAX_NOTEBOOK:
                raise CourseError(f"{info.filename!r} unpacks to more than "
                                  f"{MAX_NOTEBOOK >> 20} MB: grade that student by hand")
            dst.write(data)
    except (RuntimeError, zipfile.BadZipFile, NotImplementedError, OSError) as err:
        raise CourseError(f"cannot unpack {info.filename!r} ({err}): download the "
                          "submissions again") from None
    return len(data)


def _unpack(path: Path, dest: Path) -> Path:
    """The zip's notebooks, and only those, written under ``dest``."""
    total = 0
    with _open_zip(path) as zf:
        for info in zf.infolist():
            name = _member_name(info)
            if info.is_dir() or not name.lower().endswith(".ipynb"):
                continue
            parts = _safe_parts(path, name, info)
            if any(p.startswith(".") or p in _SKIP for p in parts):
                continue
            target = dest.joinpath(*parts)
            if target.exists():
                continue  # the same name twice in one zip: keep the first
            total += _copy_member(zf, info, target)
            if total > MAX_TOTAL:
                raise CourseError(f"{path} unpacks to more than {MAX_TOTAL >> 30} GB of "
                                  "notebooks: split the download")
    return dest


def _count_notebooks(path: Path, assignment: str | None) -> int:
    """Fail early on a missing file, a non-zip or no notebooks; returns the count."""
    path = Path(path)
    if assignment is not None:
        check_assignment(assignment)
    if path.is_file():
        with _open_zip(path) as zf:
            names = [_member_name(i) for i in zf.infolist() if not i.is_dir()]
        count = sum(n.lower().endswith(".ipynb") for n in names)
    else:
        count = len(_notebooks(path))
    if not count:
        raise CourseError(f"no notebooks (.ipynb) in {path}: download the submissions of the "
                          "notebook assignment (Canvas: Download Submissions; Moodle: "
                          "Download all submissions)")
    return count


# ------------------------------------------------------------------ assignments


def _guess(entry: Entry) -> str | None:
    """The assignment from the file name (Canvas's -N removed), else from the cells."""
    import nbformat

    from .selfcheck import detect_assignment

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
        if others := conflicting(e, students):
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


def _entries(root: Path) -> list[Entry]:
    entries, strays = [], []
    for path in _notebooks(root):
        rel = PurePosixPath(path.relative_to(root).as_posix())
        entry = parse_name(rel, path)
        (entries if entry else strays).append(entry or rel)
    if entries and strays:
        raise CourseError(f"{strays[0]} is not named as Canvas or Moodle name their "
                          "downloads: remove it from the download, or grade it on its own")
    return entries


def open_download(path: Path, *, assignment: str | None, work: Path) -> Intake | None:
    """Lay ``path`` (zip or folder) out under ``work``; None when it is already nbgrader's
    layout (a zip holding one is unpacked and graded as such)."""
    path = Path(path)
    _count_notebooks(path, assignment)
    root = _unpack(path, work / "download") if path.is_file() else path
    entries = _entries(root)
    if not entries:
        from .grade import find_submissions

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


def check_download(path: Path, assignment: str | None = None) -> int:
    """Everything :func:`open_download` would refuse, refused now (before any grading);
    returns how many submissions the download holds."""
    with tempfile.TemporaryDirectory(prefix="autograder-lms-check-") as work:
        intake = open_download(Path(path), assignment=assignment, work=Path(work))
        if intake is None:
            raise CourseError(f"{path} is not an LMS download")
        return sum(1 for p in intake.folder.glob("*/*") if p.is_dir()) if \
            intake.students else _count_notebooks(intake.folder, assignment)


# ------------------------------------------------------------------ grading


def grade_download(*, submissions: Path, out: Path, assignment: str | None = None,
                   **options) -> list:
    """``autograder grade`` on an LMS download: results carry the LMS's ids, and
    ``out/lms.json`` their names (``options`` are :func:`autograder.grade.grade`'s)."""
    from .grade import grade

    with tempfile.TemporaryDirectory(prefix="autograder-lms-") as work:
        intake = open_download(Path(submissions), assignment=assignment, work=Path(work))
        if intake is None:
            raise CourseError(f"{submissions} is not an LMS download")
        results = grade(submissions=intake.folder, out=out, assignment=assignment,
                        remarks=intake.remarks, **options)
    roster = {"lms": intake.lms, "download": Path(submissions).name,
              "students": intake.students}
    if intake.lms != "nbgrader":
        Path(out, ROSTER).write_text(json.dumps(roster, ensure_ascii=False, indent=2) + "\n",
                                     encoding="utf-8")
    return results


def read_roster(results: Path) -> dict:
    """The roster ``grade_download`` left in a results folder ({} when there is none)."""
    path = Path(results) / ROSTER
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise CourseError(f"{path} is not valid JSON: grade the download again") from None

