"""The release notebook's last cell: ``autograder check`` on this notebook, from inside it.

The locked cell ``autograder build`` appends (:func:`autograder.authoring.views.check_cell`) calls :func:`check_here`
in the student's kernel. That finds the notebook (Jupyter Server names it in
``JPY_SESSION_NAME``; under nbclient the kernel runs in the notebook's folder), says it
checks the SAVED file and when it was saved, warns when code the kernel ran is not in
that file (the student has not saved since), and runs ``python -m autograder.cli check``
with the kernel's own interpreter (so the kernel's PATH does not matter) in a separate
process: the sandbox, the checks and the daemon live there, never in the kernel. That
process imports nothing from the notebook's folder (a safe import path, a working folder
of its own: others may write the notebook's folder on a shared hub).

Where the notebook is not a file beside the kernel: on Colab the cell asks Colab's front
end for the open notebook (``get_ipynb``, as Otter-Grader does) and checks that; elsewhere
(Kaggle, a front end without files) it prints the one line to run after uploading the
file: ``import autograder; autograder.check("q1_value_scaling.ipynb")`` (:func:`check`).

Under nbgrader (``autograde``, ``validate``: nbgrader sets ``NBGRADER_EXECUTION``) it does
nothing; ``autograder grade`` never runs the cell at all (:data:`~autograder.settings.SELF_CHECK_ID`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from ...engine.host.files import find_notebooks
from ...engine.host.pythonpath import safe_env, safe_python
from ...settings import MAX_NOTEBOOK_BYTES, SELF_CHECK_ID

__all__ = ["check_here", "check", "find_notebook", "colab_notebook", "unsaved", "SKIPPED"]

#: What the cell prints where nbgrader runs it.
SKIPPED = "（nbgrader 运行时跳过自我检查单元格）"
#: Seconds the whole check may take before the cell gives up.
CHECK_SECONDS = 600


def _has_check_cell(path: Path) -> bool:
    try:
        if path.stat().st_size > MAX_NOTEBOOK_BYTES:
            return False
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return False
    return any(isinstance(c, dict) and (c.get("metadata", {}).get("nbgrader") or {})
               .get("grade_id") == SELF_CHECK_ID for c in cells)


def find_notebook(assignment: str, *, env: Mapping[str, str], cwd: Path) -> Path | None:
    """The notebook this cell is in: ``JPY_SESSION_NAME`` when it names an existing
    notebook (Jupyter Server), else ``<assignment>.ipynb`` in ``cwd``, else the one
    notebook in ``cwd`` that has a check cell (nbclient); ``None`` when that is not one."""
    named = env.get("JPY_SESSION_NAME", "")
    if named.endswith(".ipynb") and (cwd / named).is_file():
        return (cwd / named).resolve()
    if (cwd / f"{assignment}.ipynb").is_file():
        return (cwd / f"{assignment}.ipynb").resolve()
    found = [p for p in find_notebooks(cwd) if _has_check_cell(p)]
    return found[0].resolve() if len(found) == 1 else None


def unsaved(executed: Iterable[str], path: Path) -> list[str]:
    """Code the kernel ran that no code cell of the saved ``path`` holds (this cell's own
    call and IPython's empty first entry aside)."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
        saved = {"".join(c["source"]) if isinstance(c.get("source"), list) else c.get("source", "")
                 for c in nb.get("cells", []) if c.get("cell_type") == "code"}
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return []
    saved = {s.strip() for s in saved} | {s.strip() for s in map(_as_run, saved)}
    return [src for src in executed if isinstance(src, str) and src.strip()
            and "check_here(" not in src and src.strip() not in saved]


def _as_run(source: str) -> str:
    """A cell's code as IPython's history (``In``) holds it: magics such as ``%pip``
    rewritten to calls; the source itself outside IPython."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except Exception:  # no IPython, or a cell it cannot parse: compare as written
        return source


def colab_notebook() -> dict | None:
    """The notebook open in Colab, as its front end holds it now (unsaved edits too), or
    ``None`` outside Colab or when the front end does not answer."""
    if "google.colab" not in sys.modules and not os.environ.get("COLAB_RELEASE_TAG"):
        return None  # not Colab (its kernel has loaded google.colab and sets the tag)
    try:
        from google.colab import _message

        answer = _message.blocking_request("get_ipynb", request="", timeout_sec=60)
    except Exception:  # an older Colab, a timeout: the message below says what to do
        return None
    nb = answer.get("ipynb") if isinstance(answer, dict) else None
    return nb if isinstance(nb, dict) and isinstance(nb.get("cells"), list) else None


def not_found_message(assignment: str) -> str:
    """What to do when the notebook is not a file here: one line that needs no terminal."""
    return (f"找不到本 notebook 的文件（Kaggle 等网页环境不把 notebook 存在内核旁边）。请先下载本 "
            f"notebook（文件 → 下载 .ipynb），上传到本会话的文件区，再在一个新单元格中运行：\n"
            f"    import autograder; autograder.check(\"{assignment}.ipynb\")")


def _run_check(path: Path, assignment: str | None) -> subprocess.CompletedProcess:
    env = {**safe_env(), "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1", "TERM": "dumb",
           "COLUMNS": "120"}
    command = [*safe_python(), "-m", "autograder.cli", "check", str(path.resolve())]
    if assignment:
        command += ["--assignment", assignment]
    # a working folder of its own: on Python 3.10 `-m` puts it first on sys.path
    folder = tempfile.mkdtemp(prefix="autograder-cell-")
    try:
        return subprocess.run(command, capture_output=True, text=True, encoding="utf-8",
                              errors="replace", env=env, cwd=folder, timeout=CHECK_SECONDS)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _report(path: Path, assignment: str | None) -> None:
    try:
        done = _run_check(path, assignment)
    except subprocess.TimeoutExpired:
        print(f"自我检查超过 {CHECK_SECONDS} 秒仍未结束，已停止：请在终端运行 "
              f"autograder check {path.name}")
        return
    print(done.stdout.rstrip())
    if done.returncode not in (0, 1) or not done.stdout.strip():
        print(f"自我检查没有完成（退出码 {done.returncode}）：{done.stderr.strip()[-2000:]}")


def _check_colab(assignment: str, nb: dict) -> None:
    folder = Path(tempfile.mkdtemp(prefix="autograder-colab-"))
    try:
        path = folder / f"{assignment}.ipynb"
        # the front end's JSON may leave out what a file on disk always has
        nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, **nb}
        path.write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")
        print("检查的是 Colab 中打开的这个 notebook 的当前内容（包括还没保存的修改）。")
        _report(path, assignment)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def check_here(assignment: str, executed: Iterable[str] = ()) -> None:
    """Print the report of ``autograder check`` on this cell's saved notebook."""
    if os.environ.get("NBGRADER_EXECUTION"):
        print(SKIPPED)
        return
    path = find_notebook(assignment, env=os.environ, cwd=Path.cwd())
    if path is None:
        nb = colab_notebook()
        if nb is not None:
            _check_colab(assignment, nb)
        else:
            print(not_found_message(assignment))
        return
    saved = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(path.stat().st_mtime))
    print(f"检查的是已保存的文件 {path.name}（保存于 {saved}）；没有保存的修改不会被检查。")
    behind = unsaved(list(executed), path)
    if behind:
        print(f"⚠ 注意：你运行过的 {len(behind)} 段代码不在已保存的文件里，文件比你最后运行的"
              "单元格旧。请先保存（Ctrl+S），再运行本单元格。")
    _report(path, assignment)


def check(notebook: str | os.PathLike, assignment: str | None = None) -> None:
    """``autograder.check("q1_value_scaling.ipynb")``: the check cell's report for a
    notebook file, from any cell (an uploaded copy on Kaggle or Colab; no terminal)."""
    path = Path(notebook).expanduser()
    if not path.is_file():
        print(f"找不到文件 {notebook}：请先把 notebook 上传到本会话的文件区，"
              "或写出它的完整路径。")
        return
    print(f"检查的是文件 {path.name}。")
    _report(path, assignment)
