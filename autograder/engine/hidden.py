"""Hidden-test regions, read as data: which checks run on which of the student's variables.

A region may hold only::

    from autograder.bank import run_check
    run_check("<check name>", keyword=<variable>, ...)

Anything else (another statement, an expression as a value, ``*args``) is an authoring
error raised when the manifest is built, so the host never executes a hidden region:
it looks the variables up in the child and runs the named checks itself.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..notebooks import HIDDEN_BEGIN, HIDDEN_END

__all__ = ["CheckCall", "HiddenTestError", "regions", "parse_region", "check_calls"]


class HiddenTestError(ValueError):
    """A hidden-test region that is not of the accepted form."""


@dataclass(frozen=True)
class CheckCall:
    """``run_check(name, **{keyword: variable})``."""

    name: str
    values: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"name": self.name, "values": dict(self.values)}


def regions(source: str, begin: str = HIDDEN_BEGIN, end: str = HIDDEN_END) -> list[str]:
    """The text of each hidden region of a cell, in order."""
    found, inside, lines = [], False, []
    for line in source.split("\n"):
        if line.strip() == begin:
            inside, lines = True, []
        elif line.strip() == end and inside:
            inside = False
            found.append("\n".join(lines))
        elif inside:
            lines.append(line)
    if inside:
        raise HiddenTestError(f"a hidden region has no {end!r} line")
    return found


def _import_ok(node: ast.stmt) -> bool:
    return (isinstance(node, ast.ImportFrom) and node.module == "autograder.bank"
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
