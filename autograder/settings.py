"""Every default, limit and choice list of the package, defined once.

The CLI, ``nbgrader_config.py``, the engine and the integrations read them from here;
nothing else restates a default. Kept free of heavy imports (the CLI and the sandbox's
child read it on every start); it imports only :mod:`autograder.errors`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from .errors import CourseError

__all__ = ["ASSIGNMENTS", "check_assignment", "PACKAGE_DIR", "GradeSettings", "DEFAULTS",
           "PRACTICE_SALT", "SALT_FILE", "EXTENSION_MODES", "DEFAULT_EXTENSIONS", "STUDENT_USER",
           "STUDENT_UID", "STUDENT_SLOTS", "MAX_NOTEBOOK_BYTES", "MAX_DATA_FILES",
           "MAX_DATA_BYTES", "BUILD_TIMEOUT", "VISIBILITIES", "DEFAULT_VISIBILITY",
           "EXPORT_FORMATS", "Word", "Status", "RowStatus", "course_setting"]

#: The five assignments, in the lecture's order (``autograder.bank`` holds their checks).
ASSIGNMENTS: tuple[str, ...] = ("q1_value_scaling", "q2_dk_growth", "q3_permutation",
                                "q4_single_token", "q5_cost_scaling")

#: The installed ``autograder`` package (its checks, reference and manifests live here).
PACKAGE_DIR = Path(__file__).resolve().parent


def check_assignment(assignment: str) -> str:
    """``assignment`` if it is one of :data:`ASSIGNMENTS`, else a :class:`CourseError`."""
    if assignment not in ASSIGNMENTS:
        raise CourseError(f"unknown assignment {assignment!r}: choose one of {', '.join(ASSIGNMENTS)}")
    return assignment


#: The salt of practice runs (``autograder check``, the exercises edition, plain
#: ``nbgrader autograde`` without ``AUTOGRADER_SALT``): public, so never used to grade
#: a class with ``autograder grade``, which reads a secret salt (:mod:`autograder.grading.salt`).
PRACTICE_SALT = "lecture9-self-attention/practice"
#: The course's secret salt, created in the course folder the first time it is graded.
SALT_FILE = ".autograder-salt"
#: The grade id of the release's locked check cell (``autograder build`` adds it last):
#: it runs ``autograder check`` on its own notebook, so grading never runs it.
SELF_CHECK_ID = "autograder_check"

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

#: Largest notebook read for grading, wherever it comes from (a submission folder, an
#: LMS zip, Gradescope's upload).
MAX_NOTEBOOK_BYTES = 50 << 20
#: Data files sent along with a notebook into its sandbox: how many, how many bytes in all.
MAX_DATA_FILES, MAX_DATA_BYTES = 200, 100 << 20

#: Seconds per cell when ``autograder build`` executes the answer keys.
BUILD_TIMEOUT = 120.0

#: When Gradescope shows students the per-test results (Gradescope's own words).
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
DEFAULT_VISIBILITY = "visible"
#: The gradebook files ``autograder export`` writes.
EXPORT_FORMATS = ("canvas", "moodle", "csv")


@dataclass(frozen=True)
class GradeSettings:
    """``timeout``: wall-clock seconds per submission; ``cell_timeout``: seconds per cell
    (the cell is interrupted, later cells still run); ``memory_mb``: memory per
    submission; ``salt``: the course's secret seed salt (see :mod:`autograder.grading.salt`);
    ``isolate``: Linux namespaces where the kernel allows them (turn off only where the
    grading machine is itself a per-submission container, e.g. Gradescope's);
    ``output_mb``: output one notebook keeps, all cells together (the host counts it and
    accepts no larger answer from the child; the rest is replaced by a notice). The
    answer keys' outputs, figures included, are a small fraction of it;
    ``allow_unprotected``: grade even where student code would run as the grader's own
    user (no namespaces, and not root, so no separate user either); off by default, so
    grading refuses there (``autograder grade --unprotected`` or
    ``c.Autograder.allow_unprotected = True`` turn it on; never as root:
    :mod:`autograder.engine.host.protection`); ``cgroups``:
    a memory cgroup per child where the machine allows, so shared memory and the child's
    tmpfs count towards ``memory_mb`` (off, or where none is allowed: the child refuses
    shared memory instead; see :mod:`autograder.engine.host.memcg`)."""

    timeout: float = 300.0
    cell_timeout: float = 60.0
    memory_mb: int = 2048
    salt: str = PRACTICE_SALT
    isolate: bool = True
    output_mb: int = 16
    allow_unprotected: bool = False
    cgroups: bool = True


DEFAULTS = GradeSettings()


def course_setting(root: Path, name: str, default: object) -> object:
    """``c.Autograder.<name>`` from the course's ``nbgrader_config.py`` (``default``
    where it has none, or no such file); a file that does not load is a
    :class:`CourseError`."""
    config = Path(root) / "nbgrader_config.py"
    if not config.is_file():
        return default
    from traitlets.config.loader import PyFileConfigLoader

    try:
        loaded = PyFileConfigLoader(config.name, path=str(config.parent)).load_config()
    except Exception as err:  # the instructor's own Python: report, never guess
        raise CourseError(f"{config} does not load ({type(err).__name__}: {err}); fix it "
                          "and run the command again") from None
    return loaded.get("Autograder", {}).get(name, default)


class Word(str, Enum):
    """A word of a fixed vocabulary: compares, hashes, prints and serialises (JSON, CSV,
    pickle) as its plain string, so files and pages read exactly as before."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __hash__(self) -> int:
        return hash(self.value)


class Status(Word):
    """A graded cell's verdict, and a check's (a check is passed, failed or error)."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"      # the grader's check broke: never the student's 0
    MANUAL = "manual"    # a written answer, graded by hand
    NOT_RUN = "not-run"


class RowStatus(Word):
    """A submission's row in the scores table."""

    OK = "ok"
    NOTE = "note"                  # graded, with a remark (renamed file, intake note...)
    FAILED = "failed"              # could not be graded (no notebook, unreadable...)
    GRADER_ERROR = "grader-error"  # a check or a step of ours broke: not scored, review
    REFUSED = "refused"            # the intake refused the file: not graded
