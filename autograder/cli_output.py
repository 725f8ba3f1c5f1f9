"""What the ``autograder`` command prints: rich tables, progress bars and spinners.

Used by :mod:`autograder.cli` only; nothing here grades, reads or writes a course.
"""

from __future__ import annotations

import sys

from .settings import RowStatus

__all__ = ["console", "bar", "progress", "spinner", "summary", "per_question", "protection"]


def console():
    from rich.console import Console

    # piped output (CI logs, files) gets a wide table instead of rich's 80 columns
    return Console(highlight=False, width=None if sys.stdout.isatty() else 160)


def bar(console):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=False)


def progress(bar, task, verb: str):
    """The ``progress(done, total, what)`` callback of a grading run, shown on ``bar``."""

    def progress(done: int, total: int, what: str) -> None:
        bar.update(task, completed=done, total=total,
                   description=f"{verb} {what}" if what else "grading")

    return progress


def protection(console, verdict) -> None:
    """The protection grading gets, in one line; a warning when there is none."""
    console.print(verdict.line(), markup=False, soft_wrap=True)
    if verdict.marker.startswith("none"):
        console.print("warning: grading UNPROTECTED (--unprotected): student code runs as "
                      "your own user and can read the course, its salt and other students' "
                      "work; every output is marked unprotected", style="bold red",
                      markup=False, soft_wrap=True)


def spinner(console):
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    return Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                    console=console, transient=True)


def summary(console, results, title: str) -> None:
    from rich.table import Table

    table = Table(title=title)
    table.add_column("student")
    table.add_column("assignment")
    table.add_column("auto", justify="right")
    table.add_column("status")
    table.add_column("reason / 原因", overflow="fold")
    for r in results:
        style = {RowStatus.NOTE: "yellow", RowStatus.FAILED: "red"}.get(r.status, "")
        review = f"\n[magenta]review / 需复核: {'; '.join(r.review)}[/magenta]" if r.review else ""
        table.add_row(r.student, r.assignment, f"{r.auto_score:g}/{r.auto_max:g}",
                      f"[{style}]{r.status}[/{style}]" if style else r.status,
                      r.reason + review)
    console.print(table)


def per_question(console, result) -> None:
    """One table per assignment: students × autograded cells, and the expectation check."""
    from rich.table import Table

    for a, rows in result.by_assignment().items():
        cells = [c for c in rows[0].max_scores if c not in rows[0].manual]
        table = Table(title=f"{a}: automatic points per grade cell", title_justify="left")
        table.add_column("student")
        for i, _c in enumerate(cells, 1):
            table.add_column(str(i), justify="right")
        table.add_column("total", justify="right")
        table.add_column("as expected", justify="center")
        for r in rows:
            marks = []
            for c in cells:
                s = r.cells.get(c)
                text = "·" if s is None else f"{s:g}"
                marks.append(f"[red]{text}[/red]" if (s or 0) < r.max_scores[c] else text)
            table.add_row(r.student, *marks, f"{r.auto_score:g}/{r.auto_max:g}",
                          "✅" if result.verdict(r) else "❌")
        console.print(table)
        legend = "  ".join(f"{i}={c.removeprefix('test_')}/{rows[0].max_scores[c]:g}"
                           for i, c in enumerate(cells, 1))
        console.print(f"  cells: {legend}", style="dim", markup=False)
        console.print("  as expected: perfect and alternatives full marks, blank 0, each "
                      "mistake loses exactly its cells and its feedback names it", style="dim")
