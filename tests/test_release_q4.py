"""What a q4 student reads: a timed core that meets the contract alone and asks every
sub-question, marked and timed 拓展 after it, no answer before it is asked, and the
claims of the model answers measured (issue 21).

Read from the source (structure), the release (what a student gets) and the solutions
edition (the printed output of every given cell, as a student running it would see it).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import ROOT, solution_namespace
from release_contract import (
    HEADING,
    check_extensions_follow_the_core,
    check_no_locked_cell_holds_a_solution_line,
    check_test_cells_state_their_points,
    core,
    solution_lines,
)

from autograder.authoring import cells as nbs
from autograder.engine.host import hidden

NAME = "q4_single_token"
SOURCE, RELEASE, SOLUTIONS, EXERCISES = (ROOT / edition / NAME / f"{NAME}.ipynb" for edition in
                                         ("source", "release", "solutions", "exercises"))
HAND_CELLS = ["test_hand_weights", "test_hand_output"]

#: Each answer of the core and a pattern that finds it in prose, given code, printed
#: output or a visible assert. The core's written answer (its last cell) asks for all of
#: them, so none may be shown anywhere before it; most are graded earlier still.
_X_WV = r"(x_?1?|x_\{1\}|x₁|x)\s*(\\cdot|·)?\s*W_v"
ANSWERS = [
    ("the one weight is 1", r"权重[^。\n，]{0,6}(恒为|都是|就是|只能是|等于|总是|永远是)\s*\$?1(?![\d.])"
     r"|e\^\{?s\}?\s*/\s*e\^\{?s\}?|\\d?frac\{e\^\{?s\}?\}\{e\^\{?s\}?\}"
     r"|不管\s*\$?s\$?\s*是多少|不管打分是多少|与打分(的大小)?无关"),
    ("the sum has one term", r"分子和分母是同一个数|总和[^。\n]{0,4}2\.028|只剩一项"),
    ("the output is x·W_v", r"输出[^。\n=]{0,8}(=|＝|等于|就是|恒为|应是|应为)\s*\$?\s*(1\s*(\\cdot|·)\s*)?"
     r"(v_?1|v₁|v_\{1\}|" + _X_WV + r")|1\s*\\cdot\s*v_1|(?<!\[)\[2(\.0)?, ?0(\.0)?\](?!\])"),
    ("M is W_v", r"M\s*=\s*\$?W_v|矩阵就是\s*\$?W_v|就是\s*\$?W_v\$?\s*本身"),
    ("the output ignores W_q and W_k", r"与\s*\$?W_q[^。\n]{0,12}无关|不随\s*\$?W_q|"
     r"只取决于\s*\$?x\$?\s*和\s*\$?W_v|输出(都|仍|也)?(完全)?不变"),
    ("a fixed linear map", r"固定的线性映射"),
]
#: What the old notebook said before the student answered (issue 21): gone everywhere.
REMOVED = ["它们就是第一问的答案", "所以第二问的答案是", "对一对"]


def _graded(cells, manual: bool) -> list:
    return [c for c in cells if c.metadata.get("nbgrader", {}).get("grade")
            and (c.cell_type == "markdown") == manual]


def test_the_header_has_the_style_of_the_five():
    first = nbs.read(SOURCE).cells[0].source
    assert first.startswith("# 思考题 4：") and "> **第 9 讲 · 思考题 4**\n>\n> 如果一句话只有一个词" in first


def test_the_core_meets_the_contract_alone_and_states_its_time():
    cells = nbs.read(SOURCE).cells
    auto, manual = _graded(core(cells), manual=False), _graded(core(cells), manual=True)
    assert len(auto) >= 5 and sum(c.metadata.nbgrader.points for c in auto) >= 10 and manual
    meta = cells[0].metadata["autograder"]
    assert meta["part"] == "core" and meta["minutes"] <= 40
    assert f"**必做部分：约 {meta['minutes']} 分钟**" in cells[0].source


def test_the_core_asks_every_sub_question_hand_steps_first():
    cells = core(nbs.read(SOURCE).cells)
    ids = [nbs.grade_id(c) for c in cells]
    assert [i for i in ids if i in HAND_CELLS] == HAND_CELLS          # the lecture's order
    assert ids.index("test_hand_output") < ids.index("test_weights")  # hand first, then code
    assert ids.index("test_hand_example") < ids.index("test_qk_invariance")  # then the general
    written = _graded(cells, manual=True)[0].source
    prompt = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    for asked in ("打分、softmax、加权求和分别退化成什么", "输出和输入是什么关系"):
        assert asked in prompt
    assert "**评分要点**" in written


def test_the_core_asks_for_at_most_forty_lines_of_code():
    assert len(solution_lines(core(nbs.read(SOURCE).cells))) <= 40


def test_the_time_table_adds_up_to_the_stated_minutes():
    cells = nbs.read(SOURCE).cells
    intro = cells[0].source
    core = [int(m) for m in re.findall(r"^\| \d \| .+ \| 约 (\d+) 分钟 \|$", intro, re.M)]
    assert core and sum(core) <= cells[0].metadata["autograder"]["minutes"]
    rows = dict(re.findall(r"^\| 拓展 ([A-Z]) \| .+ \| 选做，约 (\d+) 分钟 \|$", intro, re.M))
    headings = {m[1]: m[3] for c in cells if (m := HEADING.match(c.source))}
    assert rows == headings and len(rows) == 3


def test_the_extensions_come_after_the_core_contiguous_marked_and_timed():
    check_extensions_follow_the_core(nbs.read(SOURCE).cells, ["A", "B", "C"])


def test_what_was_moved_is_kept_in_the_extensions():
    cells = nbs.read(SOURCE).cells
    ext = {nbs.grade_id(c) for c in cells} - {nbs.grade_id(c) for c in core(cells)}
    assert {"test_softmax_symbolic", "test_residual_symbolic", "test_two_token_weight",
            "test_two_token_symbolic", "test_decode_step", "test_kv_cache_decode"} <= ext


@pytest.mark.parametrize("path", [SOURCE, RELEASE, SOLUTIONS, EXERCISES], ids=lambda p: p.parts[-3])
def test_the_old_answers_and_wording_are_gone(path):
    text = "\n".join(c.source for c in nbs.read(path).cells)
    assert not [w for w in REMOVED if w in text]
    assert "核对一下" in text


def test_no_locked_cell_holds_a_solution_line():
    check_no_locked_cell_holds_a_solution_line(nbs.read(SOURCE).cells, nbs.read(RELEASE).cells)


def _seen_before(asking: str) -> list[tuple[str, str]]:
    """(where, text) of everything a student sees before answering ``asking``: prose, given
    code and its output, and the visible source of every test cell up to it."""
    seen = []
    for cell in nbs.read(SOLUTIONS).cells:
        gid = nbs.grade_id(cell) or cell.get("id", "")
        if gid == asking:
            return seen
        if nbs.is_solution_cell(cell):        # the student's own cells, and model answers
            continue
        seen.append((gid, hidden.strip_region(cell.source, hidden.HIDDEN_BEGIN, hidden.HIDDEN_END)))
        for out in cell.get("outputs", []):
            seen.append((f"{gid} output", out.get("text", "") + str(out.get("data", {}).get("text/plain", ""))))
    raise AssertionError(f"no cell {asking}")


@pytest.mark.parametrize("answer, pattern", ANSWERS, ids=[a[0] for a in ANSWERS])
def test_no_answer_is_shown_before_it_is_asked(answer, pattern):
    shown = [(where, m[0]) for where, text in _seen_before("written_linear_map")
             for m in re.finditer(pattern, text)]
    assert not shown, f"{answer} is shown before the core asks for it: {shown}"


def test_the_answer_patterns_see_the_answers():
    """The patterns above find each answer where the notebook does give it, after the
    question: in the model answer, and the old notebook's sentences are caught too."""
    model = next(c.source for c in nbs.read(SOURCE).cells if nbs.grade_id(c) == "written_linear_map")
    old = ("所以第二问的答案是：$n = 1$ 时，输出 $= xW_v$，是输入 $x$ 的一个**固定的线性映射**，"
           "矩阵就是 $W_v$；$W_q, W_k$ 只改变那一个打分的大小。权重要“非负、加起来等于 1”，"
           "只有一个格子时只能是 1，**不管 $s$ 是多少**；加权求和：只剩一项，$1 \\cdot v_1 = x_1 W_v$。"
           "n = 1 时唯一的权重恒为 1，输出应只取决于 x 和 W_v")
    for answer, pattern in ANSWERS:
        assert re.search(pattern, model), answer
        assert re.search(pattern, old), answer


def test_each_test_cell_states_its_points():
    check_test_cells_state_their_points(nbs.read(SOURCE).cells, r"# 测试：.*（(\d+) 分）")


# ------------------------------------------------------------------ claims that are measured


def test_the_gradient_with_respect_to_w_q_and_w_k_is_zero():
    """The model answer: the output does not move with W_q, W_k, so a loss has zero
    gradient with respect to them (central differences on the solution, any entry)."""
    attention = solution_namespace(NAME).single_token_attention
    rng = np.random.default_rng(0)
    x, W_q, W_k, W_v = (rng.standard_normal(s) for s in ((1, 4), (4, 3), (4, 3), (4, 5)))
    c = rng.standard_normal((1, 5))

    def loss(W_q, W_k):
        return float(np.sum(c * attention(x, W_q, W_k, W_v)))

    for which in range(2):
        for i, j in np.ndindex(4, 3):
            step = np.zeros((4, 3))
            step[i, j] = 1e-4
            args_plus = [W_q + step * (which == 0), W_k + step * (which == 1)]
            args_minus = [W_q - step * (which == 0), W_k - step * (which == 1)]
            assert loss(*args_plus) - loss(*args_minus) == 0.0
    # and the same difference on W_v is not zero: the test can see a gradient
    assert float(np.sum(c * attention(x, W_q, W_k, W_v + 1e-4))) != loss(W_q, W_k)


def test_only_position_one_ignores_w_q_and_w_k_in_causal_decoding():
    """拓展 C's figure and model answer: over random W_q, W_k only position 1 does not move."""
    decode = solution_namespace(NAME).kv_cache_decode
    rng = np.random.default_rng(4)
    X, W_v = rng.standard_normal((8, 4)), rng.standard_normal((4, 3))
    runs = np.stack([decode(X, rng.standard_normal((4, 4)), rng.standard_normal((4, 4)), W_v)
                     for _ in range(30)])
    spread = runs.std(axis=0).max(axis=1)
    assert spread[0] < 1e-12 and (spread[1:] > 0.1).all()
