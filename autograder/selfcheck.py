"""``autograder check NOTEBOOK``: the grading engine, run by a student on their own notebook.

The same pipeline as ``autograder grade`` (sandboxed child, checks in this process), with
the public practice salt, figures left unrendered and nothing written anywhere. It needs
only the installed package (its manifests) and the notebook, never ``source/``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .course import ASSIGNMENTS, CourseError, check_assignment

__all__ = ["Outcome", "detect_assignment", "self_check_notebook", "run_check_notebook"]


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


def detect_assignment(path: Path, nb) -> str:
    """From the file name (``q1_value_scaling.ipynb``, ``q1_value_scaling-alice.ipynb``...),
    else the notebook's metadata, else the grade ids its cells share with a manifest."""
    from .engine.manifest import ManifestError, load

    stem = path.stem
    for a in ASSIGNMENTS:
        if stem == a or stem.startswith(a):
            return a
    prefix = re.match(r"(q\d)", stem)
    if prefix:
        for a in ASSIGNMENTS:
            if a.startswith(prefix.group(1) + "_"):
                return a
    meta = nb.get("metadata", {}).get("autograder", {})
    source = str(meta.get("source", ""))
    for a in ASSIGNMENTS:
        if f"/{a}/" in source:
            return a
    ids = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id") for c in nb.cells} - {None}
    best, overlap = None, 0
    for a in ASSIGNMENTS:
        try:
            common = len(ids & {c.grade_id for c in load(a).cells})
        except ManifestError:
            continue
        if common > overlap:
            best, overlap = a, common
    if best is None:
        raise CourseError(f"cannot tell which assignment {path.name} is: name it "
                          "<assignment>.ipynb or pass --assignment")
    return best


def _read(notebook: Path):
    import nbformat

    if not notebook.is_file():
        raise CourseError(f"notebook {notebook} does not exist: give the path of your .ipynb file")
    try:
        return nbformat.read(str(notebook), as_version=4)
    except Exception as err:  # nbformat raises several kinds for a broken file
        raise CourseError(f"{notebook} is not a valid notebook ({type(err).__name__}): open it in "
                          "Jupyter and save it again") from None


def self_check_notebook(*, notebook: Path, assignment: str | None = None,
                        timeout: float | None = None) -> list[Outcome]:
    """Run ``notebook`` and every check of its assignment; one outcome per graded cell.

    A warm background process (:mod:`autograder.checkd`) answers when one is running;
    otherwise the check runs here and starts one for next time.
    """
    from . import checkd

    if not Path(notebook).is_file():
        raise CourseError(f"notebook {notebook} does not exist: give the path of your .ipynb file")
    if checkd.enabled():
        warm = checkd.ask(Path(notebook), assignment, timeout or 0)
        if warm is not None:
            return warm
    outcomes = run_check_notebook(notebook=notebook, assignment=assignment, timeout=timeout)
    if checkd.enabled():
        checkd.start()
    return outcomes


def run_check_notebook(*, notebook: Path, assignment: str | None = None,
                       timeout: float | None = None, zygote=None) -> list[Outcome]:
    """The check itself, with ``zygote`` (a warm one) or a new single-use one."""
    from .engine.proxy import Zygote

    notebook = Path(notebook)
    nb = _read(notebook)
    a = check_assignment(assignment) if assignment else detect_assignment(notebook, nb)
    if zygote is not None:
        return _run(notebook, a, zygote, timeout)
    # the zygote starts now and warms up while this process loads the checks
    zygote = Zygote(figures=False, warm=False, tokenizer=a == "q5_cost_scaling")
    try:
        return _run(notebook, a, zygote, timeout)
    finally:
        zygote.close()


def _run(notebook: Path, assignment: str, zygote, timeout: float | None) -> list[Outcome]:
    from .bank import PRACTICE_SALT, checks_for
    from .engine.manifest import ManifestError, load
    from .engine.pipeline import PIPELINE, FindNotebook, Job, run
    from .engine.settings import DEFAULTS, GradeSettings

    checks_for(assignment)  # load the checks while the zygote starts
    try:
        manifest = load(assignment)
    except ManifestError as err:
        raise CourseError(str(err)) from None
    settings = GradeSettings(cell_timeout=timeout or DEFAULTS.cell_timeout, salt=PRACTICE_SALT)
    job = Job("", assignment, notebook.parent, manifest, settings, zygote=zygote)
    job.notebook_path = notebook
    run(job, steps=tuple(s for s in PIPELINE if not isinstance(s, FindNotebook)))
    if job.stopped:
        raise CourseError(f"{notebook.name}: {job.notes[-1].en}")
    outcomes = []
    for spec in (*manifest.graded, *manifest.practice):
        if spec.is_manual:
            continue
        result = job.result_for(spec)
        outcomes.append(Outcome(spec.grade_id, ", ".join(c.name for c in spec.checks),
                                spec.title, result.status == "passed",
                                "\n".join(result.messages),
                                spec.practice_points if spec.is_practice else spec.points,
                                spec.is_practice))
    return outcomes
