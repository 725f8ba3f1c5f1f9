"""What the parent keeps per submission outside the engine: failures of its own steps.

``autograder grade`` does a few things per submission in the parent process: keeping
its record as it arrives, building its row, staging its pages, writing its gradebook
rows. Each runs through :meth:`Guard.run`: one that raises is logged with its
traceback and costs that submission its row's status (``grader-error``) and a reason,
never the batch. :class:`Remark` is what the intake (an LMS download) says about a
submission before grading.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from ..engine.host.stop import printable

__all__ = ["Guard", "Remark", "Key"]

log = logging.getLogger("autograder")

Key = tuple[str, str]  # (student, assignment)


@dataclass(frozen=True)
class Remark:
    """What the intake says about one submission before it is graded (an LMS download:
    files it did not grade, names it could not read): ``notes`` are (zh, en) reasons
    for the row; ``refused``: not graded at all (the row says why)."""

    notes: tuple[tuple[str, str], ...] = ()
    refused: bool = False


class Guard:
    """The parent's per-submission steps: ``run`` one, and if it raises, log it and
    keep (step, error) against that submission; ``mark`` turns what was kept into the
    rows' status (the caller's ``grader-error``) and reasons. Nothing a step raises
    reaches the batch."""

    def __init__(self) -> None:
        self.failed: dict[Key, list[tuple[str, str]]] = {}

    def run(self, key: Key, step: str, fn: Callable, *args):
        """``fn(*args)``, or None when it raised (then kept against ``key``)."""
        try:
            return fn(*args)
        except Exception as err:  # noqa: BLE001 - the point: this submission only
            log.exception("%s/%s: step %r failed", key[0], key[1], step)
            self.fail(key, step, f"{type(err).__name__}: {err}")
            return None

    def fail(self, key: Key, step: str, error: str) -> None:
        self.failed.setdefault(key, []).append((step, printable(error, 300)))

    def mark(self, results: list, status: str) -> None:
        for r in results:
            for step, error in self.failed.pop((r.student, r.assignment), []):
                r.status = status
                r.add_reason(f"评分程序在“{step}”一步出错，此行需复核（详见 grading.log）",
                             f"the grader's step {step!r} failed for this submission "
                             f"({error}; see grading.log)")
