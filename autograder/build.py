"""``autograder build``: the generated views of each source notebook.

From ``source/<a>/<a>.ipynb`` only, three views are generated:

- ``release/<a>/<a>.ipynb``: the student notebook, made by nbgrader's own
  ``generate_assignment`` in a temporary course;
- ``solutions/<a>/<a>.ipynb``: the answer key: solution code kept (markers removed),
  hidden tests removed, executed with nbclient so plots and values show;
- ``exercises/<a>/<a>.ipynb``: the self-practice edition: the release notebook plus,
  after each autograded test cell, a cell calling ``autograder.bank.self_check`` with
  the same arguments as that cell's hidden ``run_check`` call.

Every generated notebook starts with a markdown cell saying it is generated, from
which source, and not to edit it. Everything is generated into a temporary folder
first; a view file is replaced only when its content changed (outputs aside), so a
failed build leaves the committed views untouched.
"""

from __future__ import annotations

import ast
import copy
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from . import notebooks as nbs
from .course import ASSIGNMENTS, CourseError, find_root, new_course, source_notebook

__all__ = ["VIEWS", "present_assignments", "hidden_checks", "self_check_source", "build",
           "check", "normalise", "solution_notebook", "exercise_notebook"]

VIEWS: tuple[str, ...] = ("release", "solutions", "exercises")

HEADER_ID = "generated-header"
_VIEW_WORDS = {
    "release": ("学生版（发放给学生）", "student notebook, made by nbgrader generate_assignment"),
    "solutions": ("参考答案（含运行结果）", "answer key, executed"),
    "exercises": ("自学练习版（每个测试后附自我检查）", "self-practice edition with self-checks"),
}

Progress = Callable[[str], None]


def present_assignments(root: Path) -> list[str]:
    """The assignments that have a source notebook, in the lecture's order."""
    return [a for a in ASSIGNMENTS if source_notebook(root, a).is_file()]


# ------------------------------------------------------------------ hidden checks


def hidden_checks(source: str) -> list[str]:
    """The argument lists of the ``run_check(...)`` calls in a cell's hidden region.

    ``'run_check("q1.softmax", softmax=softmax)'`` gives ``['"q1.softmax", softmax=softmax']``.
    """
    regions = []
    inside, lines = False, []
    for line in source.split("\n"):
        if line.strip() == nbs.HIDDEN_BEGIN:
            inside, lines = True, []
        elif line.strip() == nbs.HIDDEN_END and inside:
            inside = False
            regions.append("\n".join(lines))
        elif inside:
            lines.append(line)
    calls = []
    for region in regions:
        tree = ast.parse(region)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "run_check"):
                segment = ast.get_source_segment(region, node) or ""
                inner = segment[segment.index("(") + 1: segment.rindex(")")]
                calls.append(" ".join(inner.split()))
    return calls


def check_names(args: list[str]) -> list[str]:
    """The check names (first positional arguments) of :func:`hidden_checks` results."""
    names = []
    for arg in args:
        call = ast.parse(f"f({arg})", mode="eval").body
        first = call.args[0] if call.args else None
        names.append(first.value if isinstance(first, ast.Constant) else "?")
    return names


def self_check_source(args: list[str]) -> str:
    """The code of a self-check cell running the checks ``args`` (from :func:`hidden_checks`)."""
    lines = ["# 自我检查：用评分程序的同一组检查（随机输入）检验上面的答案，打印诊断。",
             "from autograder.bank import self_check",
             ""]
    lines += [f"self_check({a})" for a in args]
    return "\n".join(lines)


def test_checks(source_nb: NotebookNode) -> dict[str, list[str]]:
    """Grade id of each autograded test cell -> its hidden run_check argument lists."""
    found = {}
    for cell in source_nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            found[meta["grade_id"]] = hidden_checks(cell.source)
    return found


# ------------------------------------------------------------------ views


def _header(view: str, assignment: str) -> NotebookNode:
    zh, en = _VIEW_WORDS[view]
    text = (f"> **自动生成，请勿编辑。** 本文件是 `source/{assignment}/{assignment}.ipynb` 的"
            f"{zh}，由 `autograder build` 生成；要修改请改源文件后重新运行 `autograder build`。\n>\n"
            f"> *Generated file, do not edit.* This is the {en} of "
            f"`source/{assignment}/{assignment}.ipynb`, written by `autograder build`; "
            "edit the source and rebuild instead.")
    cell = nbformat.v4.new_markdown_cell(text)
    cell.id = HEADER_ID
    return cell


def solution_notebook(source_nb: NotebookNode, assignment: str) -> NotebookNode:
    """The answer key (not yet executed): solutions without markers, no hidden tests."""
    nb = copy.deepcopy(source_nb)
    for cell in nb.cells:
        if nbs.HIDDEN_BEGIN in cell.source:
            cell.source = nbs.strip_region(cell.source, nbs.HIDDEN_BEGIN, nbs.HIDDEN_END)
        if nbs.is_solution_cell(cell):
            cell.source = nbs.strip_markers(cell.source)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nb.cells.insert(0, _header("solutions", assignment))
    return nb


def exercise_notebook(release_nb: NotebookNode, source_nb: NotebookNode,
                      assignment: str) -> NotebookNode:
    """The release notebook with a self-check cell after each autograded test cell."""
    checks = test_checks(source_nb)
    nb = copy.deepcopy(release_nb)
    cells = [_header("exercises", assignment)]
    for cell in nb.cells:
        cells.append(cell)
        gid = nbs.grade_id(cell)
        if cell.cell_type == "code" and checks.get(gid):
            extra = nbformat.v4.new_code_cell(self_check_source(checks[gid]))
            extra.id = f"selfcheck-{gid}"[:64]
            extra.metadata["tags"] = ["self-check"]
            cells.append(extra)
    nb.cells = cells
    return nb


def release_notebook(release_nb: NotebookNode, assignment: str) -> NotebookNode:
    nb = copy.deepcopy(release_nb)
    nb.cells.insert(0, _header("release", assignment))
    return nb


def _execute(nb: NotebookNode, cwd: Path, timeout: float) -> None:
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    client = NotebookClient(nb, timeout=int(timeout), kernel_name="python3",
                            resources={"metadata": {"path": str(cwd)}}, record_timing=False)
    try:
        # the kernel's own stderr chatter (e.g. "running over TCP") is not for users
        client.execute(stderr=subprocess.DEVNULL)
    except CellExecutionError as err:
        first = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
        raise CourseError(f"the answer key does not run: {first}; fix the source notebook "
                          "and run `autograder build` again") from None


def _generate(root: Path, workdir: Path, assignments: list[str], progress: Progress | None,
              timeout: float, execute: bool = True) -> dict[Path, NotebookNode]:
    """Relative path (``<view>/<a>/<a>.ipynb``) -> generated notebook."""
    say = progress or (lambda _msg: None)
    sources = {}
    for a in assignments:
        try:
            sources[a] = nbs.read(source_notebook(root, a))
        except Exception as err:  # nbformat raises several kinds for a broken file
            raise CourseError(f"source notebook {source_notebook(root, a)} is not a valid "
                              f"notebook ({type(err).__name__}); restore it from git") from None
    say(f"nbgrader generate_assignment {' '.join(assignments)}")
    course = new_course(workdir / "course", root, assignments)
    views: dict[Path, NotebookNode] = {}
    for a in assignments:
        rel = Path(a) / f"{a}.ipynb"
        release = nbs.read(course / "release" / rel)
        views[Path("release") / rel] = release_notebook(release, a)
        views[Path("exercises") / rel] = exercise_notebook(release, sources[a], a)
        key = solution_notebook(sources[a], a)
        if execute:
            say(f"executing solutions/{a}")
            run_dir = workdir / "run" / a
            run_dir.mkdir(parents=True)
            _execute(key, run_dir, timeout)
        views[Path("solutions") / rel] = key
    return views


# ------------------------------------------------------------------ comparison


_VOLATILE_NBGRADER = ("checksum", "cell_type")


def normalise(nb: NotebookNode | dict) -> list:
    """What ``--check`` compares: cell types, sources and nbgrader metadata per cell.

    Cell ids, outputs, execution counts and other metadata are volatile and ignored.
    """
    cells = []
    for cell in nb.get("cells", []):
        meta = dict(cell.get("metadata", {}).get("nbgrader", {}) or {})
        for key in _VOLATILE_NBGRADER:
            meta.pop(key, None)
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(source)
        cells.append([cell.get("cell_type"), source, meta])
    return cells


def _read_normalised(path: Path) -> list | None:
    try:
        return normalise(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def _start(root: Path | None) -> tuple[Path, list[str], Path]:
    """The course root, its assignments with a source notebook, and a scratch folder
    (inside the root, so finished files can be moved into place atomically)."""
    root = find_root(root)
    assignments = present_assignments(root)
    if not assignments:
        raise CourseError(f"no source notebooks under {root / 'source'}: "
                          "add source/<assignment>/<assignment>.ipynb first")
    return root, assignments, Path(tempfile.mkdtemp(prefix=".autograder-build-", dir=root))


def build(*, root: Path | None = None, progress: Progress | None = None,
          timeout: float = 120) -> list[Path]:
    """Regenerate the views of every assignment with a source notebook.

    Returns the view files written (relative to the root); unchanged files are kept
    as they are, so executed outputs do not churn.
    """
    root, assignments, scratch = _start(root)
    try:
        views = _generate(root, scratch, assignments, progress, timeout)
        staged = []
        for rel, nb in views.items():
            target = root / rel
            if target.is_file() and _read_normalised(target) == normalise(nb):
                continue
            tmp = scratch / "out" / rel
            nbs.write(nb, tmp)
            staged.append((tmp, target, rel))
        # everything generated: now move the changed files into place
        for tmp, target, _rel in staged:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, target)
        return [rel for _tmp, _target, rel in staged]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def check(*, root: Path | None = None, progress: Progress | None = None,
          timeout: float = 120) -> list[Path]:
    """The committed view files that differ from a fresh build (empty: all current)."""
    root, assignments, scratch = _start(root)
    try:
        # outputs are not compared, so the answer keys need not run here
        views = _generate(root, scratch, assignments, progress, timeout, execute=False)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return [rel for rel, nb in views.items()
            if _read_normalised(root / rel) != normalise(nb)]
