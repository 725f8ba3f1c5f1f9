"""The autograded notebook's file is byte for byte what ``nbformat.writes`` would write
(``graded_record.written`` skips only its schema validation, which logs and changes
nothing)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from autograder.engine.host.graded_record import written

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("path", [ROOT / "solutions" / "q2_dk_growth" / "q2_dk_growth.ipynb",
                                  ROOT / "release" / "q3_permutation" / "q3_permutation.ipynb"],
                         ids=lambda p: p.parent.parent.name)
def test_written_is_what_nbformat_writes(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].source += "\n多行\n文本 \\u00e9 \"quoted\""
    assert written(nb) == nbformat.writes(nb, split_lines=False)
