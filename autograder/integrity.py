"""Point the instructor at student code that tries to reach the grader.

Under ``autograder grade`` such code is harmless: it runs in the sandboxed child, where
the grader is not, so it can neither see nor change a check. Under plain ``nbgrader
autograde`` (the checks in the student's kernel) it could. Either way it is legal Python
and may be innocent, so it is never scored down: the row's ``review`` column names it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

__all__ = ["scan_source", "scan_cells"]

#: Modules whose attributes a student has no reason to rebind.
_GUARDED = {"np", "numpy", "sp", "sympy", "autograder", "builtins", "sys", "os", "math",
            "warnings", "signal", "nbgrader", "IPython"}
_NAMES = {"run_check", "self_check", "CheckFailed", "get_ipython", "__builtins__"}


def _root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _reasons(tree: ast.AST) -> Iterable[str]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if any(n.split(".")[0] in ("autograder", "nbgrader") for n in names):
                yield "imports the grader (autograder/nbgrader) 导入了评分程序"
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and _root(target) in _GUARDED:
                    yield f"rebinds {ast.unparse(target)} 修改了库函数"
                elif isinstance(target, ast.Name) and target.id in _NAMES:
                    yield f"rebinds {target.id} 重新定义了评分用的名字"
        elif isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in ("setattr", "delattr") and node.args and _root(node.args[0]) in _GUARDED:
                yield f"{name} on {ast.unparse(node.args[0])} 修改了库函数"
            elif name in ("os._exit", "sys.exit", "exit", "quit"):
                yield f"calls {name} 试图结束评分进程"
        elif isinstance(node, ast.Attribute) and node.attr == "modules" and _root(node) == "sys":
            yield "touches sys.modules 修改了模块表"


def scan_source(source: str) -> list[str]:
    """Reasons to review one cell's code (empty when nothing looks like tampering)."""
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return []  # a syntax error costs the student the cell; it cannot tamper
    return sorted(set(_reasons(tree)))


def scan_cells(sources: Iterable[str]) -> list[str]:
    """Reasons over all the student's cells, without duplicates, in a stable order."""
    found: set[str] = set()
    for source in sources:
        found.update(scan_source(source))
    return sorted(found)
