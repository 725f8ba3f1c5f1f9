"""The course's secret salt: with the student id and the check name it seeds every hidden input.

Grading a class reads it from ``--salt-file``, else ``AUTOGRADER_SALT_FILE``, else
``<course>/.autograder-salt``, which is created (random, readable by its owner only) the
first time a course is graded. Regrading with the same file draws the same inputs; a
student without it cannot know them. Demos and tests pass a fixed salt instead. The
Gradescope bundle carries one salt file of its own, read the same way
(:func:`read_salt`).
"""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path

from ..errors import CourseError
from ..settings import SALT_FILE

__all__ = ["load_salt", "read_salt", "new_salt"]

log = logging.getLogger("autograder")


def new_salt() -> str:
    """A fresh secret salt (64 hexadecimal digits)."""
    return secrets.token_hex(32)


def read_salt(path: Path, *, missing: str) -> str:
    """The salt in the file ``path``; a :class:`CourseError` when it is empty, or when it
    does not exist (``missing`` says what to do then)."""
    path = Path(path)
    if not path.is_file():
        raise CourseError(f"salt file {path} does not exist: {missing}")
    salt = path.read_text(encoding="utf-8").strip()
    if not salt:
        raise CourseError(f"salt file {path} is empty: restore it (regrading needs the same "
                          "salt) or delete it to start a new one")
    return salt


def load_salt(*, course: Path, salt_file: Path | None = None) -> str:
    """The salt for grading ``course`` (creating the course's file on first use)."""
    chosen = salt_file or (Path(os.environ["AUTOGRADER_SALT_FILE"])
                           if os.environ.get("AUTOGRADER_SALT_FILE") else None)
    path = chosen or course / SALT_FILE
    if path.is_file() or chosen is not None:
        return read_salt(path, missing="give the file used for this class, or omit "
                                       "--salt-file to use the course's own")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(new_salt() + "\n")
    log.warning("created a new secret salt at %s: keep it private, and keep it for regrading",
                path)
    return path.read_text(encoding="utf-8").strip()
