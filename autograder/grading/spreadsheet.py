"""Every CSV the package writes, made safe to open in a spreadsheet (one policy, here).

A student chooses text that reaches the instructor's CSV files: a folder or file name,
a Moodle full name (Moodle lets students edit it). A spreadsheet evaluates a cell that
starts with ``=``, ``+``, ``-`` or ``@`` (and, in some, a tab or carriage return first)
as a formula, and ``WEBSERVICE`` can send other cells out. Per OWASP's CSV-injection
guidance such a text cell is written with a leading ``'``, which the spreadsheet shows
as text. Numbers are written as numbers: a score of ``-1.5`` stays a number the LMS
imports, so only text is ever prefixed, and a text that is itself a plain decimal
number (``-3``, ``+1.5e2``: no formula can hide in it) is left as it is too.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from pathlib import Path

__all__ = ["spreadsheet_cell", "write_csv", "FORMULA_START"]

#: What makes a spreadsheet read a cell as a formula (OWASP's list).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?[0-9]{1,30}(?:\.[0-9]{1,30})?(?:[eE][+-]?[0-9]{1,4})?\Z")


def spreadsheet_cell(value: object) -> object:
    """``value`` as the CSV cell a spreadsheet shows and never evaluates."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        value = str(value)
        if value.startswith(FORMULA_START) and not _PLAIN_NUMBER.match(value):
            return "'" + value
        return value
    return value


def write_csv(path: Path, rows: Iterable[Iterable[object]]) -> None:
    """``rows`` into ``path`` (UTF-8, the csv module's quoting), every cell made safe."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        for row in rows:
            writer.writerow([spreadsheet_cell(v) for v in row])
