"""The grading settings and their defaults, defined once (the CLI and nbgrader_config read them).

Kept free of heavy imports: the CLI reads it on every start."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GradeSettings", "DEFAULTS", "PRACTICE_SALT", "EXTENSION_MODES", "DEFAULT_EXTENSIONS",
           "STUDENT_USER", "STUDENT_UID", "STUDENT_SLOTS"]

#: The salt of practice runs (``autograder check``, the exercises edition, plain
#: ``nbgrader autograde`` without ``AUTOGRADER_SALT``): public, so never used to grade
#: a class with ``autograder grade``, which reads a secret salt (:mod:`autograder.salt`).
PRACTICE_SALT = "lecture9-self-attention/practice"

#: What the release does with a notebook's 拓展 (extension) sections: ``graded`` (their
#: grade cells count, reported apart from the core), ``practice`` (in the release, not
#: scored: ungraded practice with the same checks) or ``omit`` (left out of the release).
EXTENSION_MODES = ("graded", "practice", "omit")
DEFAULT_EXTENSIONS = "practice"

#: Without namespaces, a grader running as root runs each child as a separate user: the
#: account the Gradescope bundle's setup.sh creates (uid and gid ``STUDENT_UID``), and
#: ``STUDENT_SLOTS`` numeric ids from ``STUDENT_UID`` on for children that run at once
#: (each used only while no account claims it and no process runs under it). 60600 lies
#: in a range no distribution or systemd allocates (60578-61183).
STUDENT_USER = "autograder-student"
STUDENT_UID = 60600
STUDENT_SLOTS = 64


@dataclass(frozen=True)
class GradeSettings:
    """``timeout``: wall-clock seconds per submission; ``cell_timeout``: seconds per cell
    (the cell is interrupted, later cells still run); ``memory_mb``: memory per
    submission; ``salt``: the course's secret seed salt (see :mod:`autograder.salt`);
    ``isolate``: Linux namespaces where the kernel allows them (turn off only where the
    grading machine is itself a per-submission container, e.g. Gradescope's);
    ``output_mb``: output one notebook keeps, all cells together (the host counts it and
    accepts no larger answer from the child; the rest is replaced by a notice). The
    answer keys' outputs, figures included, are a small fraction of it;
    ``allow_unprotected``: grade even where student code would run as the grader's own
    user (no namespaces, and not root, so no separate user either); the Gradescope
    bundle refuses to grade there instead; ``cgroups``:
    a memory cgroup per child where the machine allows, so shared memory and the child's
    tmpfs count towards ``memory_mb`` (off, or where none is allowed: the child refuses
    shared memory instead; see :mod:`.memcg`)."""

    timeout: float = 300.0
    cell_timeout: float = 60.0
    memory_mb: int = 2048
    salt: str = PRACTICE_SALT
    isolate: bool = True
    output_mb: int = 16
    allow_unprotected: bool = True
    cgroups: bool = True


DEFAULTS = GradeSettings()
