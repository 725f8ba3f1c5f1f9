"""Point the instructor at student code that tries to reach the grader.

Under ``autograder grade`` such code is harmless: it runs in the sandboxed child, where
the grader is not, so it can neither see nor change a check. Under plain ``nbgrader
autograde`` (the checks in the student's kernel) it could. Either way it is legal Python
and may be innocent, so it is never scored down: the row's ``review`` column names it.

The scan reads student text, so it is bounded: a cell longer than :data:`MAX_CELL`
characters, or all cells past :data:`MAX_TOTAL`, are not parsed; a cell Python's parser
cannot take whole (too deep: ``1+1+…`` with thousands of terms) is read line by line.
Either way the review column says so ("review by hand"), so hiding code behind a
cell the scan cannot read is itself flagged. Nothing here raises on student text.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable

__all__ = ["scan_source", "scan_cells", "MAX_CELL", "MAX_TOTAL"]

#: Characters of one cell, and of all cells, the scan parses.
MAX_CELL, MAX_TOTAL = 50_000, 200_000  # a whole q1 notebook is 36 KB of JSON
#: Characters of one reason (a rebound name is quoted from the student's code).
MAX_REASON = 200
#: What Python's parser raises on text it cannot take (besides a syntax error).
_UNPARSABLE = (RecursionError, MemoryError, ValueError, OverflowError)
TOO_LONG = "cell too long to scan: review by hand 单元格过长，未自动检查，请人工复核"
TOO_DEEP = ("code too deeply nested to scan whole (read line by line): review by hand "
            "代码嵌套过深，仅逐行检查，请人工复核")

#: Modules whose attributes a student has no reason to rebind.
_GUARDED = {"np", "numpy", "sp", "sympy", "autograder", "builtins", "sys", "os", "math",
            "warnings", "signal", "nbgrader", "IPython"}
_NAMES = {"run_check", "self_check", "CheckFailed", "get_ipython", "__builtins__"}


def _root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _unparse(node: ast.AST) -> str:
    try:
        return ast.unparse(node)[:MAX_REASON]
    except _UNPARSABLE:
        return "<?>"


_GRADERS = ("autograder", "nbgrader")
_IMPORTERS = {"__import__", "importlib.import_module", "importlib.__import__",
              "import_module", "builtins.__import__"}


def _aliases(tree: ast.AST) -> set[str]:
    """:data:`_GUARDED` plus every name the code binds a guarded module to
    (``import numpy as N``, ``from numpy import testing as T``): a rebinding through the
    alias is the same rebinding."""
    guarded = set(_GUARDED)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and a.name.split(".")[0] in _GUARDED:
                    guarded.add(a.asname)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in _GUARDED:
            guarded.update(a.asname or a.name for a in node.names if a.name != "*")
    return guarded


def _namespace_of(node: ast.AST, guarded: set[str]) -> str | None:
    """``vars(np)`` or ``np.__dict__`` (a guarded module's namespace), as written."""
    if isinstance(node, ast.Call) and _unparse(node.func) == "vars" and node.args \
            and _root(node.args[0]) in guarded:
        return _unparse(node)
    if isinstance(node, ast.Attribute) and node.attr == "__dict__" and _root(node.value) in guarded:
        return _unparse(node)
    return None


def _imports_grader_by_name(node: ast.Call) -> bool:
    """``importlib.import_module(...)`` / ``__import__(...)`` of the grader, or of a name
    computed at run time (which the scan cannot read, so it says so)."""
    if _unparse(node.func) not in _IMPORTERS or not node.args:
        return False
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value.split(".")[0] in _GRADERS
    return True


def _reasons(tree: ast.AST) -> Iterable[str]:
    guarded = _aliases(tree)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if any(n.split(".")[0] in _GRADERS for n in names):
                yield "imports the grader (autograder/nbgrader) 导入了评分程序"
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and _root(target) in guarded:
                    yield f"rebinds {_unparse(target)} 修改了库函数"
                elif isinstance(target, ast.Subscript) and _namespace_of(target.value, guarded):
                    yield f"rebinds {_unparse(target)} 修改了库函数"
                elif isinstance(target, ast.Name) and target.id in _NAMES:
                    yield f"rebinds {target.id} 重新定义了评分用的名字"
        elif isinstance(node, ast.Call):
            name = _unparse(node.func)
            if name in ("setattr", "delattr") and node.args and _root(node.args[0]) in guarded:
                yield f"{name} on {_unparse(node.args[0])} 修改了库函数"
            elif name in ("os._exit", "sys.exit", "exit", "quit"):
                yield f"calls {name} 试图结束评分进程"
            elif _imports_grader_by_name(node):
                yield f"imports by name: {_unparse(node)} 按名字导入模块（可能是评分程序）"
            elif isinstance(node.func, ast.Attribute) and node.func.attr in ("update", "__setitem__") \
                    and _namespace_of(node.func.value, guarded):
                yield f"changes {_unparse(node.func.value)} 修改了库函数"
        elif isinstance(node, ast.Attribute) and node.attr == "modules" and _root(node) == "sys":
            yield "touches sys.modules 修改了模块表"


def _parse(text: str) -> ast.AST | None:
    """The tree of ``text``; None for a syntax error (it costs the student the cell, it
    cannot tamper); ``_UNPARSABLE`` errors go to the caller."""
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def scan_source(source: str) -> list[str]:
    """Reasons to review one cell's code (empty when nothing looks like tampering)."""
    if not isinstance(source, str):
        return []
    # the cache holds at most 2048 texts of 8 kB (a long cell is scanned without it)
    return list(_scanned(source) if len(source) <= 8192 else _scanned.__wrapped__(source))


@functools.lru_cache(maxsize=2048)
def _scanned(source: str) -> tuple[str, ...]:
    """:func:`scan_source`, once per text in a worker: a cell a student left as released,
    or answered as many others did, is parsed once per batch, not once per notebook."""
    if len(source) > MAX_CELL:
        return (TOO_LONG,)
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    try:
        tree = _parse("\n".join(lines))
        return tuple(sorted(set(_reasons(tree)))) if tree is not None else ()
    except _UNPARSABLE:
        pass
    found = {TOO_DEEP}
    for line in lines:  # what the parser can take of it, one line at a time
        try:
            tree = _parse(line)
            found.update(_reasons(tree) if tree is not None else ())
        except _UNPARSABLE:
            continue
    return tuple(sorted(found))


def scan_cells(sources: Iterable[str]) -> list[str]:
    """Reasons over all the student's cells, without duplicates, in a stable order;
    cells past :data:`MAX_TOTAL` characters in all are not parsed (and say so)."""
    found: set[str] = set()
    total = 0
    for source in sources:
        total += len(source) if isinstance(source, str) else 0
        found.update(scan_source(source) if total <= MAX_TOTAL else [TOO_LONG])
    return sorted(found)
