"""The lecture text (docs/lecture/) and the five thinking questions (思考题) in it."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LECTURE = ROOT / "docs" / "lecture" / "lecture09-self-attention.txt"
ASSIGNMENT_ORDER = ("q1_value_scaling", "q2_dk_growth", "q3_permutation", "q4_single_token",
                    "q5_cost_scaling")


def normalise(text: str) -> str:
    """Compare text as words: no white space, no Markdown emphasis, code or quote marks,
    one kind of double quote (the lecture mixes "…" and “…”)."""
    text = re.sub(r"[\s`*>$]", "", text)
    return re.sub(r"[“”\"]", '"', text)


@cache
def questions() -> dict[str, str]:
    """Assignment id -> its 思考题 as the lecture prints it (line breaks of the file folded)."""
    text = LECTURE.read_text(encoding="utf-8")
    tail = text.split("\n思考题\n", 1)[1]
    items = [item.strip() for item in re.split(r"(?:^|(?<=[？。]))\s*-\s+", tail.strip()) if item.strip()]
    if len(items) != len(ASSIGNMENT_ORDER):
        raise AssertionError(f"expected 5 thinking questions in {LECTURE}, found {len(items)}")
    return {a: " ".join(item.split()) for a, item in zip(ASSIGNMENT_ORDER, items)}


@cache
def lecture_numbers() -> frozenset[str]:
    """Every number the lecture itself prints (the hand example, 1000, 4000, ...)."""
    return frozenset(NUMBER.findall(LECTURE.read_text(encoding="utf-8")))


#: A number as prose writes it; digits inside names (q1, x11, d_k2) do not count.
NUMBER = re.compile(r"(?<![A-Za-z_\d.])\d+(?:\.\d+)?")


def core_solution_lines(nb) -> int:
    """The code lines a student writes in a notebook's core: the non-blank, non-comment
    lines of the core's solution regions (what each core's "代码约 N 行" states)."""
    lines = [ln.split("#")[0].strip()
             for cell in nb.cells
             if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution")
             and cell.metadata.get("autograder", {}).get("part", "core") == "core"
             for region in re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", cell.source, re.S)
             for ln in region.splitlines()]
    return sum(1 for ln in lines if ln)


#: A row of a core's time table: ``| 3 | what | 约 8 分钟 |``.
TABLE_ROW = re.compile(r"^\| \d \|.*\| 约 (\d+) 分钟 \|$", re.M)


def core_table_minutes(intro: str) -> list[int]:
    """The minutes of each numbered section in a core's time table (the intro cell)."""
    return [int(m) for m in TABLE_ROW.findall(intro)]
