"""How the grader starts Python processes of its own: never importing from a folder others can write.

``python -m module`` puts the working folder first on ``sys.path``; a ``json.py`` that
another user left in a shared temporary folder, or in the folder of a notebook, would
then run inside the check. Every process the check starts (the daemon, the check cell's
``autograder check``, a plain child) is started with :func:`safe_python` in a working
folder of its own, and with ``PYTHONSAFEPATH=1`` for what it starts in turn. The zygote
has its own (:mod:`.zygote_link`).
"""

from __future__ import annotations

import os
import sys

__all__ = ["safe_python", "safe_env"]


def safe_python() -> list[str]:
    """This interpreter without the working folder on its import path: ``-P`` (3.11+).
    Python 3.10 has no such flag, so the caller's working folder must be private."""
    return [sys.executable, "-P"] if sys.version_info >= (3, 11) else [sys.executable]


def safe_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (this process's by default) with ``PYTHONSAFEPATH=1`` and without the
    empty entries of ``PYTHONPATH`` (an empty entry is the working folder)."""
    env = dict(os.environ if env is None else env)
    env["PYTHONSAFEPATH"] = "1"
    if "PYTHONPATH" in env:
        parts = [p for p in env["PYTHONPATH"].split(os.pathsep) if p and p != "."]
        env["PYTHONPATH"] = os.pathsep.join(parts)
    return env
