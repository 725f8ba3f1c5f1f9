"""``autograder build``: regenerate every generated file from ``source/``, or check them.

From ``source/<a>/<a>.ipynb`` only: ``release/`` (nbgrader's own ``generate_assignment``
under the course's ``nbgrader_config.py``, in a temporary course: :func:`.course.new_course`;
the instructor's own ``nbgrader generate_assignment`` writes the same), ``solutions/`` and
``exercises/``
(:mod:`.views`), and ``autograder/manifests/<a>.json`` (:mod:`.manifests`), shipped with
the package so that grading and ``autograder check`` never read ``source/``.

Every cell's markers are checked first (:func:`.cells.check_markers`): a marker the one
grammar cannot read stops the build with a one-line error naming the notebook and the
cell. Everything is generated into a temporary folder first; a file is replaced only
when its content changed (outputs aside), so a failed build leaves the committed files
untouched. ``--check`` compares a fresh build with the committed files instead.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from nbformat import NotebookNode

from ..errors import CourseError
from ..settings import ASSIGNMENTS, BUILD_TIMEOUT
from . import cells as nbs
from .course import find_root, new_course, source_notebook
from .manifests import manifest_text, normalise
from .parts import check_mode, configured_mode
from .views import exercise_notebook, graded_view, solution_notebook

__all__ = ["VIEWS", "MANIFESTS", "present_assignments", "build", "check"]

VIEWS: tuple[str, ...] = ("release", "solutions", "exercises")
MANIFESTS = Path("autograder") / "manifests"

Progress = Callable[[str], None]
log = logging.getLogger("autograder.build")


def present_assignments(root: Path) -> list[str]:
    """The assignments that have a source notebook, in the lecture's order."""
    return [a for a in ASSIGNMENTS if source_notebook(root, a).is_file()]


def _execute(nb: NotebookNode, cwd: Path, timeout: float) -> None:
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    client = NotebookClient(nb, timeout=int(timeout), kernel_name="python3",
                            resources={"metadata": {"path": str(cwd)}}, record_timing=False)
    chatter = cwd / "kernel-stderr.log"
    try:
        # the kernel's own stderr chatter (e.g. "running over TCP") goes to the log
        with open(chatter, "wb") as sink:
            client.execute(stderr=sink)
    except CellExecutionError as err:
        first = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
        raise CourseError(f"the answer key does not run: {first}; fix the source notebook "
                          "and run `autograder build` again") from None
    finally:
        if chatter.is_file() and chatter.stat().st_size:
            log.debug("kernel stderr while executing %s:\n%s", cwd.name,
                      chatter.read_text(errors="replace")[-4000:])


def _new_courses(workdir: Path, root: Path, assignments: list[str], mode: str) -> dict[str, Path]:
    """Assignment -> a course of its own where nbgrader's ``generate_assignment`` released
    it. Each is one nbgrader process (2 s, mostly imports) with a gradebook of its own, so
    they run side by side, one per core; a failure raises the first assignment's error in
    the lecture's order, as one after the other would."""
    def one(a: str) -> Path:
        return new_course(workdir / "course" / a, root, [a], extensions=mode)

    with ThreadPoolExecutor(max_workers=max(1, min(len(assignments), os.cpu_count() or 1))) as pool:
        return dict(zip(assignments, pool.map(one, assignments)))


def _generate(root: Path, workdir: Path, assignments: list[str], progress: Progress | None,
              timeout: float, mode: str, execute: bool = True) -> dict[Path, NotebookNode | str]:
    """Relative path -> generated notebook (``<view>/<a>/<a>.ipynb``) or manifest text
    (``autograder/manifests/<a>.json``); ``mode`` is what the release does with the
    notebooks' 拓展 sections (:mod:`autograder.authoring.parts`)."""
    say = progress or (lambda _msg: None)
    sources = {}
    for a in assignments:
        try:
            sources[a] = nbs.read(source_notebook(root, a))
        except Exception as err:  # nbformat raises several kinds for a broken file
            raise CourseError(f"source notebook {source_notebook(root, a)} is not a valid "
                              f"notebook ({type(err).__name__}); restore it from git") from None
        nbs.check_markers(sources[a], str(source_notebook(root, a).relative_to(root)))
    say(f"nbgrader generate_assignment {' '.join(assignments)}")
    courses = _new_courses(workdir, root, assignments, mode)
    files: dict[Path, NotebookNode | str] = {}
    for a in assignments:
        course = courses[a]
        rel = Path(a) / f"{a}.ipynb"
        release = nbs.read(course / "release" / rel)  # as nbgrader wrote it
        files[Path("release") / rel] = release
        files[Path("exercises") / rel] = exercise_notebook(release, sources[a], a)
        files[MANIFESTS / f"{a}.json"] = manifest_text(a, sources[a], graded_view(release),
                                                       course, mode=mode)
        key = solution_notebook(sources[a], a)
        if execute:
            say(f"executing solutions/{a}")
            run_dir = workdir / "run" / a
            run_dir.mkdir(parents=True)
            _execute(key, run_dir, timeout)
        files[Path("solutions") / rel] = key
    return files


# ------------------------------------------------------------------ comparison


def _read_normalised(path: Path) -> list | None:
    try:
        return normalise(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def _current(path: Path, content: NotebookNode | str) -> bool:
    """Whether the committed ``path`` already holds ``content`` (notebooks: outputs aside)."""
    if isinstance(content, str):
        return path.is_file() and path.read_text(encoding="utf-8") == content
    return path.is_file() and _read_normalised(path) == normalise(content)


def _stage(content: NotebookNode | str, tmp: Path) -> None:
    if isinstance(content, str):
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(content, encoding="utf-8")
    else:
        nbs.write(content, tmp)


def _start(root: Path | None, extensions: str | None) -> tuple[Path, list[str], str, Path]:
    """The course root, its assignments with a source notebook, the extension mode
    (``extensions``, else the course's configured one) and a scratch folder (inside the
    root, so finished files can be moved into place atomically)."""
    root = find_root(root)
    mode = check_mode(extensions) if extensions else configured_mode(root)
    assignments = present_assignments(root)
    if not assignments:
        raise CourseError(f"no source notebooks under {root / 'source'}: "
                          "add source/<assignment>/<assignment>.ipynb first")
    return root, assignments, mode, Path(tempfile.mkdtemp(prefix=".autograder-build-", dir=root))


def build(*, root: Path | None = None, progress: Progress | None = None,
          timeout: float = BUILD_TIMEOUT, extensions: str | None = None) -> list[Path]:
    """Regenerate the views and manifests of every assignment with a source notebook.

    Returns the view files written (relative to the root); unchanged files are kept
    as they are, so executed outputs do not churn. ``extensions`` overrides the course's
    configured extension mode for this build.
    """
    root, assignments, mode, scratch = _start(root, extensions)
    try:
        files = _generate(root, scratch, assignments, progress, timeout, mode)
        staged = []
        for rel, content in files.items():
            target = root / rel
            if _current(target, content):
                continue
            tmp = scratch / "out" / rel
            _stage(content, tmp)
            staged.append((tmp, target, rel))
        # everything generated: now move the changed files into place
        for tmp, target, _rel in staged:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, target)
        return [rel for _tmp, _target, rel in staged]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def check(*, root: Path | None = None, progress: Progress | None = None,
          timeout: float = BUILD_TIMEOUT, extensions: str | None = None) -> list[Path]:
    """The committed views and manifests that differ from a fresh build (empty: all current)."""
    root, assignments, mode, scratch = _start(root, extensions)
    try:
        # outputs are not compared, so the answer keys need not run here
        files = _generate(root, scratch, assignments, progress, timeout, mode, execute=False)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return [rel for rel, content in files.items() if not _current(root / rel, content)]
