"""``autograder check NOTEBOOK``: a student's own run of every check, with diagnoses.

The student's notebook is copied, one cell per grade cell of the assignment is
appended (the same ``run_check`` arguments as the source's hidden tests, through a
reporter that prints one machine-readable line), and the copy is executed with
nbclient in the notebook's folder. Nothing is written next to the student's file.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .course import ASSIGNMENTS, CourseError, check_assignment, find_root, source_notebook

# Heavy imports (nbformat, nbclient) stay inside the functions: the student's kernel
# imports this module for :func:`report_line`.

__all__ = ["Outcome", "detect_assignment", "self_check_notebook", "report_line", "MARK"]

MARK = "AUTOGRADER-SELF-CHECK "


@dataclass
class Outcome:
    """One check on one grade cell: ``message`` is the Chinese diagnosis when it failed."""

    cell: str
    check: str
    title: str
    passed: bool
    message: str = ""


def report_line(name: str, /, **values) -> None:
    """Run one check in the student's kernel and print its outcome as one JSON line."""
    from .bank import CheckFailed, _run, get_check

    title = get_check(name).title
    try:
        _run(name, values)
        outcome = {"check": name, "title": title, "passed": True, "message": ""}
    except CheckFailed as err:
        # the report prints the title already; the message starts with it too
        message = str(err).removeprefix(f"{title}：")
        outcome = {"check": name, "title": title, "passed": False, "message": message}
    print(MARK + json.dumps(outcome, ensure_ascii=False))


def detect_assignment(path: Path, nb) -> str:
    """From the file name (``q1_value_scaling.ipynb``, ``q1_value_scaling-alice.ipynb``...),
    else from the grade ids of the notebook's cells."""
    from . import notebooks as nbs

    stem = path.stem
    for a in ASSIGNMENTS:
        if stem == a or stem.startswith(a):
            return a
    prefix = re.match(r"(q\d)", stem)
    if prefix:
        for a in ASSIGNMENTS:
            if a.startswith(prefix.group(1) + "_"):
                return a
    meta = nb.get("metadata", {}).get("autograder", {})
    if meta.get("assignment") in ASSIGNMENTS:
        return meta["assignment"]
    ids = {nbs.grade_id(c) for c in nb.cells} - {None}
    root = find_root()
    best, overlap = None, 0
    for a in ASSIGNMENTS:
        src = source_notebook(root, a)
        if src.is_file():
            common = len(ids & {nbs.grade_id(c) for c in nbs.read(src).cells})
            if common > overlap:
                best, overlap = a, common
    if best is None:
        raise CourseError(f"cannot tell which assignment {path.name} is: name it "
                          "<assignment>.ipynb or pass --assignment")
    return best


def self_check_notebook(*, notebook: Path, assignment: str | None = None,
                        timeout: float = 60, root: Path | None = None) -> list[Outcome]:
    """Run ``notebook`` and every check of its assignment; one outcome per check."""
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    from . import notebooks as nbs
    from .build import check_names, test_checks

    notebook = Path(notebook)
    if not notebook.is_file():
        raise CourseError(f"notebook {notebook} does not exist: give the path of your .ipynb file")
    try:
        nb = nbs.read(notebook)
    except Exception as err:
        raise CourseError(f"{notebook} is not a valid notebook ({type(err).__name__}): "
                          "restore it from your last saved version") from None
    root = find_root(root)
    assignment = check_assignment(assignment) if assignment else detect_assignment(notebook, nb)
    src = source_notebook(root, assignment)
    if not src.is_file():
        raise CourseError(f"assignment {assignment} has no source notebook in {root}: "
                          "update your copy of the course repository")
    checks = test_checks(nbs.read(src))
    expected = []
    for cell, args in checks.items():
        for arg, name in zip(args, check_names(args)):
            expected.append((cell, name))
            code = ("from autograder.selfcheck import report_line as _autograder_report\n"
                    f"_autograder_report({arg})")
            extra = nbs.code(code)
            extra.metadata["autograder_check"] = {"cell": cell, "check": name}
            nb.cells.append(extra)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    client = NotebookClient(nb, timeout=int(timeout), kernel_name="python3", allow_errors=True,
                            interrupt_on_timeout=True,
                            resources={"metadata": {"path": str(notebook.resolve().parent)}})
    died = False
    try:
        # the kernel's own stderr chatter (e.g. "running over TCP") is not for users
        client.execute(stderr=subprocess.DEVNULL)
    except DeadKernelError:
        died = True
    seen: dict[tuple[str, str], Outcome] = {}
    for cell in nb.cells:
        tag = cell.get("metadata", {}).get("autograder_check")
        if not tag:
            continue
        key = (tag["cell"], tag["check"])
        for output in cell.get("outputs", []):
            text = output.get("text", "") if output.get("output_type") == "stream" else ""
            for line in text.splitlines():
                if line.startswith(MARK):
                    data = json.loads(line[len(MARK):])
                    seen[key] = Outcome(tag["cell"], data["check"], data["title"],
                                        data["passed"], data["message"])
            if output.get("output_type") == "error" and key not in seen:
                seen[key] = Outcome(tag["cell"], tag["check"], _title(tag["check"]), False,
                                    _error_message(output))
    outcomes = []
    for cell, name in expected:
        if (cell, name) in seen:
            outcomes.append(seen[(cell, name)])
        else:
            why = ("内核在运行中退出（os._exit / exit() / 崩溃），检查没有运行"
                   if died else "检查没有运行（之前的单元格超时或内核无响应）")
            outcomes.append(Outcome(cell, name, _title(name), False, why))
    return outcomes


def _title(name: str) -> str:
    from .bank import get_check

    try:
        return get_check(name).title
    except (KeyError, ImportError):
        return name


def _error_message(output: dict) -> str:
    ename, evalue = output.get("ename", "Error"), output.get("evalue", "")
    if ename == "NameError":
        name = re.search(r"'(\w+)'", evalue)
        what = name.group(1) if name else evalue
        return f"变量或函数 {what} 还没有定义：请先运行（或完成）定义它的单元格。"
    if ename == "CellTimeoutError":
        return "运行超时被中断：是否有死循环？"
    return f"运行出错：{ename}: {evalue}"
