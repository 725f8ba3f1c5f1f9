"""``autograder check NOTEBOOK``: a warm daemon's answer when one runs, else the check here.

The first check of a session runs cold (:func:`.check.run_check_notebook`) and then starts
the warm daemon (:mod:`.daemon`) for the next ones; ``AUTOGRADER_CHECK_DAEMON=0`` always
runs cold.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import CourseError
from . import daemon
from .check import Outcome, run_check_notebook

__all__ = ["self_check_notebook"]


def self_check_notebook(*, notebook: Path, assignment: str | None = None,
                        timeout: float | None = None) -> list[Outcome]:
    """Run ``notebook`` and every check of its assignment; one outcome per graded cell.

    A warm background process (:mod:`.daemon`) answers when one is running;
    otherwise the check runs here and starts one for next time.
    """
    if not Path(notebook).is_file():
        raise CourseError(f"notebook {notebook} does not exist: give the path of your .ipynb file")
    if daemon.enabled():
        warm = daemon.ask(Path(notebook), assignment, timeout or 0)
        if warm is not None:
            return warm
    outcomes = run_check_notebook(notebook=notebook, assignment=assignment, timeout=timeout)
    if daemon.enabled():
        daemon.start()
    return outcomes
