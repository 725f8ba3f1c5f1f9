"""``autograder doctor``: is this machine ready to grade? One screen, for support requests.

It asks only read-only questions: the protection grading would get here (the one
decision of :mod:`autograder.engine.host.protection`, for the course found), the Python
and nbgrader versions, the course folder, whether ``release/`` is in sync with
``source/`` (``autograder build --check``'s machinery) and what grading would do to
``gradebook.db`` (the gradebook writer's own read-only plan). Each finding is ``ok``, a
``note`` (worth knowing, grading still works) or a ``problem`` (fix it first).
"""

from __future__ import annotations

import importlib.metadata
import sys
from dataclasses import dataclass
from pathlib import Path

from ..engine.host.manifest import load
from ..engine.host.protection import decide
from ..errors import CourseError
from ..settings import ASSIGNMENTS, DEFAULTS, course_setting

__all__ = ["Finding", "diagnose", "find_course"]

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
    """What grading would do to ``gradebook.db`` (the writer's own read-only plan)."""
    from ..engine.host.gradebook import check_gradebook
    from ..engine.host.gradebook_cells import AGREES, CREATE

    if not path.is_file():
        return Finding("gradebook", OK, "no gradebook.db yet: grading creates it")
    try:
        plans = check_gradebook(path, {a: load(a) for a in ASSIGNMENTS})
    except CourseError as err:
        return Finding("gradebook", PROBLEM, str(err))
    changed = {a: p for a, p in plans.items() if p not in (AGREES, CREATE)}
    if changed:
        return Finding("gradebook", NOTE, f"{path}: grading brings the cells of "
                       f"{', '.join(changed)} into agreement with this package's "
                       f"({', '.join(sorted(set(changed.values())))})")
    return Finding("gradebook", OK, f"{path} agrees with this package's grade cells")
