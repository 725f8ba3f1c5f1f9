"""No answer before it is asked (issue 30): every release notebook's visible text, up to
and including the cell that asks, is free of the graded values and formulas its manifest
lists (``answers``, from autograder/bank/answers.py).

Visible text is everything a student sees in the release: prose, given code, the visible
part of test cells with their assert messages (the release has no hidden regions and no
solutions). The exercises edition adds the folded model answers, read in the same order:
a core's model answer must not give an extension's answer away. Conclusions that stood
right under the cells grading them (``CONCLUSIONS``) appear nowhere in the release. Each
scan is shown to work on a planted leak."""

from __future__ import annotations

import copy
import json
import re

import nbformat
import pytest
from lecture import ASSIGNMENT_ORDER, ROOT

from autograder.bank.answers import CONCLUSIONS
from autograder.engine.host.manifest import MANIFEST_DIR

_NUMBER = re.compile(r"[\d.]+")


def _release(assignment: str, view: str = "release"):
    return nbformat.read(ROOT / view / assignment / f"{assignment}.ipynb", as_version=4)


def _answers(assignment: str) -> dict[str, list[str]]:
    return json.loads((MANIFEST_DIR / f"{assignment}.json").read_text(encoding="utf-8"))["answers"]


def _pattern(text: str) -> re.Pattern:
    if _NUMBER.fullmatch(text):  # a number as a whole number, not inside another
        return re.compile(rf"(?<![\d.]){re.escape(text)}(?![\d])")
    return re.compile(re.escape(text))


def leaks(nb, answers: dict[str, list[str]]) -> list[str]:
    """(cell, text) found in the visible text before or in the cell that asks for it."""
    position = {c.metadata.get("nbgrader", {}).get("grade_id"): i for i, c in enumerate(nb.cells)}
    found = []
    for cell, texts in answers.items():
        assert cell in position, f"{cell} is not a cell of the release"
        for i, shown in enumerate(nb.cells[: position[cell] + 1]):
            for text in texts:
                if _pattern(text).search(shown.source):
                    found.append(f"{cell}: {text!r} in cell {i} "
                                 f"({shown.metadata.get('nbgrader', {}).get('grade_id') or shown.get('id')})")
    return found


@pytest.mark.parametrize("assignment", ASSIGNMENT_ORDER)
def test_no_graded_answer_is_visible_before_it_is_asked(assignment):
    assert leaks(_release(assignment), _answers(assignment)) == []


@pytest.mark.parametrize("assignment", ASSIGNMENT_ORDER)
def test_a_planted_leak_is_found(assignment):
    """One answer, planted in the intro's prose: the scan must report it."""
    nb, answers = copy.deepcopy(_release(assignment)), _answers(assignment)
    cell, texts = next(iter(answers.items()))
    nb.cells[0].source += f"\n\n提示：答案是 {texts[0]}。"
    assert any(texts[0] in leak for leak in leaks(nb, answers))


@pytest.mark.parametrize("assignment", ASSIGNMENT_ORDER)
def test_no_folded_model_answer_gives_a_later_answer_away(assignment):
    assert leaks(_release(assignment, "exercises"), _answers(assignment)) == []


def test_a_planted_model_answer_leak_is_found():
    """拓展 A's model answer once gave 拓展 B's w11(c) formula, one fold above the cell
    asking for it."""
    nb = copy.deepcopy(_release("q1_value_scaling", "exercises"))
    folded = next(c for c in nb.cells if c.get("id") == "answer-written_temperature")
    folded.source += "\n\n$w_{11}(c) = 1/(1 + e^{-c/\\sqrt{2}})$"
    assert any(leak.startswith("test_w11_of_c:") and "answer-written_temperature" in leak
               for leak in leaks(nb, _answers("q1_value_scaling")))


def _anywhere(nb, texts) -> list[str]:
    return [f"{text!r} in cell {i} ({cell.get('id')})" for i, cell in enumerate(nb.cells)
            for text in texts if _pattern(text).search(cell.source)]


@pytest.mark.parametrize("assignment", sorted(CONCLUSIONS))
def test_no_conclusion_stands_anywhere_in_the_release(assignment):
    assert _anywhere(_release(assignment), CONCLUSIONS[assignment]) == []


def test_a_planted_conclusion_is_found():
    """q5's whole-layer figure, printed once more after the last cell that grades it."""
    nb = copy.deepcopy(_release("q5_cost_scaling"))
    last = nb.cells[-2]
    last.source += "\n\n一整层只变成原来的约 4.47 倍。"
    assert _anywhere(nb, CONCLUSIONS["q5_cost_scaling"]) == [
        f"'4.47' in cell {len(nb.cells) - 2} ({last.get('id')})"]


def test_the_readme_states_no_answer():
    """The README ships as the wheel's description: the answer figures live in
    docs/answers.md (instructors only)."""
    for name in ("README.md", "README.zh.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        for pattern in (r"(?<![\d.])1\.5 ?(×|倍|times)", r"x·W_v", r"(?<![\d.])16 ?(×|倍|times)"):
            assert not re.search(pattern, text), (name, pattern)
