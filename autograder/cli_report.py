"""The class report's part of the command: ``autograder report`` and the report that
``autograder grade`` writes after grading; :mod:`autograder.cli` registers both. Each
forwards to :func:`autograder.grading.report.write_report`."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from .errors import CourseError

__all__ = ["report_cmd", "due_option", "after_grade"]

_DUE_HELP = ("Due date, ISO 8601 (no zone: UTC), for every assignment or as "
             "ASSIGNMENT=DATE; repeatable. Default: the due dates in nbgrader's gradebook.db.")


def due_option(prefix: str = ""):
    """``--due``, repeatable, read as it is parsed (a bad date is a one-line error before
    anything runs): the due dates the report judges lateness by."""
    return click.option("--due", "due", multiple=True, metavar="[ASSIGNMENT=]DATE",
                        help=prefix + _DUE_HELP, callback=_parse_due)


def _parse_due(_ctx, _param, values: tuple[str, ...]) -> dict[str | None, datetime]:
    from .grading.report_rows import parse_due

    return parse_due(values)


def after_grade(*, console, out: Path, due: dict[str | None, datetime],
                submissions: Path) -> None:
    """What ``grade`` says last: where its outputs are, and its class report (due dates
    from the course's gradebook.db unless ``due`` says). The grades are written already:
    a report that cannot be written is a warning on stderr and the batch still exits 0."""
    from .grading.report import write_report
    from .integrations.nbgrader.grade import course_root

    console.print(f"scores: {out / 'scores.csv'}, {out / 'scores.json'}; "
                  f"feedback: {out / 'feedback'}; log: {out / 'grading.log'}")
    book = course_root(submissions, out) / "gradebook.db"
    try:
        click.echo(f"class report: {write_report(results=out, due=due, gradebook=book)}")
    except CourseError as err:
        click.echo(f"warning: class report not written: {err}", err=True)


@click.command("report")
@click.argument("results", type=click.Path(path_type=Path))
@click.option("--out", "out", type=click.Path(path_type=Path), default=None,
              help="The page to write (default: RESULTS/report.html).")
@due_option()
@click.option("--gradebook", type=click.Path(path_type=Path), default=None,
              help="nbgrader's gradebook.db for due dates (default: in RESULTS or its parent).")
def report_cmd(results: Path, out: Path | None, due: dict[str | None, datetime],
               gradebook: Path | None) -> None:
    """Write the class report of RESULTS (autograder grade's --out folder): one offline
    HTML page with a histogram per assignment, per-cell statistics, misconception counts
    linked to each student's feedback page, and the submissions to look at."""
    from .grading.report import write_report

    page = write_report(results=results, out=out, due=due, gradebook=gradebook)
    click.echo(f"wrote {page}")
