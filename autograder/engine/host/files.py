"""A submission's files as the grader reads them: the one notebook finder and bounded read.

Everything here is the student's (a submission folder, an LMS download, Gradescope's
upload): links are never followed, hidden files and folders (``.ipynb_checkpoints``,
macOS's ``._name`` copies) and ``__MACOSX`` are never taken for the student's work, and
no file is read past the size the caller allows.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["find_notebooks", "read_at_most", "SKIPPED_FOLDERS"]

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
