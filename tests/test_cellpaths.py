"""The child's short cuts past IPython's per-cell tokenizing and second compile
(:mod:`autograder.engine.child.cellpaths`) give IPython's own answers: on every code cell
of the course's notebooks and on generated cells full of IPython's special syntax."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from IPython.core.async_helpers import _should_be_async
from IPython.core.inputtransformer2 import TransformerManager

from autograder.engine.child import cellpaths

ROOT = Path(__file__).resolve().parent.parent
FULL = TransformerManager()


def _course_cells() -> list[str]:
    cells = []
    for folder in ("source", "release", "solutions", "exercises"):
        for path in sorted((ROOT / folder).glob("*/*.ipynb")):
            for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
                if cell["cell_type"] == "code":
                    cells.append("".join(cell["source"]))
    return cells


def _short(cell: str) -> str:
    manager = TransformerManager()
    full = manager.do_token_transforms
    manager.do_token_transforms = lambda lines: (
        full(lines) if cellpaths.needs_token_transforms(lines) else lines)
    return manager.transform_cell(cell)


def _same_answers(cell: str) -> None:
    try:
        transformed = FULL.transform_cell(cell)
    except SyntaxError:
        # IPython's tokenizer refused it (an inconsistent dedent): IPython then runs the
        # raw cell and reports that error; taken the short way, the cell fails to compile
        # with the same kind of error, so it fails either way
        with pytest.raises(SyntaxError):
            compile(_short(cell), "<cell>", "exec")
        return
    assert _short(cell) == transformed, cell
    if not cellpaths.may_await(transformed):
        assert not _should_be_async(transformed), cell


COURSE = sorted(set(_course_cells()))  # the views repeat most cells of the source
#: cells that IPython does transform, or that await: each must take the long way
SPECIAL = ["%time x = 1\n", "x = %pwd\n", "files = !ls\n", "len?\n", "  np.eye??\n",
           ",print a b\n", ";print a b\n", "/print 1\n", "for i in range(2):\n    !echo hi\n",
           "x = (1,\n,2)\n", "await asyncio.sleep(0)\n", "async with a:\n    pass\n",
           "%%time\nx = 1\n", ">>> x = 1\n", "   x = 1\n"]
#: cells IPython's tokenizer refuses (an inconsistent dedent, found by hypothesis)
REFUSED = ["\ta#\\\n  a"]


def test_the_course_has_cells_of_both_kinds() -> None:
    assert len(COURSE) > 150
    quick = [c for c in COURSE if not cellpaths.needs_token_transforms(c.splitlines(True))]
    assert len(quick) > 0.8 * len(COURSE)  # the short cut is taken for most cells


@pytest.mark.parametrize("cell", COURSE + SPECIAL + REFUSED)
def test_the_short_cuts_answer_as_ipython_does(cell: str) -> None:
    _same_answers(cell)


_ALPHABET = st.sampled_from(list("ab1 =(),;/%!?#'\":\n\t") + ["await ", "async ", "\\\n",
                                                                "print", "'''", "  "])


@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # compiling generated text
@settings(max_examples=400, deadline=None)
@given(st.lists(_ALPHABET, max_size=40).map("".join))
def test_generated_cells_get_ipython_s_answers(cell: str) -> None:
    _same_answers(cell)


@pytest.mark.parametrize("cell", [c for c in SPECIAL if "await" not in c and "async" not in c
                                  and not c.startswith(("%%", ">>>", "   ", "x = ("))])
def test_a_short_cut_taken_for_special_syntax_would_be_caught(cell: str) -> None:
    """The comparison above fails when the short cut skips a cell IPython transforms."""
    manager = TransformerManager()
    manager.do_token_transforms = lambda lines: lines
    assert manager.transform_cell(cell) != FULL.transform_cell(cell)


def test_the_installed_shell_runs_magics_and_top_level_await() -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    shell = InteractiveShell(config=Config({"HistoryManager": {"enabled": False}}))
    cellpaths.install(shell)
    assert shell.run_cell("x = 2 * 3").success and shell.user_ns["x"] == 6
    assert shell.run_cell("y = %pwd").success and isinstance(shell.user_ns["y"], str)
    assert shell.run_cell("import asyncio\nz = await asyncio.sleep(0, result=5)").success
    assert shell.user_ns["z"] == 5
