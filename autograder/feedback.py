"""nbgrader preprocessors used when generating students' feedback.

nbgrader's feedback shows every cell as it was run, hidden tests included: that
would hand students the hidden checks. :class:`HideHiddenTests` replaces each
hidden region by a one-line note before the HTML is written; the outputs, which hold
the Chinese diagnosis, stay.
"""

from __future__ import annotations

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from .notebooks import HIDDEN_BEGIN, HIDDEN_END, strip_region

HIDDEN_NOTE = "# （隐藏测试：由评分程序在随机输入上检查，代码不予显示）"


class HideHiddenTests(Preprocessor):
    """Replace ``### BEGIN/END HIDDEN TESTS`` regions with a short note."""

    # nbconvert preprocessors are off unless enabled; this one must always run.
    enabled = Bool(True).tag(config=True)

    def preprocess_cell(self, cell, resources, index):  # noqa: D401 - nbconvert's signature
        if cell.cell_type == "code" and HIDDEN_BEGIN in cell.source:
            kept = strip_region(cell.source, HIDDEN_BEGIN, HIDDEN_END)
            cell.source = f"{kept}\n{HIDDEN_NOTE}" if kept.strip() else HIDDEN_NOTE
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    output["traceback"] = _short_traceback(output)
        return cell, resources


def _short_traceback(output: dict) -> list[str]:
    """Only the error line: IPython's frames quote the cell's code, hidden lines included.

    A check's own failure (``CheckFailed``) already renders as its explanation alone.
    """
    if output.get("ename") == "CheckFailed":
        return list(output.get("traceback", []))
    return [f"\x1b[0;31m{output.get('ename', 'Error')}\x1b[0m: {output.get('evalue', '')}"]
