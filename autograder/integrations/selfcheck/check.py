"""``autograder check NOTEBOOK`` itself: the grading engine, run by a student on their own notebook.

The same pipeline as ``autograder grade`` (sandboxed child, checks in this process), with
the public practice salt, figures left unrendered and nothing written anywhere. It needs
only the installed package (its manifests) and the notebook, never ``source/``.

Where the sandbox's zygote cannot run (macOS, Windows, a Linux without what it needs, or
a zygote that fails to start) the notebook runs in a plain child process instead
(:mod:`autograder.engine.host.plainchild`): the same checks here, the same report, and
a line saying which way it ran (:attr:`Checked.mode`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...errors import CourseError
from ...settings import DEFAULTS, PRACTICE_SALT, GradeSettings, Status, check_assignment

__all__ = ["Outcome", "Checked", "run_check_notebook", "check_zygote"]

#: How the notebook ran: the zygote's :class:`~autograder.engine.protocol.limits.Protection`
#: (``namespaces``, ``separate-user``, ``none``) or ``plain`` (a plain child process).
PLAIN = "plain"


@dataclass
class Outcome:
    """One graded cell: ``message`` is the Chinese diagnosis when it did not pass."""

    cell: str
    check: str
    title: str
    passed: bool
    message: str = ""
    points: float = 0.0
    #: A test cell of a practice 拓展 section: reported, never scored.
    practice: bool = False
    #: (key, label) of each misconception the failed checks named, each once.
    misconceptions: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:  # lists when they come back from the daemon's JSON
        self.misconceptions = tuple((str(k), str(label)) for k, label in self.misconceptions)

    @property
    def earned(self) -> float:
        """What the grader gives the cell: all its points or none (a practice cell: 0)."""
        return 0.0 if self.practice or not self.passed else self.points


class Checked(list):
    """The outcomes, one per graded cell (a list: equal to a list of the same outcomes),
    and ``mode``: how the notebook ran."""

    def __init__(self, outcomes=(), mode: str = "") -> None:
        super().__init__(outcomes)
        self.mode = mode


def _read(notebook: Path):
    import nbformat

    if not notebook.is_file():
        raise CourseError(f"notebook {notebook} does not exist: give the path of your .ipynb file")
    try:
        return nbformat.read(str(notebook), as_version=4)
    except Exception as err:  # nbformat raises several kinds for a broken file
        raise CourseError(f"{notebook} is not a valid notebook ({type(err).__name__}): open it in "
                          "Jupyter and save it again") from None


def run_check_notebook(*, notebook: Path, assignment: str | None = None,
                       timeout: float | None = None, zygote=None) -> Checked:
    """The check itself, with ``zygote`` (a warm one) or a new single-use one; a plain
    child where no zygote can run here or it does not start."""
    import logging

    from ...engine.host.manifest import assignment_named, detect_assignment
    from ...engine.host.plainchild import PlainSpawner, zygote_missing
    from ...engine.host.zygote_link import ZygoteError

    notebook = Path(notebook)
    # the file name usually says which assignment it is: then the zygote starts before
    # this process reads the notebook (0.15 s of the cold check: importing nbformat)
    a = check_assignment(assignment) if assignment else assignment_named(notebook)
    if a is None or not notebook.is_file():
        nb = _read(notebook)  # a missing file is said here, before any child starts
        a = a or detect_assignment(notebook, nb)
    if zygote is not None:
        return _run(notebook, a, zygote, timeout)
    missing = zygote_missing()
    if not missing:
        try:  # the zygote starts now and warms up while this process loads the checks
            zygote = check_zygote(warm=False, tokenizer=a == "q5_cost_scaling")
        except CourseError as err:
            # root with no separate user: a plain child checks, as the student's own user
            # (the kernel already runs this code as that user; the check holds no secret:
            # public checks, practice salt)
            missing = str(err)
    if not missing:
        try:
            try:
                return _run(notebook, a, zygote, timeout)
            finally:
                zygote.close()
        except (ZygoteError, OSError) as err:  # a partial sandbox: a plain child checks
            missing = str(err)
    logging.getLogger("autograder.engine").warning("check without the sandbox: %s", missing)
    try:
        return _run(notebook, a, PlainSpawner(missing), timeout)
    except ZygoteError as err:  # not even a plain child: say so, in one line
        raise CourseError(f"本机无法启动运行 notebook 的子进程 / cannot start a process to run "
                          f"the notebook ({err}): allow Python to connect to 127.0.0.1 "
                          "(a firewall may block it) and run the check again") from None


def check_zygote(*, warm: bool, tokenizer: bool):
    """A zygote for self-checks, at the protection this machine gives (decided once:
    :mod:`autograder.engine.host.protection`). Running as your own user is fine here (your
    own notebook, public checks, practice salt). A root machine where no separate user
    can work is a one-line :class:`CourseError` (the daemon then stays off, and a check
    runs in a plain child as the student's own user)."""
    from ...engine.host.protection import decide
    from ...engine.host.zygote_link import Zygote
    from ...engine.protocol.limits import Protection

    verdict = decide(secrets=False)
    if verdict.blocked:
        raise CourseError(f"cannot run the notebook here: {verdict.refusal(True)}")
    return Zygote(figures=False, warm=warm, tokenizer=tokenizer,
                  isolate=verdict.level == Protection.NAMESPACES)


def _run(notebook: Path, assignment: str, zygote, timeout: float | None) -> Checked:
    from ...bank import checks_for
    from ...engine.host.job import Job
    from ...engine.host.manifest import load
    from ...engine.host.pipeline import PIPELINE, run
    from ...engine.host.plainchild import PlainSpawner
    from ...engine.host.prepare import FindNotebook

    _read(notebook)  # a broken file is one line, whichever way the notebook runs
    checks_for(assignment)  # load the checks while the zygote starts
    manifest = load(assignment)
    isolation = zygote.isolation  # a zygote that cannot start raises here, before any cell
    settings = GradeSettings(cell_timeout=timeout or DEFAULTS.cell_timeout, salt=PRACTICE_SALT)
    job = Job("", assignment, notebook.parent, manifest, settings, zygote=zygote)
    job.notebook_path = notebook
    run(job, steps=tuple(s for s in PIPELINE if not isinstance(s, FindNotebook)))
    if job.stopped:
        raise CourseError(f"{notebook.name}: {job.notes[-1].en}")
    outcomes = Checked(mode=PLAIN if isinstance(zygote, PlainSpawner)
                       else str(isolation.protection))
    for spec in (*manifest.graded, *manifest.practice):
        if spec.is_manual:
            continue
        result = job.result_for(spec)
        outcomes.append(Outcome(spec.grade_id, ", ".join(c.name for c in spec.checks),
                                spec.title, result.status == Status.PASSED,
                                "\n".join(result.messages),
                                spec.practice_points if spec.is_practice else spec.points,
                                spec.is_practice, tuple(result.misconceptions)))
    return outcomes
