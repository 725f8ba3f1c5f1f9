"""The one grammar of a cell's marker regions, and hidden tests read as data.

nbgrader hides a region from every line that *contains* ``### BEGIN HIDDEN TESTS`` (or
``### BEGIN SOLUTION``) to the next line containing the matching ``END`` marker. This
module reads markers the same way, so whatever nbgrader hides from a student is exactly
what the build, the host and the pages treat as hidden, and stricter where nbgrader would
silently do something else:

- a *marker line* is a line that contains a delimiter; leading whitespace aside, it must
  start with it. Text after the delimiter is a comment (``### BEGIN HIDDEN TESTS (q1)``):
  the region's checks are read as usual;
- code or text before the delimiter on its line, a ``BEGIN`` inside a region, an ``END``
  outside one, or a region never closed is a :class:`~autograder.errors.HiddenTestError`
  (``autograder build`` names the notebook and the cell).

A hidden region may hold only::

    from autograder.bank.runner import run_check
    run_check("<check name>", keyword=<variable>, ...)

Anything else (another statement, an expression as a value, ``*args``) is an authoring
error raised when the manifest is built, so the host never executes a hidden region: it
looks the variables up in the child and runs the named checks itself.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ...errors import HiddenTestError

__all__ = ["CheckCall", "HIDDEN_BEGIN", "HIDDEN_END", "SOLUTION_BEGIN", "SOLUTION_END",
           "HIDDEN_NOTE", "RUNNER", "spans", "regions", "strip_region", "strip_markers",
           "check_markers", "shown", "parse_region", "check_calls"]

HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
SOLUTION_BEGIN, SOLUTION_END = "### BEGIN SOLUTION", "### END SOLUTION"
#: What a page shows where a cell's hidden region was.
HIDDEN_NOTE = "# （隐藏测试：由评分程序在随机输入上检查，代码不予显示）"
#: The module a hidden region imports ``run_check`` from.
RUNNER = "autograder.bank.runner"


@dataclass(frozen=True)
class CheckCall:
    """``run_check(name, **{keyword: variable})``."""

    name: str
    values: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"name": self.name, "values": dict(self.values)}


def _marker(line: str, delimiter: str, number: int) -> bool:
    """Whether ``line`` is a ``delimiter`` marker line (see the module docstring)."""
    if delimiter not in line:
        return False
    if not line.lstrip().startswith(delimiter):
        raise HiddenTestError(f"line {number}: text before {delimiter!r} (nbgrader would hide "
                              "that text too): put the marker on a line of its own")
    return True


def spans(source: str, begin: str = HIDDEN_BEGIN, end: str = HIDDEN_END) -> list[tuple[int, int]]:
    """(first, last) line index of each region of ``source``, marker lines included."""
    found, start = [], None
    for index, line in enumerate(source.split("\n")):
        if _marker(line, begin, index + 1):
            if start is not None:
                raise HiddenTestError(f"line {index + 1}: {begin!r} inside a region opened "
                                      f"on line {start + 1}")
            start = index
        elif _marker(line, end, index + 1):
            if start is None:
                raise HiddenTestError(f"line {index + 1}: {end!r} without {begin!r} before it")
            found.append((start, index))
            start = None
    if start is not None:
        raise HiddenTestError(f"line {start + 1}: the region has no {end!r} line")
    return found


def regions(source: str, begin: str = HIDDEN_BEGIN, end: str = HIDDEN_END) -> list[str]:
    """The text of each region of a cell, in order (marker lines left out)."""
    lines = source.split("\n")
    return ["\n".join(lines[first + 1:last]) for first, last in spans(source, begin, end)]


def strip_region(source: str, begin: str = HIDDEN_BEGIN, end: str = HIDDEN_END) -> str:
    """``source`` without its regions (marker lines included), trailing newlines dropped."""
    lines = source.split("\n")
    drop = {i for first, last in spans(source, begin, end) for i in range(first, last + 1)}
    return "\n".join(line for i, line in enumerate(lines) if i not in drop).rstrip("\n")


def strip_markers(source: str) -> str:
    """Keep the solution but drop the marker lines around it."""
    lines = source.split("\n")
    marks = {i for span in spans(source, SOLUTION_BEGIN, SOLUTION_END) for i in span}
    return "\n".join(line for i, line in enumerate(lines) if i not in marks)


def check_markers(source: str) -> None:
    """:class:`HiddenTestError` unless both kinds of markers of ``source`` follow the grammar."""
    spans(source, HIDDEN_BEGIN, HIDDEN_END)
    spans(source, SOLUTION_BEGIN, SOLUTION_END)


def shown(source: str) -> str:
    """A code cell as a page shows it: each hidden region replaced by :data:`HIDDEN_NOTE`.

    Pages show what students wrote as well, so this never raises: where the markers break
    the grammar, everything from the first marker line on is hidden.
    """
    if HIDDEN_BEGIN not in source and HIDDEN_END not in source:
        return source
    try:
        kept = strip_region(source)
    except HiddenTestError:
        lines = source.split("\n")
        first = next(i for i, line in enumerate(lines) if HIDDEN_BEGIN in line or HIDDEN_END in line)
        kept = "\n".join(lines[:first]).rstrip("\n")
    return f"{kept}\n{HIDDEN_NOTE}" if kept.strip() else HIDDEN_NOTE


def _import_ok(node: ast.stmt) -> bool:
    return (isinstance(node, ast.ImportFrom) and node.module == RUNNER
            and node.level == 0 and [(a.name, a.asname) for a in node.names]
            in ([("run_check", None)], [("run_check", "run_check")]))


def _call(node: ast.stmt) -> CheckCall:
    call = node.value if isinstance(node, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id == "run_check"):
        raise HiddenTestError(f"line {node.lineno}: only `run_check(...)` calls are allowed")
    if len(call.args) != 1 or not isinstance(call.args[0], ast.Constant) \
            or not isinstance(call.args[0].value, str):
        raise HiddenTestError(f"line {node.lineno}: the check's name must be one string literal")
    values = {}
    for kw in call.keywords:
        if kw.arg is None or not isinstance(kw.value, ast.Name):
            raise HiddenTestError(f"line {node.lineno}: arguments must be `keyword=variable`")
        values[kw.arg] = kw.value.id
    return CheckCall(call.args[0].value, values)


def parse_region(text: str) -> list[CheckCall]:
    """The check calls of one region; :class:`HiddenTestError` for anything else."""
    try:
        tree = ast.parse(text)
    except SyntaxError as err:
        raise HiddenTestError(f"hidden region is not valid Python: {err}") from None
    calls = []
    for node in tree.body:
        if _import_ok(node):
            continue
        calls.append(_call(node))
    return calls


def check_calls(source: str) -> list[CheckCall]:
    """Every check call in every hidden region of a cell's source."""
    return [call for region in regions(source) for call in parse_region(region)]
