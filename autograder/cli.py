"""The ``autograder`` command: a thin layer over keyword-only functions.

Each subcommand parses its arguments and forwards them to one function of the
Python API, so the CLI and the API cannot drift apart.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

# jsonschema (under nbformat) imports rfc3987_syntax when it is installed, and that
# compiles a grammar for about 3 s; nbformat's schema never checks IRIs, so skip it here
sys.modules.setdefault("rfc3987_syntax", None)

import click  # noqa: E402

from . import __version__, cli_report, settings  # noqa: E402
from . import cli_output as show  # noqa: E402
from .errors import CourseError  # noqa: E402
from .settings import DEFAULTS, RowStatus  # noqa: E402


class _Group(click.Group):
    """Turns a :class:`CourseError` into one line on stderr and exit code 2."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except CourseError as err:
            click.echo(f"error: {err}", err=True)
            ctx.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="autograder")
def main() -> None:
    """Autograded assignments for lecture 9 (自注意力, self-attention).

    Students: `autograder check NOTEBOOK`. Instructors: `autograder build`, `autograder
    grade`. Everyone: `autograder demo` runs the whole pipeline on a sample class.
    """


def _limits(command):
    """``--timeout``, ``--cell-timeout`` and ``--memory``: the engine's limits per submission."""
    for option in reversed((
            click.option("--timeout", type=click.FloatRange(min=1), default=DEFAULTS.timeout,
                         show_default=True,
                         help="Wall-clock seconds per submission before it is stopped."),
            click.option("--cell-timeout", type=click.FloatRange(min=1),
                         default=DEFAULTS.cell_timeout, show_default=True,
                         help="Seconds per cell before it is interrupted (the rest still runs)."),
            click.option("--memory", type=click.IntRange(min=64), default=DEFAULTS.memory_mb,
                         show_default=True,
                         help="Memory per submission, in MiB, beyond the sandbox's own."))):
        command = option(command)
    return command


# ------------------------------------------------------------------ build


@main.command("build")
@click.option("--check", "check_only", is_flag=True,
              help="Regenerate into a temporary folder and fail if the committed views differ.")
@click.option("--timeout", type=float, default=settings.BUILD_TIMEOUT, show_default=True,
              help="Seconds per cell when executing the answer keys.")
@click.option("--extensions", type=click.Choice(settings.EXTENSION_MODES), default=None,
              help="What the release does with the 拓展 sections (default: "
                   "c.Autograder.extensions in nbgrader_config.py, else "
                   f"{settings.DEFAULT_EXTENSIONS}).")
def build_cmd(check_only: bool, timeout: float, extensions: str | None) -> None:
    """Regenerate release/, solutions/ and exercises/ from source/.

    release/ comes from nbgrader generate_assignment, solutions/ are the executed answer
    keys, exercises/ the student notebooks with a self-check cell after each test.
    """
    from .authoring import build as b

    console = show.console()
    with show.spinner(console) as bar:
        task = bar.add_task("building views", total=None)
        step = lambda msg: bar.update(task, description=f"building views: {msg}")  # noqa: E731
        if check_only:
            stale = b.check(progress=step, timeout=timeout, extensions=extensions)
        else:
            written = b.build(progress=step, timeout=timeout, extensions=extensions)
    if check_only:
        if stale:
            for rel in stale:
                click.echo(f"stale: {rel}", err=True)
            click.echo(f"error: {len(stale)} generated notebook(s) differ from source/: "
                       "run `autograder build` and commit the result", err=True)
            sys.exit(1)
        console.print("✅ release/, solutions/ and exercises/ are up to date with source/")
        return
    for rel in written:
        console.print(f"wrote {rel}")
    console.print(f"views up to date ({len(written)} file(s) changed)")


# ------------------------------------------------------------------ grade


def _verbose(verbose: bool) -> None:
    """``--verbose``: the engine's log on stderr (it always goes to the run's log file)."""
    import logging

    logger = logging.getLogger("autograder")
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
    if verbose and not any(getattr(h, "_autograder_cli", False) for h in logger.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        handler._autograder_cli = True
        logger.addHandler(handler)


@main.command("grade")
@click.argument("submissions", type=click.Path(path_type=Path))
@click.option("--assignment", "assignment", default=None,
              help="Grade only this assignment (default: every assignment found).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Submissions graded in parallel (default: number of CPUs).")
@_limits
@click.option("--salt-file", type=click.Path(path_type=Path), default=None,
              help="The course's secret salt (default: <course>/.autograder-salt, created "
                   "on first use).")
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("grades"),
              show_default=True, help="Folder for scores.csv, scores.json, feedback/ and the log.")
@click.option("--verbose", "-v", is_flag=True, help="Log every step to stderr.")
@click.option("--unprotected", is_flag=True,
              help="Grade even where student code would run as your own user (no user "
                   "namespaces, not root); every output is then marked unprotected. "
                   "Default: refuse (c.Autograder.allow_unprotected).")
@cli_report.due_option("For the class report (OUT/report.html): ")
def grade_cmd(submissions: Path, assignment: str | None, jobs: int | None, timeout: float,
              cell_timeout: float, memory: int, salt_file: Path | None, out: Path,
              verbose: bool, unprotected: bool, due: dict) -> None:
    """Grade SUBMISSIONS (nbgrader's submitted/<student>/<assignment>/<assignment>.ipynb,
    or a Canvas/Moodle "download submissions" zip or folder: rows then carry the LMS's ids).

    Each submission's code runs in a sandboxed child; the checks, seeds and scores stay
    in the grader. Scores go to OUT and to the course's gradebook.db, autograded notebooks
    to the course's autograded/. Exit code 0 when the batch ran, whatever the scores.
    """
    from dataclasses import replace

    from .integrations.lms import intake

    _verbose(verbose)
    console = show.console()
    settings = replace(DEFAULTS, timeout=timeout, cell_timeout=cell_timeout, memory_mb=memory,
                       allow_unprotected=unprotected or DEFAULTS.allow_unprotected)
    started = time.monotonic()
    # opened before the bar: bad input is one line, and a download is unpacked once
    with intake.opened(submissions=submissions, assignment=assignment) as batch:
        bar = show.bar(console)
        task = bar.add_task("starting the sandbox", total=batch.size)

        def said(verdict) -> None:  # a refusal is one line: the bar starts only after
            show.protection(console, verdict)
            bar.start()

        try:
            results = batch.grade(out=out, jobs=jobs, settings=settings, salt_file=salt_file,
                                  progress=show.progress(bar, task, "graded"), on_protection=said)
        finally:
            bar.stop()
    seconds = time.monotonic() - started
    show.summary(console, results, f"{len(results)} submission(s) graded in {seconds:.1f} s")
    cli_report.after_grade(console=console, out=out, due=due, submissions=submissions)


main.add_command(cli_report.report_cmd)  # ``autograder report``


@main.command("doctor")
@click.option("--course", type=click.Path(path_type=Path), default=None,
              help="The course folder (default: the one holding nbgrader_config.py here or above).")
@click.option("--quick", is_flag=True,
              help="Do not compare release/ with source/ (that runs nbgrader generate_assignment).")
def doctor_cmd(course: Path | None, quick: bool) -> None:
    """Say whether this machine is ready to grade, in one screen (paste it into a support
    request): the protection grading would get and why, Python and nbgrader versions, the
    course folder, release/ against source/, gradebook.db against the package's grade
    cells. Read-only. Exit code 0 when ready, 1 when something must be fixed first."""
    from .integrations.doctor import PROBLEM, diagnose

    findings = diagnose(course=course, quick=quick)
    for f in findings:
        click.echo(f"{f.state.upper() if f.state == PROBLEM else f.state:<7} {f.name}: {f.text}")
    problems = sum(f.state == PROBLEM for f in findings)
    click.echo(f"not ready: fix the {problems} problem(s) above" if problems else "ready to grade")
    sys.exit(1 if problems else 0)


# ------------------------------------------------------------------ check


@main.command("check")
@click.argument("notebook", type=click.Path(path_type=Path))
@click.option("--assignment", default=None,
              help="The assignment id (default: from the file name or the notebook's cells).")
@click.option("--timeout", type=click.FloatRange(min=1), default=DEFAULTS.cell_timeout,
              show_default=True, help="Seconds per cell before it is interrupted.")
def check_cmd(notebook: Path, assignment: str | None, timeout: float) -> None:
    """Run your NOTEBOOK and every check of its assignment; print a report in Chinese.

    The same checks as the grader, on practice inputs, in its sandbox where there is one
    (else a plain child process; the report says which). Exit code 0 only when every
    check passes (nbgrader validate exits 0 on failures).
    """
    from .integrations.selfcheck.command import self_check_notebook
    from .integrations.selfcheck.report import report_lines

    console = show.console()
    if sys.stdout.isatty():
        with show.spinner(console) as bar:
            bar.add_task(f"正在运行 {notebook.name} 与全部检查……", total=None)
            outcomes = self_check_notebook(notebook=notebook, assignment=assignment,
                                           timeout=timeout)
    else:  # a pipe (the notebook's check cell, a log): no spinner
        outcomes = self_check_notebook(notebook=notebook, assignment=assignment, timeout=timeout)
    for line in report_lines(notebook.name, outcomes):
        click.echo(line)  # never wrapped: the notebook's check cell prints these lines too
    if not all(o.passed for o in outcomes if not o.practice):
        sys.exit(1)


# ------------------------------------------------------------------ demo


@main.command("demo")
@click.option("--dir", "folder", type=click.Path(path_type=Path), default=None,
              help="An empty folder for the demo course (default: a new temporary folder).")
@click.option("--alternatives", is_flag=True,
              help="Also grade the correct alternative implementations of each assignment.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Submissions graded in parallel (default: number of CPUs).")
def demo_cmd(folder: Path | None, alternatives: bool, jobs: int | None) -> None:
    """Generate, grade and check a sample class for every assignment (repository untouched).

    Perfect student: full automatic marks; blank: 0; each mistaken student loses exactly
    the cells of its mistake, which the last-but-one column confirms.
    """
    from .samples.demo import demo

    console = show.console()
    started = time.monotonic()
    with show.bar(console) as bar:
        task = bar.add_task("preparing course", total=None)
        result = demo(folder=folder, alternatives=alternatives, jobs=jobs,
                      progress=show.progress(bar, task, "grading"),
                      on_step=lambda msg: bar.update(task, description=msg))
    seconds = time.monotonic() - started
    show.per_question(console, result)
    failed = [r for r in result.results if r.status == RowStatus.FAILED]
    if failed:
        show.summary(console, failed, "submissions that could not be graded")
    console.print(f"{len(result.results)} notebooks graded in {seconds:.0f} s")
    out = result.folder / "results"
    console.print(f"course: {result.folder}\nscores: {out / 'scores.csv'}\nclass report: "
                  f"{result.report}\nfeedback: {out / 'feedback'}/<student>/<a>/<a>.html")
    if not result.ok:
        click.echo("error: some sample students did not score as their mistakes predict "
                   "(❌ rows above): fix the bank's Variant.loses or the checks", err=True)
        sys.exit(1)
    console.print("✅ every sample student scored exactly as expected")


# ------------------------------------------------------------------ gradescope


@main.command("gradescope")
@click.argument("assignment")
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("autograder.zip"),
              show_default=True, help="The bundle to upload to Gradescope (a .zip).")
@_limits
@click.option("--visibility", default=settings.DEFAULT_VISIBILITY, show_default=True,
              type=click.Choice(settings.VISIBILITIES),
              help="When students see the per-test results (Gradescope's visibility).")
@click.option("--salt-file", type=click.Path(path_type=Path), default=None,
              help="Use this course salt (default: a new secret salt for the bundle).")
def gradescope_cmd(assignment: str, out: Path, timeout: float, cell_timeout: float,
                   memory: int, visibility: str, salt_file: Path | None) -> None:
    """Write a Gradescope autograder bundle for ASSIGNMENT (setup.sh, run_autograder, wheel).

    Upload OUT on the assignment's "Configure Autograder" page. It holds a secret salt:
    keep it private. Each submission gets one test per grade cell with the Chinese
    diagnosis; the written answers are listed for grading by hand.
    """
    from dataclasses import replace

    from .integrations.gradescope.bundle import make_bundle

    settings = replace(DEFAULTS, timeout=timeout, cell_timeout=cell_timeout, memory_mb=memory)
    bundle = make_bundle(assignment=assignment, out=out, settings=settings,
                         visibility=visibility, salt_file=salt_file)
    click.echo(f"wrote {bundle.path} ({bundle.size / 1024:.0f} KiB): "
               f"{', '.join(bundle.files)}; {bundle.requirements} pinned requirements")
    click.echo("upload it in Gradescope: assignment > Configure Autograder > Zip file upload "
               "(keep it private: it holds the salt)")


# ------------------------------------------------------------------ export


def _columns(pairs: tuple[str, ...]) -> dict[str, str]:
    columns = {}
    for pair in pairs:
        assignment, sep, header = pair.partition("=")
        if not sep or not header.strip():
            raise CourseError(f"--column {pair!r} must be ASSIGNMENT=HEADER, e.g. "
                              "q1_value_scaling='Lecture 9 Q1 (12345)'")
        columns[assignment.strip()] = header.strip()
    return columns


@main.command("feedback")
@click.argument("course", type=click.Path(path_type=Path))
@click.option("--assignment", default=None, help="Only this assignment.")
@click.option("--student", default=None, help="Only this student.")
def feedback_cmd(course: Path, assignment: str | None, student: str | None) -> None:
    """Rewrite COURSE's feedback pages with the hand grades in its gradebook.db (no student
    code runs), into COURSE/feedback/ for `nbgrader release_feedback`."""
    from .integrations.nbgrader.feedback import write_feedback

    click.echo(write_feedback(course=course, assignment=assignment, student=student).report())


@main.command("export")
@click.argument("results", type=click.Path(path_type=Path))
@click.option("--to", "to", required=True, type=click.Choice(settings.EXPORT_FORMATS),
              help="The gradebook format: Canvas import, Moodle grading worksheet, plain CSV.")
@click.option("--out", "out", type=click.Path(path_type=Path), required=True,
              help="The CSV file to write.")
@click.option("--assignment", default=None,
              help="Only this assignment (a Moodle worksheet holds one assignment).")
@click.option("--column", "column", multiple=True, metavar="ASSIGNMENT=HEADER",
              help="Canvas column header for an assignment, best 'Title (Canvas id)'.")
def export_cmd(results: Path, to: str, out: Path, assignment: str | None,
               column: tuple[str, ...]) -> None:
    """Write the gradebook CSV an LMS imports from RESULTS (autograder grade's --out folder).

    One row per student with the LMS's own id and the automatic total per assignment
    (written answers are graded by hand). Canvas: Grades > Import; Moodle: the
    assignment's "Upload grading worksheet".
    """
    from .integrations.lms.export import export

    book = export(results=results, to=to, out=out, assignment=assignment,
                  columns=_columns(column))
    click.echo(f"wrote {out}: {len(book.totals)} student(s), "
               f"{', '.join(book.assignments)}")
    if book.blanks:
        click.echo(f"left blank (a check broke, regrade first): {', '.join(book.blanks)}",
                   err=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
