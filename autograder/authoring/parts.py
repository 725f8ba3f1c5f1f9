"""A notebook's parts: the core (必做) and its extensions (拓展), read from cell metadata.

Every cell may carry ``metadata.autograder.part``: ``core`` (the default) or an extension
id ``ext-<name>``. An extension is a contiguous block after the core whose first cell, a
markdown heading, also carries its ``title`` and ``minutes`` (docs/AUTHORING.md). What a
release does with extensions is the instructor's choice (:data:`EXTENSION_MODES`):

- ``graded``: nothing changes; their grade cells count, reported apart from the core;
- ``practice``: their test cells become read-only cells whose checks the engine still runs
  and reports (never scored); their written answers become plain answer cells;
- ``omit``: their cells are left out of the release.

:func:`for_release` rewrites a source notebook for one mode before nbgrader generates the
release from it, so nbgrader, the manifest and the engine all see the same cells.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path

from nbformat import NotebookNode

from ..engine.host.hidden import HIDDEN_BEGIN, HIDDEN_END, strip_region
from ..errors import CourseError
from ..settings import DEFAULT_EXTENSIONS, EXTENSION_MODES, SELF_CHECK_ID, course_setting
from .cells import grade_id

__all__ = ["CORE", "Extension", "part_of", "sections", "check_mode", "configured_mode",
           "for_release", "ANSWER_STUB", "DEFAULT_EXTENSIONS", "EXTENSION_MODES"]

CORE = "core"
_PART = re.compile(r"^(core|ext-[a-z0-9][a-z0-9-]*)$")
#: What a written answer of a practice extension shows in the release (nbgrader's text stub).
ANSWER_STUB = "在这里写下你的回答。"


@dataclass(frozen=True)
class Extension:
    """One 拓展 section: its id, Chinese title and estimated minutes."""

    id: str
    title: str
    minutes: int


def _meta(cell: NotebookNode) -> dict:
    meta = cell.get("metadata", {}).get("autograder", {})
    return meta if isinstance(meta, dict) else {}


def part_of(cell: NotebookNode) -> str:
    """The part a cell belongs to (``core`` when it says nothing)."""
    part = _meta(cell).get("part", CORE)
    return part if isinstance(part, str) else CORE


def check_mode(mode: str) -> str:
    if mode not in EXTENSION_MODES:
        raise CourseError(f"unknown extension mode {mode!r}: choose one of "
                          f"{', '.join(EXTENSION_MODES)}")
    return mode


def configured_mode(root: Path) -> str:
    """The mode the course's ``nbgrader_config.py`` sets (``c.Autograder.extensions``),
    else :data:`DEFAULT_EXTENSIONS`."""
    return check_mode(str(course_setting(root, "extensions", DEFAULT_EXTENSIONS)))


def sections(nb: NotebookNode, where: str) -> list[Extension]:
    """The notebook's extensions in order; :class:`CourseError` naming ``where`` and the
    cell when the parts break the convention (unknown id, core after an extension, an
    extension split in two, a heading without title or minutes)."""
    found: list[Extension] = []
    current = CORE
    for index, cell in enumerate(nb.cells, 1):
        part = part_of(cell)
        at = f"{where}, cell {index} ({grade_id(cell) or cell.get('id', '?')})"
        if not _PART.match(part):
            raise CourseError(f"{at}: part {part!r} is not 'core' or 'ext-<name>'; fix its "
                              "metadata.autograder.part")
        if part == current or grade_id(cell) == SELF_CHECK_ID:  # the check cell closes all
            continue
        if part == CORE:
            raise CourseError(f"{at}: a core cell after extension {current}; move the "
                              "extensions after the core")
        if any(e.id == part for e in found):
            raise CourseError(f"{at}: extension {part} is split in two; keep its cells together")
        found.append(_heading(cell, part, at))
        current = part
    return found


def _heading(cell: NotebookNode, part: str, at: str) -> Extension:
    meta = _meta(cell)
    title, minutes = meta.get("title"), meta.get("minutes")
    if cell.cell_type != "markdown" or not isinstance(title, str) or not title \
            or not isinstance(minutes, int) or minutes <= 0:
        raise CourseError(f"{at}: extension {part} must start with a markdown heading whose "
                          "metadata.autograder has a title and whole minutes")
    return Extension(part, title, minutes)


def for_release(nb: NotebookNode, mode: str) -> NotebookNode:
    """A copy of the source notebook ``nb`` whose extensions are as ``mode`` says."""
    check_mode(mode)
    out = copy.deepcopy(nb)
    if mode == "graded":
        return out
    if mode == "omit":
        out.cells = [c for c in out.cells if part_of(c) == CORE]
        return out
    for cell in out.cells:
        if part_of(cell) != CORE:
            _as_practice(cell)
    return out


def _as_practice(cell: NotebookNode) -> None:
    """A graded cell of an extension, made ungraded: a test cell keeps its visible
    asserts, read-only (the engine reads its checks from the source); a written answer
    becomes a plain answer cell that remembers which model answer it stands for."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    if not meta.get("grade"):
        return
    if cell.cell_type == "code":
        cell.source = strip_region(cell.source, HIDDEN_BEGIN, HIDDEN_END)
        cell.metadata["nbgrader"] = {**meta, "grade": False, "solution": False, "locked": True}
        cell.metadata["nbgrader"].pop("points", None)
        cell.metadata.setdefault("autograder", {})["points"] = meta.get("points", 0)
    else:
        cell.metadata.pop("nbgrader")
        cell.metadata.setdefault("autograder", {})["answer_for"] = meta.get("grade_id")
        cell.source = ANSWER_STUB
