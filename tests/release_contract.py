"""What every release notebook must meet (../shared/ASSIGNMENTS.md), for the per-assignment
tests: the lines a student writes, the core and its extensions, locked cells without
solutions, test cells that state their points."""

from __future__ import annotations

import re
from collections.abc import Iterable

from autograder.authoring.cells import grade_id, is_solution_cell
from autograder.authoring.parts import CORE, part_of
from autograder.engine.host.hidden import SOLUTION_BEGIN, SOLUTION_END, regions

#: An extension's first cell: ``## 拓展 A：<title>（选做，约 N 分钟）``.
HEADING = re.compile(r"^## 拓展 ([A-Z])：(.+)（选做，约 (\d+) 分钟）\n")
PART = re.compile(r"^(core|ext-[a-z0-9-]+)$")


def core(cells: Iterable) -> list:
    return [c for c in cells if part_of(c) == CORE]


def solution_lines(cells: Iterable) -> list[str]:
    """What a student writes: each non-blank line of the code cells' solution regions,
    comments cut off."""
    lines = []
    for cell in cells:
        if cell.cell_type == "code" and is_solution_cell(cell):
            for region in regions(cell.source, SOLUTION_BEGIN, SOLUTION_END):
                lines += [ln.split("#")[0].strip() for ln in region.splitlines()]
    return [ln for ln in lines if ln]


def check_extensions_follow_the_core(cells: list, letters: list[str]) -> None:
    """After the core, one contiguous block per extension, each opened by its heading
    (title and minutes as its metadata says), lettered ``letters`` in order."""
    parts = [part_of(c) for c in cells]
    assert all(PART.match(p) for p in parts)
    first_ext = next(i for i, p in enumerate(parts) if p != CORE)
    assert CORE not in parts[first_ext:]
    blocks = [p for i, p in enumerate(parts) if i >= first_ext and parts[i - 1] != p]
    assert len(blocks) == len(set(blocks)) == len(letters), blocks  # each one block
    found = []
    for i in range(first_ext, len(cells)):
        if parts[i] != parts[i - 1]:
            meta, heading = cells[i].metadata["autograder"], HEADING.match(cells[i].source)
            assert cells[i].cell_type == "markdown" and heading, cells[i].source[:60]
            assert (heading[2], int(heading[3])) == (meta["title"], meta["minutes"])
            found.append(heading[1])
        else:
            assert set(cells[i].metadata["autograder"]) == {"part"}
    assert found == letters


def check_no_locked_cell_holds_a_solution_line(source: list, release: list,
                                               given: tuple[str, ...] = ()) -> None:
    """No assignment or return line of a solution shows in a locked (given) cell of the
    release, but the lines in ``given`` (the scaffolding a task hands out on purpose)."""
    locked = "\n".join(c.source for c in release if not is_solution_cell(c))
    lines = [ln for ln in solution_lines(source) if "=" in ln or "return" in ln]
    assert lines
    shown = [ln for ln in lines if ln in locked and ln not in given]
    assert not shown, shown


def check_test_cells_state_their_points(cells: list, stated: str) -> None:
    """Each graded code cell starts with ``stated`` (a pattern whose group 1 is its
    points), and the points are nbgrader's."""
    for cell in cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and cell.cell_type == "code":
            found = re.match(stated, cell.source)
            assert found and float(found[1]) == meta["points"], (grade_id(cell), cell.source[:40])
