"""What a q5 student reads: a timed core that meets the contract alone, marked and timed
拓展 after it, and no answer before it is asked (issue 21).

Read from the source (structure), the release (what a student gets) and the solutions
edition (the printed output of every given cell, as a student running it would see it).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from release_contract import (
    check_extensions_follow_the_core,
    check_no_locked_cell_holds_a_solution_line,
    check_test_cells_state_their_points,
    core,
    solution_lines,
)

from autograder.authoring import cells as nbs
from autograder.engine.host import hidden

ROOT = Path(__file__).resolve().parents[1]
NAME = "q5_cost_scaling"
SOURCE, RELEASE, SOLUTIONS = (ROOT / edition / NAME / f"{NAME}.ipynb"
                              for edition in ("source", "release", "solutions"))

#: Each graded answer, and the cell that asks for it: nothing a student sees before that
#: cell (prose, given code, its printed output, the cell's own visible asserts) may state it.
ANSWERS = [
    ("entries_1000 = 10⁶", r"1,?000,?000(?![\d,])|10\^\{?6|10⁶", "test_entries_1000"),
    ("table_ratio = 16", r"(?<![\w.])16(?![\d.])", "test_table_ratio"),
    ("the tokens of the parallel texts", r"(?<![\w.])(84|56)(?![\d.])", "test_attention_multipliers"),
    ("p_zh, p_mixed", r"(?<![\d.])1\.(5|50|39|4)(?![\d])", "test_attention_multipliers"),
    ("attention_zh, attention_mixed", r"(?<![\d.])(2\.25|1\.94)(?![\d])", "test_attention_multipliers"),
    ("crossover_length = 6d", r"(?<![\w.])6 ?d\b|3072|24576", "test_crossover_length"),
    ("layer_ratio", r"4\.47|6\.95|介于 4", "test_layer_ratio"),
]


def _points(cells, manual: bool) -> list[float]:
    return [c.metadata["nbgrader"]["points"] for c in cells
            if c.metadata.get("nbgrader", {}).get("grade") and (c.cell_type == "markdown") == manual]


def test_the_header_has_the_style_of_the_five():
    first = nbs.read(SOURCE).cells[0].source
    assert first.startswith("# 思考题 5：") and "> **第 9 讲 · 思考题 5**\n>\n> 第四节说" in first


def test_the_core_meets_the_contract_alone_and_states_its_time():
    cells = nbs.read(SOURCE).cells
    auto, manual = _points(core(cells), manual=False), _points(core(cells), manual=True)
    assert len(auto) >= 5 and sum(auto) >= 10 and manual, (auto, manual)
    minutes = cells[0].metadata["autograder"]
    assert minutes["part"] == "core" and minutes["minutes"] <= 40
    assert f"**必做部分：约 {minutes['minutes']} 分钟**" in cells[0].source


def test_the_core_asks_for_at_most_forty_lines_of_code():
    assert len(solution_lines(core(nbs.read(SOURCE).cells))) <= 40


def test_the_extensions_come_after_the_core_contiguous_marked_and_timed():
    check_extensions_follow_the_core(nbs.read(SOURCE).cells, ["A", "B", "C", "D"])


def test_the_plain_term_replaces_the_premium():
    prose = [c.source for c in nbs.read(SOURCE).cells]
    assert not any("溢价" in text for text in prose)
    assert sum(text.count("**token 倍数**") for text in prose) == 1      # explained once


def test_no_locked_cell_holds_a_solution_line():
    check_no_locked_cell_holds_a_solution_line(nbs.read(SOURCE).cells, nbs.read(RELEASE).cells,
                                               given=("n = int(n)", "times = []"))


def _seen_before(asking: str) -> list[tuple[str, str]]:
    """(where, text) of everything a student sees before answering ``asking``: prose, given
    code and its output, and the asking cell's own (visible) source."""
    seen = []
    for cell in nbs.read(SOLUTIONS).cells:
        gid = nbs.grade_id(cell) or ""
        if nbs.is_solution_cell(cell):        # the student's own cells, and model answers
            continue
        text = hidden.strip_region(cell.source, hidden.HIDDEN_BEGIN, hidden.HIDDEN_END)
        seen.append((gid, text))
        for out in cell.get("outputs", []) if gid != asking else []:
            seen.append((f"{gid} output", out.get("text", "") + str(out.get("data", {}).get("text/plain", ""))))
        if gid == asking:
            return seen
    raise AssertionError(f"no cell {asking}")


@pytest.mark.parametrize("answer, pattern, asking", ANSWERS, ids=[a[0] for a in ANSWERS])
def test_no_answer_is_shown_before_it_is_asked(answer, pattern, asking):
    shown = [(where, m[0]) for where, text in _seen_before(asking) for m in re.finditer(pattern, text)]
    assert not shown, f"{answer} is shown before {asking}: {shown}"


def test_the_answer_patterns_see_the_answers():
    """The patterns above find each answer where the notebook does give it, after the
    question: in the model answers and the output of the cells that follow."""
    everything = "\n".join(c.source + "".join(o.get("text", "") for o in c.get("outputs", []))
                           for c in nbs.read(SOLUTIONS).cells)
    for answer, pattern, _ in ANSWERS:
        assert re.search(pattern, everything), answer


def test_each_test_cell_states_its_points():
    check_test_cells_state_their_points(nbs.read(SOURCE).cells, r"# 测试：.*（(\d+) 分")
