"""Whose file it is, read from the LMS's own fields of a download's file name.

Canvas names a file ``<name>_[LATE_]<user id>_<attachment id>_<uploaded name>`` and
first removes every ``_<digits>_`` from the name ("because we use /_\\d+_/ to infer
the user/attachment ids", its ``content_zipper.rb``); Moodle names it (or the folder
holding it) ``<Full Name>_<participant id>_assignsubmission_<plugin>_<uploaded name>``
with every ``_`` of the full name made a space (``assign/locallib.php``). So the LMS's
own fields are the *first* that fit, read non-greedily from the start; what follows is
the uploaded name, which the student chooses freely.

A name *parses two ways* when the student's part reads as an LMS name itself, for
another student: a greedy pattern took the later reading, and graded the uploader's
blank notebook as that student. :attr:`Entry.claims` lists those other ids; the intake
(:mod:`autograder.integrations.lms.intake`) refuses such a file with a reason. A Moodle reading
(``_<id>_assignsubmission_<plugin>_``) is in no honest file name, so any other id
counts; a Canvas reading is bare numbers (``hw_2024_10.ipynb``), so only the id of
another student of the same download does (:func:`conflicting`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = ["Entry", "parse_name", "conflicting", "CANVAS", "MOODLE_DIR", "MOODLE_FILE"]

CANVAS = re.compile(r"^(?:(?P<late1>late)_)?(?:(?P<name>.*?)_)?(?:(?P<late2>late)_)?"
                    r"(?P<user>\d+|anon_[a-z0-9]+)_(?P<attachment>\d+)_(?P<file>.+)$", re.I)
MOODLE_DIR = re.compile(r"^(?P<name>.+?)_(?P<user>\d+)_assignsubmission_(?P<plugin>[a-z]+)_?$")
MOODLE_FILE = re.compile(r"^(?P<name>.+?)_(?P<user>\d+)_assignsubmission_(?P<plugin>[a-z]+)_"
                         r"(?P<file>.+)$")
#: The LMS's fields, read at one place of a text (each place after a ``_``, and its start).
_CANVAS_AT = re.compile(r"(?:late_)?(?P<user>\d+|anon_[a-z0-9]+)_\d+_.", re.I)
_MOODLE_AT = re.compile(r"(?P<user>\d+)_assignsubmission_[a-z]+(?:_|$)")


@dataclass
class Entry:
    """One notebook of an LMS download; ``claims``: other students' ids its
    student-chosen part reads as (see the module docstring)."""

    lms: str
    student: str
    name: str
    filename: str
    source: Path
    late: bool = False
    order: int = 0
    assignment: str | None = None
    claims: frozenset[str] = frozenset()
    too_large: bool = False  # over the notebook limit: refused, never read


def _readings(pattern: re.Pattern, texts: list[str]) -> set[str]:
    """The ids ``pattern`` reads at the start of each text and after each ``_`` in it."""
    found = set()
    for text in texts:
        for at in [0] + [i + 1 for i, ch in enumerate(text) if ch == "_"]:
            if m := pattern.match(text, at):
                found.add(m["user"])
    return found


def _moodle_folder(rel: PurePosixPath, source: Path) -> Entry | None:
    for i, folder in enumerate(rel.parts[:-1]):
        if m := MOODLE_DIR.match(folder):  # the topmost: Moodle's own, above the student's
            # the folder's name holds one reading (Moodle's names have no "_"), its
            # subfolders and the file are the student's
            claims = _readings(_MOODLE_AT, [m["name"], *rel.parts[i + 1:]])
            return Entry("moodle", m["user"], m["name"], rel.name, source,
                         claims=frozenset(claims - {m["user"]}))
    return None


def parse_name(rel: PurePosixPath, source: Path) -> Entry | None:
    """The entry a notebook's path inside the download stands for (None: not an LMS name)."""
    if entry := _moodle_folder(rel, source):
        return entry
    moodle, canvas = MOODLE_FILE.match(rel.name), CANVAS.match(rel.name)
    if moodle and not (canvas and canvas.start("user") < moodle.start("user")):
        claims = _readings(_MOODLE_AT, [moodle["file"]]) - {moodle["user"]}
        return Entry("moodle", moodle["user"], moodle["name"], moodle["file"], source,
                     claims=frozenset(claims))
    if canvas:
        claims = _readings(_CANVAS_AT, [canvas["file"]]) - {canvas["user"]}
        return Entry("canvas", canvas["user"], canvas["name"] or "", canvas["file"], source,
                     bool(canvas["late1"] or canvas["late2"]), int(canvas["attachment"]),
                     claims=frozenset(claims))
    return None


def conflicting(entry: Entry, students: set[str]) -> list[str]:
    """The other students ``entry``'s name also names: for Moodle every id its reading
    gives, for Canvas those among ``students`` (the ids of the whole download)."""
    return sorted(c for c in entry.claims if entry.lms == "moodle" or c in students)
