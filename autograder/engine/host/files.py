"""A submission's files as the grader reads them: the one notebook finder and bounded read;
and how the grader's own staged output replaces what a previous run left (:func:`move_into`).

Everything read here is the student's (a submission folder, an LMS download, Gradescope's
upload): links are never followed, hidden files and folders (``.ipynb_checkpoints``,
macOS's ``._name`` copies) and ``__MACOSX`` are never taken for the student's work, and
no file is read past the size the caller allows.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["find_notebooks", "read_at_most", "move_into", "SKIPPED_FOLDERS"]

#: Folders an archive or an editor adds that never hold the student's work.
SKIPPED_FOLDERS = frozenset({"__MACOSX", ".ipynb_checkpoints"})


def _visible(name: str) -> bool:
    return not name.startswith(".") and name not in SKIPPED_FOLDERS


def find_notebooks(folder: Path, *, recursive: bool = False) -> list[Path]:
    """The ``.ipynb`` files in ``folder`` (and below it, with ``recursive``), sorted:
    regular files only, no links, nothing hidden or inside a skipped folder."""
    found = []
    for top, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if _visible(d)) if recursive else []
        for name in files:
            path = Path(top) / name
            if name.endswith(".ipynb") and _visible(name) and not path.is_symlink() \
                    and path.is_file():
                found.append(path)
    return sorted(found)


def read_at_most(path: Path, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of the file ``path`` (more than ``limit``: it is too
    large); ``OSError`` if it cannot be read or is a link."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        return fh.read(limit + 1)


def move_into(src: Path, dest: Path, depth: int) -> None:
    """Move ``src``'s tree into ``dest``, replacing each ``depth``-level entry whole (a
    link in its place is removed, never followed)."""
    dest.mkdir(parents=True, exist_ok=True)
    for item in sorted(src.iterdir()):
        target = dest / item.name
        if item.is_dir() and depth > 1:
            move_into(item, target, depth - 1)
            continue
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
        shutil.move(str(item), str(target))
