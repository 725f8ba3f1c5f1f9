"""An LMS's "download all submissions" zip, read safely: only its notebooks come out.

No absolute or ``..`` paths, no links, no hidden or ``__MACOSX`` folders; no more than :data:`MAX_MEMBERS`
members or :data:`MAX_TOTAL` bytes in all; only ``.ipynb`` members are written. Anything
else is a one-line :class:`~autograder.errors.CourseError` saying what to do, except one
student's notebook larger than the limit whatever its header claims
(:data:`~autograder.settings.MAX_NOTEBOOK_BYTES`): that one submission must not stop the
class, so it is written as an empty file and listed, and the intake refuses its row.
"""

from __future__ import annotations

import re
import stat
import zipfile
from pathlib import Path, PurePosixPath

from ...engine.host.files import SKIPPED_FOLDERS
from ...errors import CourseError
from ...settings import MAX_NOTEBOOK_BYTES as MAX_NOTEBOOK

__all__ = ["open_zip", "member_name", "unpack", "MAX_MEMBERS", "MAX_TOTAL"]

MAX_MEMBERS, MAX_TOTAL = 20000, 2 << 30


def member_name(info: zipfile.ZipInfo) -> str:
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
    return parts


def open_zip(path: Path) -> zipfile.ZipFile:
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


def _copy_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path) -> int | None:
    """Copy one member, never more than the limit whatever its header claims (None: it
    is larger; an empty file stands in for it)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(target, "xb") as dst:
            if info.file_size > MAX_NOTEBOOK:
                return None
            with zf.open(info) as src:
                data = src.read(MAX_NOTEBOOK + 1)
            if len(data) > MAX_NOTEBOOK:
                return None
            dst.write(data)
    except (RuntimeError, zipfile.BadZipFile, NotImplementedError, OSError) as err:
        raise CourseError(f"cannot unpack {info.filename!r} ({err}): download the "
                          "submissions again") from None
    return len(data)


def unpack(path: Path, dest: Path) -> set[Path]:
    """The zip's notebooks, and only those, written under ``dest``; returns the members
    too large to grade (each an empty file under ``dest``)."""
    total, too_large = 0, set()
    with open_zip(path) as zf:
        for info in zf.infolist():
            name = member_name(info)
            if info.is_dir() or not name.lower().endswith(".ipynb"):
                continue
            parts = _safe_parts(path, name, info)
            if any(p.startswith(".") or p in SKIPPED_FOLDERS for p in parts):
                continue
            target = dest.joinpath(*parts)
            if target.exists():
                continue  # the same name twice in one zip: keep the first
            size = _copy_member(zf, info, target)
            if size is None:
                too_large.add(target)
                continue
            total += size
            if total > MAX_TOTAL:
                raise CourseError(f"{path} unpacks to more than {MAX_TOTAL >> 30} GB of "
                                  "notebooks: split the download")
    return too_large
