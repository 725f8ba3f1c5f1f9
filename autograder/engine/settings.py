"""The grading settings and their defaults, defined once (the CLI and nbgrader_config read them).

Kept free of heavy imports: the CLI reads it on every start."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GradeSettings", "DEFAULTS", "PRACTICE_SALT", "EXTENSION_MODES", "DEFAULT_EXTENSIONS"]

#: The salt of practice runs (``autograder check``, the exercises edition, plain
#: ``nbgrader autograde`` without ``AUTOGRADER_SALT``): public, so never used to grade
#: a class with ``autograder grade``, which reads a secret salt (:mod:`autograder.salt`).
PRACTICE_SALT = "lecture9-self-attention/practice"

#: What the release does with a notebook's 拓展 (extension) sections: ``graded`` (their
#: grade cells count, reported apart from the core), ``practice`` (in the release, not
#: scored: ungraded practice with the same checks) or ``omit`` (left out of the release).
EXTENSION_MODES = ("graded", "practice", "omit")
DEFAULT_EXTENSIONS = "practice"


@dataclass(frozen=True)
class GradeSettings:
    """``timeout``: wall-clock seconds per submission; ``cell_timeout``: seconds per cell
    (the cell is interrupted, later cells still run); ``memory_mb``: memory per
    submission; ``salt``: the course's secret seed salt (see :mod:`autograder.salt`);
    ``isolate``: Linux namespaces where the kernel allows them (turn off only where the
    grading machine is itself a per-submission container, e.g. Gradescope's); ``cgroups``:
    a memory cgroup per child where the machine allows, so shared memory and the child's
    tmpfs count towards ``memory_mb`` (off, or where none is allowed: the child refuses
    shared memory instead; see :mod:`.memcg`)."""

    timeout: float = 300.0
    cell_timeout: float = 60.0
    memory_mb: int = 2048
    salt: str = PRACTICE_SALT
    isolate: bool = True
    cgroups: bool = True


DEFAULTS = GradeSettings()
