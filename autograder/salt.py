"""The course's secret salt: with the student id and the check name it seeds every hidden input.

Grading a class reads it from ``--salt-file``, else ``AUTOGRADER_SALT_FILE``, else
``<course>/.autograder-salt``, which is created (random, readable by its owner only) the
first time a course is graded. Regrading with the same file draws the same inputs; a
student without it cannot know them. Demos and tests pass a fixed salt instead.
"""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path

from .course import CourseError

__all__ = ["SALT_FILE", "load_salt"]

SALT_FILE = ".autograder-salt"
log = logging.getLogger("autograder")


def load_salt(*, course: Path, salt_file: Path | None = None) -> str:
    """The salt for grading ``course`` (creating the course's file on first use)."""
    chosen = salt_file or (Path(os.environ["AUTOGRADER_SALT_FILE"])
                           if os.environ.get("AUTOGRADER_SALT_FILE") else None)
    path = chosen or course / SALT_FILE
    if path.is_file():
        salt = path.read_text(encoding="utf-8").strip()
        if not salt:
            raise CourseError(f"salt file {path} is empty: restore it (regrading needs the same "
                              "salt) or delete it to start a new one")
        return salt
    if chosen is not None:
        raise CourseError(f"salt file {path} does not exist: give the file used for this "
                          "class, or omit --salt-file to use the course's own")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(secrets.token_hex(32) + "\n")
    log.warning("created a new secret salt at %s: keep it private, and keep it for regrading",
                path)
    return path.read_text(encoding="utf-8").strip()
