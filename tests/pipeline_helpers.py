"""Helpers for the pipeline tests: a throwaway copy of the course with one assignment."""

from __future__ import annotations

import os
import shutil
import subprocess
import traceback
from pathlib import Path

import nbformat

from autograder.authoring.course import new_course
from autograder.samples import sample_class, write_class

ROOT = Path(__file__).resolve().parent.parent
A = "q1_value_scaling"
#: The suite's stand-in for rfc3987_syntax (``tests/subprocess_path``, on PYTHONPATH by
#: ``conftest.py``), for a subprocess whose PYTHONPATH a test sets itself: 2 s less of
#: every start that imports nbformat.
SUBPROCESS_PATH = str(ROOT / "tests" / "subprocess_path")


def mini_repo(folder: Path, assignments: tuple[str, ...] = (A,)) -> Path:
    """``folder`` as a course checkout holding only ``assignments`` (source and views)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "nbgrader_config.py", folder / "nbgrader_config.py")
    for top in ("source", "release", "solutions", "exercises"):
        for a in assignments:
            if (ROOT / top / a).is_dir():
                shutil.copytree(ROOT / top / a, folder / top / a)
    for a in assignments:
        manifest = ROOT / "autograder" / "manifests" / f"{a}.json"
        (folder / "autograder" / "manifests").mkdir(parents=True, exist_ok=True)
        shutil.copy(manifest, folder / "autograder" / "manifests" / f"{a}.json")
    (folder / "docs").mkdir(exist_ok=True)
    return folder


def sample_submissions(course: Path, students: tuple[str, ...]) -> dict:
    """Write the named sample students of :data:`A` into ``course/submitted``."""
    everyone = sample_class(A, with_alternatives=True)
    chosen = {s: everyone[s] for s in students}
    write_class(course, ROOT / "source" / A / f"{A}.ipynb", A, chosen)
    return chosen


def prepared_course(folder: Path) -> Path:
    return new_course(folder, ROOT, [A])


def read_nb(path: Path):
    return nbformat.read(str(path), as_version=4)


def write_nb(nb, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


def without_plots(nb):
    """``nb`` without its ungraded plotting cells: they cannot change a score, and they
    are most of a notebook's running time (the feedback tests keep them)."""
    nb.cells = [c for c in nb.cells if "plt." not in c.source or c.metadata.get("nbgrader")]
    return nb


def cli_in_process(cwd: Path, *args: str, env: dict[str, str] | None = None
                   ) -> subprocess.CompletedProcess:
    """``autograder ARGS`` run in ``cwd`` by this test process, with its warm zygote
    (``tests/warm_zygote.py``), as a subprocess's result: for a test of what a command
    does, not of its start (a subprocess costs 4.5 s of imports and a zygote of its own).
    An exception the command let out is on stderr, as a subprocess would print it."""
    import warm_zygote
    from click.testing import CliRunner

    from autograder.cli import main

    old = os.getcwd()
    os.chdir(cwd)
    try:
        with warm_zygote.shared():
            done = CliRunner(env=env).invoke(main, list(args))
    finally:
        os.chdir(old)
    error = done.stderr
    if done.exc_info is not None and not isinstance(done.exception, SystemExit):
        error += "".join(traceback.format_exception(*done.exc_info))
    return subprocess.CompletedProcess(["autograder", *args], done.exit_code, done.stdout, error)
