"""Course folders and the real nbgrader commands run in them.

nbgrader reads ``nbgrader_config.py`` from its working directory only, so every
nbgrader call here runs with ``cwd`` set to a course root: the repository itself, or
a temporary course that received a copy of the repository's config.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import CourseError
from ..settings import PACKAGE_DIR, SELF_CHECK_ID, check_assignment

__all__ = ["find_root", "source_notebook", "nbgrader", "new_course", "CellScore", "read_scores"]

#: ``python -m nbgrader`` without jsonschema's IRI checker, as ``autograder/cli.py`` runs:
#: half of each nbgrader command's CPU time (2 s of 4 for a generate_assignment)
_NBGRADER = ("import sys; sys.modules.setdefault('rfc3987_syntax', None); "
             "from nbgrader.apps.nbgraderapp import main; main()")


def find_root(start: str | Path | None = None) -> Path:
    """The repository root: the nearest folder above ``start`` with ``nbgrader_config.py``
    and ``source/``; falls back to the checkout this package was installed from."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "nbgrader_config.py").is_file() and (folder / "source").is_dir():
            return folder
    package_checkout = PACKAGE_DIR.parent
    if (package_checkout / "nbgrader_config.py").is_file() and (package_checkout / "source").is_dir():
        return package_checkout
    raise CourseError(f"no course found above {here}: run this inside the attention-autograder "
                      "repository (a folder with nbgrader_config.py and source/)")


def source_notebook(root: Path, assignment: str) -> Path:
    """``source/<assignment>/<assignment>.ipynb`` (one notebook per assignment)."""
    return root / "source" / check_assignment(assignment) / f"{assignment}.ipynb"


def nbgrader(args: list[str], cwd: Path, *, timeout: float | None = None,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``nbgrader ARGS`` in ``cwd``; output is captured, never raised on."""
    full_env = {**os.environ, **(env or {})}
    # nbgrader shells out to `alembic` when it creates a gradebook: it must be on PATH
    # even when this interpreter's venv was never activated.
    bindir = str(Path(sys.executable).parent)
    full_env["PATH"] = os.pathsep.join([bindir, full_env.get("PATH", "")])
    full_env.setdefault("PYTHONWARNINGS", "ignore")
    # the kernels nbgrader starts import this checkout's autograder, whichever checkout
    # the virtual environment was installed from
    checkout = str(PACKAGE_DIR.parent)
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [checkout, full_env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-c", _NBGRADER, *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def new_course(folder: Path, root: Path, assignments: list[str] | tuple[str, ...], *,
               extensions: str | None = None) -> Path:
    """A fresh nbgrader course in ``folder`` with ``assignments`` generated from ``root``
    by nbgrader's ``generate_assignment`` under the course's own ``nbgrader_config.py``;
    their 拓展 sections as ``extensions`` says (default: the course's configured mode,
    see :mod:`autograder.authoring.parts`)."""
    from . import cells as nbs
    from .parts import check_mode, configured_mode, sections

    mode = check_mode(extensions) if extensions else configured_mode(root)
    folder.mkdir(parents=True, exist_ok=True)
    _new_gradebook(folder / "gradebook.db")
    config = (root / "nbgrader_config.py").read_text(encoding="utf-8")
    (folder / "nbgrader_config.py").write_text(
        f"{config}\n# this course's extension mode\nc.Autograder.extensions = {mode!r}\n",
        encoding="utf-8")
    for assignment in assignments:
        src = source_notebook(root, assignment)
        if not src.is_file():
            raise CourseError(f"missing source notebook {src}: restore it from git")
        nb = nbs.read(src)
        nbs.check_markers(nb, str(src.relative_to(root)))
        sections(nb, str(src.relative_to(root)))
        shutil.copytree(src.parent, folder / "source" / assignment, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        done = nbgrader(["generate_assignment", assignment, "--force"], folder)
        if done.returncode != 0:
            raise CourseError(f"nbgrader generate_assignment {assignment} failed: "
                              f"{_last_error(done)}")
        _released_by_the_package(folder, root, assignment)
    return folder


def _new_gradebook(path: Path) -> None:
    """An empty gradebook with nbgrader's schema and version stamp, made in-process: on a
    course without one, nbgrader's first command makes it and asks the ``alembic`` command
    for the version in a subprocess (3 s of every new course's first command)."""
    from ..engine.host.gradebook import open_gradebook

    if not path.exists():
        open_gradebook(path).close()


def _released_by_the_package(course: Path, root: Path, assignment: str) -> None:
    """A release without the check cell was made without the course's first step (an
    ``nbgrader_config.py`` from before it): refused, so no build writes it."""
    from . import cells as nbs

    release = nbs.read(course / "release" / assignment / f"{assignment}.ipynb")
    if not release.cells or nbs.grade_id(release.cells[-1]) != SELF_CHECK_ID:
        raise CourseError(f"{root / 'nbgrader_config.py'} does not release through the "
                          "package: add `c.GenerateAssignment.preprocessors = "
                          "generate_assignment_preprocessors()` (from "
                          "autograder.integrations.nbgrader.preprocessors)")


def _last_error(done: subprocess.CompletedProcess) -> str:
    """nbgrader's last stderr line (where it states its error), for a one-line message:
    whether it failed is the exit code's to say, never this text."""
    lines = [ln.strip() for ln in (done.stderr or "").splitlines() if ln.strip()]
    return lines[-1][-300:] if lines else f"exit {done.returncode}"


@dataclass(frozen=True)
class CellScore:
    """One grade cell of one graded submission."""

    cell: str
    score: float | None
    max_score: float
    manual: bool


def read_scores(course: Path, assignment: str, student: str) -> list[CellScore]:
    """Per-cell scores of one autograded submission, from the course's gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        try:
            nb = gb.find_submission_notebook(assignment, assignment, student)
        except MissingEntry:
            return []
        order = {c.name: i for i, c in enumerate(gb.find_notebook(assignment, assignment).grade_cells)}
        cells = [CellScore(g.name, None if g.auto_score is None else float(g.auto_score),
                           float(g.max_score), bool(g.cell_type == "markdown"))
                 for g in nb.grades]
    return sorted(cells, key=lambda c: order.get(c.cell, 0))
