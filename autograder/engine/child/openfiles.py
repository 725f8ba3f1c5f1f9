"""The files the zygote holds open, given to each child as its own.

A fork shares each inherited open file description, offset included, with the zygote and
every other child: matplotlib's fonts, which FreeType reads glyphs from on demand, would
then be read at each other's offsets. :func:`open_files` lists them (while ``/proc`` is
still there), :func:`reopenable` keeps those the sandbox's view still shows, and
:func:`reopen_privately` gives a fresh fork its own description of each.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat

__all__ = ["open_files", "reopenable", "reopen_privately"]


def open_files() -> dict[int, str]:
    """The read-only regular files this process holds open, by descriptor (matplotlib's
    fonts: FreeType reads glyphs from them on demand). Read while ``/proc`` is there."""
    found = {}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            mode, flags = os.fstat(fd).st_mode, fcntl.fcntl(fd, fcntl.F_GETFL)
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the descriptor listing the folder itself, gone already
            continue
        if stat.S_ISREG(mode) and flags & os.O_ACCMODE == os.O_RDONLY and path.startswith("/"):
            found[fd] = path
    return found


def reopenable(files: dict[int, str]) -> tuple[dict[int, str], list[str]]:
    """Split ``files`` into those this process can open again by path as the same file
    (inside the view) and the paths it cannot."""
    ok, missing = {}, []
    for fd, path in files.items():
        try:
            os.close(_reopen(fd, path))
        except OSError:
            missing.append(path)
        else:
            ok[fd] = path
    return ok, missing


def reopen_privately(files: dict[int, str]) -> None:
    """Give this fork its own open file description for each of ``files``: the same
    descriptor number and offset, but an offset no other fork moves.

    A fork shares each inherited description, offset included, with the zygote and
    every other child. Two children reading a font at once then read each other's bytes
    (``FT_Load_Glyph ... failed``, seen while grading the sample class), and a student
    could move another student's offset on purpose. Raises ``OSError`` if a file
    cannot be reopened: such a child must not run.
    """
    for fd, path in files.items():
        if not _is_open(fd):
            # the zygote closed it since it was listed (Python 3.10's matplotlib lets a font
            # go after the warm-up): nothing is shared any more, and reopening it would
            # take its very number
            continue
        fresh = _reopen(fd, path)
        try:
            os.lseek(fresh, os.lseek(fd, 0, os.SEEK_CUR), os.SEEK_SET)
            os.dup2(fresh, fd, inheritable=False)
        finally:
            os.close(fresh)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError as err:
        if err.errno == errno.EBADF:
            return False
        raise
    return True


def _reopen(fd: int, path: str) -> int:
    """A new descriptor on the file ``fd`` holds, opened by ``path``; ``OSError`` if the
    path cannot be opened or now names another file."""
    fresh = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        a, b = os.fstat(fresh), os.fstat(fd)
        if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino):
            raise OSError(f"{path} is no longer the file descriptor {fd} holds")
    except OSError:
        os.close(fresh)
        raise
    return fresh
