"""Every error a user of the ``autograder`` commands can act on, in one place.

Each is a :class:`CourseError`: the CLI prints ``error: <message>`` on one line and exits
with code 2, and the message says what to do. Nothing here imports anything, so every
layer may raise them. The student's own faults (a function that raised, a child that
died) are not here: they are the student's outcome of a check
(:mod:`autograder.engine.protocol.faults`), never an error of the command.
"""

from __future__ import annotations

__all__ = ["CourseError", "ManifestError", "HiddenTestError", "SandboxUnavailable", "Unprotected"]


class CourseError(Exception):
    """A problem the user can fix; ``str()`` is one line saying what to do."""


class ManifestError(CourseError):
    """A missing or unreadable manifest (the installed package is incomplete)."""


class HiddenTestError(CourseError):
    """A hidden-test region (or its markers) not of the one accepted form
    (:mod:`autograder.engine.host.hidden`); the build names the notebook and cell."""


class SandboxUnavailable(CourseError):
    """No submission can be graded: the sandbox did not start (nothing is written)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"the sandbox could not be started ({reason}); what it said is in "
                         "grading.log beside the results")


class Unprotected(SandboxUnavailable):
    """Student code would run unprotected here (or as root), and the settings forbid it;
    decided before any child started (:mod:`autograder.engine.host.protection`)."""

    def __init__(self, reason: str) -> None:
        CourseError.__init__(self, f"refusing to grade: {reason}")
        self.reason = reason
