"""``autograder doctor``: is this machine ready to grade? One screen, for support requests.

It asks only read-only questions: the protection grading would get here (the one
decision of :mod:`autograder.engine.host.protection`, for the course found), the Python
and nbgrader versions, the course folder, whether ``release/`` is in sync with
``source/`` (``autograder build --check``'s machinery) and whether ``gradebook.db``
holds this package's grade cells (opened read-only). Each finding is ``ok``, a
``note`` (worth knowing, grading still works) or a ``problem`` (fix it first).
"""

from __future__ import annotations

import importlib.metadata
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path

from ..engine.host.manifest import load
from ..engine.host.protection import decide
from ..errors import CourseError
from ..settings import ASSIGNMENTS, DEFAULTS, course_setting

__all__ = ["Finding", "diagnose", "find_course", "gradebook_differences"]

OK, NOTE, PROBLEM = "ok", "note", "problem"


@dataclass(frozen=True)
class Finding:
    """One line of the screen: what was looked at, its state, what was found."""

    name: str
    state: str
    text: str


def find_course(start: Path | None = None) -> Path | None:
    """The nearest folder at or above ``start`` holding ``nbgrader_config.py``."""
    here = Path(start or Path.cwd()).resolve()
    return next((f for f in (here, *here.parents) if (f / "nbgrader_config.py").is_file()),
                None)


def diagnose(*, course: Path | None = None, quick: bool = False) -> list[Finding]:
    """Every finding, in the screen's order (``quick``: no release comparison)."""
    course = find_course(course)
    found = [_protection(course), _versions()]
    if course is None:
        found.append(Finding("course", NOTE, "no nbgrader_config.py here or above: run "
                             "`autograder doctor` in the course folder"))
        return found
    found.append(Finding("course", OK, str(course)))
    found.append(_release(course, quick))
    found.append(_gradebook(course / "gradebook.db"))
    return found


def _protection(course: Path | None) -> Finding:
    """What ``autograder grade`` would get in ``course`` (its folders kept private)."""
    verdict = decide(private=[course] if course else [])
    try:
        allow = bool(course_setting(course, "allow_unprotected", DEFAULTS.allow_unprotected)) \
            if course else DEFAULTS.allow_unprotected
    except CourseError as err:
        return Finding("protection", PROBLEM, str(err))
    refusal = verdict.refusal(allow)
    if refusal:
        return Finding("protection", PROBLEM, f"grade would refuse: {refusal}")
    state = NOTE if verdict.marker != str(verdict.level) else OK
    return Finding("protection", state, verdict.line().removeprefix("protection: "))


def _versions() -> Finding:
    try:
        nbgrader = importlib.metadata.version("nbgrader")
    except importlib.metadata.PackageNotFoundError:
        return Finding("versions", PROBLEM, "nbgrader is not installed: pip install nbgrader")
    python = sys.version.split()[0]
    return Finding("versions", OK, f"Python {python} ({sys.executable}), nbgrader {nbgrader}")


def _release(course: Path, quick: bool) -> Finding:
    if quick:
        return Finding("release", NOTE, "not compared (--quick)")
    if not (course / "source").is_dir():
        return Finding("release", NOTE, "no source/ here: nothing to compare")
    from ..authoring.build import check

    try:
        stale = check(root=course)
    except CourseError as err:
        return Finding("release", PROBLEM, str(err))
    if stale:
        return Finding("release", PROBLEM, f"{len(stale)} generated file(s) differ from "
                       f"source/ ({', '.join(map(str, stale[:3]))}): run `autograder build`")
    return Finding("release", OK, "release/, solutions/ and exercises/ match source/")


def _gradebook(path: Path) -> Finding:
    if not path.is_file():
        return Finding("gradebook", OK, "no gradebook.db yet: grading creates it")
    try:
        differences = gradebook_differences(path)
    except sqlite3.Error as err:
        return Finding("gradebook", PROBLEM, f"{path} cannot be read ({err}): restore it "
                       "from a backup, or move it aside and grade again")
    if differences:
        return Finding("gradebook", NOTE, f"{path} differs from this package's grade cells: "
                       + "; ".join(differences))
    return Finding("gradebook", OK, f"{path} holds this package's grade cells")


def gradebook_differences(path: Path) -> list[str]:
    """Per assignment the gradebook knows, how its grade cells (name, points) differ
    from this package's; the database is opened read-only."""
    db = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT a.name, b.name, g.max_score FROM grade_cells g JOIN base_cell b ON "
            "g.id = b.id JOIN notebook n ON b.notebook_id = n.id JOIN assignment a ON "
            "n.assignment_id = a.id WHERE n.name = a.name").fetchall()
    finally:
        db.close()
    known: dict[str, dict[str, float]] = {}
    for assignment, cell, points in rows:
        known.setdefault(assignment, {})[cell] = float(points or 0)
    found = []
    for assignment in [a for a in ASSIGNMENTS if a in known]:
        wanted = {c["name"]: float(c["max_score"]) for c in load(assignment).gradebook["grade_cells"]}
        extra = sorted(set(known[assignment]) - set(wanted))
        missing = sorted(set(wanted) - set(known[assignment]))
        points = sorted(c for c in set(wanted) & set(known[assignment])
                        if wanted[c] != known[assignment][c])
        if extra or missing or points:
            found.append(f"{assignment}: " + ", ".join(
                f"{what} {', '.join(cells[:4])}" for what, cells in
                (("extra", extra), ("missing", missing), ("other points", points)) if cells))
    return found
