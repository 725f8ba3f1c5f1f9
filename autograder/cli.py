"""The ``autograder`` command: a thin layer over keyword-only functions.

Each subcommand parses its arguments and forwards them to one function of the
Python API, so the CLI and the API cannot drift apart.
"""

from __future__ import annotations

import sys

import click

from . import __version__
from .course import CourseError


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


@main.command("hand-example")
def hand_example_cmd() -> None:
    """Print the lecture's hand example computed by the reference attention."""
    from .reference import hand_example

    for v_scale in (2.0, 3.0):
        output, weights = hand_example(v_scale=v_scale)
        click.echo(f"W_v = {v_scale:g}I")
        click.echo(f"  weights = {weights.round(3).tolist()}")
        click.echo(f"  output  = {output.round(3).tolist()}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
