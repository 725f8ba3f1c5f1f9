"""The package's layering, derived from its source: no import cycle, no import across a wall.

The graph is read from every ``import`` and ``from ... import`` at any depth of every
module (function-level imports too), relative ones resolved; a ``from X import name``
whose ``X.name`` is a module is an edge to that module. A package's implicit import of
its parents is not an edge (Python initialises parents first, whatever they import).
The rules are the ones ``autograder/__init__.py`` states; each test that injects an
import into a copy of the tree shows the checker fails on it.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "autograder"

#: (what, the only prefixes it may import besides itself); ``""``: nothing at all.
ALLOWED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("autograder.errors", ()),
    ("autograder.settings", ("autograder.errors",)),
    ("autograder.engine.protocol", ("autograder.errors", "autograder.settings")),
    ("autograder.engine.child", ("autograder.engine.protocol", "autograder.errors",
                                 "autograder.settings")),
    ("autograder.engine.host", ("autograder.engine.protocol", "autograder.engine.child",
                                "autograder.bank.runner", "autograder.errors",
                                "autograder.settings")),
    ("autograder.bank", ("autograder.engine.protocol", "autograder.errors",
                         "autograder.settings")),
    ("autograder.grading", ("autograder.engine.host", "autograder.engine.protocol",
                            "autograder.errors", "autograder.settings")),
    ("autograder.authoring", ("autograder.engine.host", "autograder.engine.protocol",
                              "autograder.bank", "autograder.errors", "autograder.settings")),
    ("autograder.integrations", ("autograder", )),
    ("autograder.samples", ("autograder", )),
)
#: Nothing may import these (whatever ``ALLOWED`` says).
NEVER_IMPORTED = ("autograder.cli",)
#: Below ``integrations`` and ``samples``, nothing may import these.
FORBIDDEN_FOR_ALL_BUT_TOP = ("autograder.samples",)


def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


def import_graph(root: Path) -> dict[str, dict[str, int]]:
    """Module -> {module it imports: line of the first such import}."""
    modules = _modules(root)
    graph: dict[str, dict[str, int]] = {}
    for name, (path, package) in modules.items():
        here = name if package else name.rpartition(".")[0]
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            for target in targets:
                if target.split(".")[0] == PACKAGE and target != name:
                    edges.setdefault(target, node.lineno)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def violations(graph: dict[str, dict[str, int]]) -> list[str]:
    """Each import that crosses a wall, as ``importer:line -> imported (rule)``."""
    found = []
    for source, edges in sorted(graph.items()):
        rule = next(((p, allowed) for p, allowed in ALLOWED if _within(source, p)), None)
        for target, line in sorted(edges.items()):
            where = f"{source}:{line} -> {target}"
            if any(_within(target, p) for p in NEVER_IMPORTED):
                found.append(f"{where} (nothing imports the CLI)")
            elif rule is None:
                continue
            elif any(_within(target, p) for p in FORBIDDEN_FOR_ALL_BUT_TOP) \
                    and not _within(source, "autograder.samples"):
                found.append(f"{where} (only the CLI and the tests import the samples)")
            elif not _within(target, rule[0]) and target != PACKAGE \
                    and not any(_within(target, p) for p in rule[1]):
                found.append(f"{where} ({rule[0]} may import only {', '.join(rule[1]) or 'nothing of the package'})")
    return found


def test_the_graph_sees_imports_at_every_depth():
    graph = import_graph(ROOT)
    # the host's pool imports the bank's runner inside a function, the CLI its commands
    assert "autograder.bank.runner" in graph["autograder.engine.host.pool"]
    assert "autograder.integrations.selfcheck.command" in graph["autograder.cli"]
    assert "autograder.engine.protocol.codec" in graph["autograder.engine.child.runtime"]


def test_no_import_cycle():
    assert cycles(import_graph(ROOT)) == []


def test_no_import_crosses_a_wall():
    assert violations(import_graph(ROOT)) == []


def _tree(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / PACKAGE, tmp_path / PACKAGE,
                    ignore=shutil.ignore_patterns("__pycache__", "manifests"))
    return tmp_path


def _inject(root: Path, module: str, line: str) -> None:
    path = root / Path(*module.split(".")).with_suffix(".py")
    path.write_text(path.read_text(encoding="utf-8") + f"\n\ndef _injected():\n    {line}\n",
                    encoding="utf-8")


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    root = _tree(tmp_path)
    # the LMS name parser is imported by the intake; one import back closes a cycle
    _inject(root, "autograder.integrations.lms.names", "from .intake import grade  # noqa")
    assert cycles(import_graph(root)) == [["autograder.integrations.lms.intake",
                                           "autograder.integrations.lms.names"]]
    assert cycles(import_graph(ROOT)) == []


@pytest.mark.parametrize(("module", "line", "rule"), [
    ("autograder.engine.child.warmup", "from ..host import pool  # noqa", "engine.child"),
    ("autograder.engine.protocol.wire", "from ...bank import runner  # noqa", "engine.protocol"),
    ("autograder.engine.host.stop", "from ...bank import get_check  # noqa", "engine.host"),
    ("autograder.engine.host.stop", "from ...grading import batch  # noqa", "engine.host"),
    ("autograder.bank.lib.compare", "from ...engine.host import proxy  # noqa", "autograder.bank"),
])
def test_an_import_across_a_wall_is_found(tmp_path, module, line, rule):
    root = _tree(tmp_path)
    _inject(root, module, line)
    [found] = violations(import_graph(root))
    assert found.startswith(module) and rule in found


def test_every_folder_says_its_job_and_what_it_may_import():
    for init in sorted((ROOT / PACKAGE).rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert len(doc.split()) >= 15, f"{init.relative_to(ROOT)} says too little"
        assert "Imports:" in doc, f"{init.relative_to(ROOT)} does not say what it may import"


def test_no_module_is_over_400_lines():
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / PACKAGE).rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert long == {}
