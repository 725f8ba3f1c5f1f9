"""Shared test helpers: the source notebooks' own solutions, loaded without a kernel."""

from __future__ import annotations

import contextlib
import functools
import io
import warnings
from pathlib import Path
from types import SimpleNamespace

import nbformat

from autograder.authoring.cells import grade_id, is_solution_cell
from autograder.engine.host.hidden import HIDDEN_BEGIN, HIDDEN_END, strip_markers, strip_region
from autograder.samples.variants import Variant

ROOT = Path(__file__).resolve().parent.parent


def solution_namespace(assignment: str, variant: Variant | None = None) -> SimpleNamespace:
    """Run the source notebook's code cells (solutions included, tests skipped) in-process.

    ``variant`` applies a sample student's edits first, so a test can grade a mistake
    without starting a kernel. Each notebook runs once per test process (q2's and q5's
    demos take seconds and a dozen modules ask for the same answers); every call gets a
    namespace of its own, so a test that sets or deletes a name changes no other test's.
    """
    return SimpleNamespace(**_solution_env(assignment, variant))


@functools.cache
def _solution_env(assignment: str, variant: Variant | None) -> dict:
    nb = nbformat.read(ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    env: dict = {"display": lambda *args, **kwargs: None, "__name__": "__student__"}
    for cell in nb.cells:
        if cell.cell_type != "code" or HIDDEN_BEGIN in cell.source:
            continue
        source = cell.source
        if variant and is_solution_cell(cell):
            for edit in variant.edits:
                if edit.cell == grade_id(cell):
                    source = source.replace(edit.old, edit.new)
        source = strip_markers(strip_region(source, HIDDEN_BEGIN, HIDDEN_END))
        if "plt." in source:  # plots are for people; skip them in unit tests
            continue
        exec(compile(source, f"<{assignment}:{grade_id(cell)}>", "exec"), env)
    return env


def hidden_calls(assignment: str) -> dict[str, tuple[str, list[str]]]:
    """Grade cell id -> (check name, keyword names) of each test cell's hidden check."""
    from autograder.engine.host.hidden import check_calls

    nb = nbformat.read(ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    calls = {}
    for cell in nb.cells:
        for call in check_calls(cell.source) if cell.cell_type == "code" else []:
            calls[grade_id(cell)] = (call.name, list(call.values))
    return calls


def grade_namespace(assignment: str, ns: SimpleNamespace) -> dict[str, str | None]:
    """Grade cell id -> ``None`` when its hidden check passes on ``ns``, else the message."""
    from autograder.bank.lib.compare import CheckFailed
    from autograder.bank.runner import run_check

    verdicts: dict[str, str | None] = {}
    for cell, (name, keywords) in hidden_calls(assignment).items():
        try:
            run_check(name, **{k: getattr(ns, k) for k in keywords})
            verdicts[cell] = None
        except CheckFailed as err:
            verdicts[cell] = str(err)
    return verdicts


def visible_failures(assignment: str, variant: Variant | None = None) -> dict[str, str]:
    """See :func:`_visible_failures`; cached, as several tests ask for the same run."""
    return dict(_visible_failures(assignment, variant))


@functools.cache
def _visible_failures(assignment: str, variant: Variant | None) -> tuple[tuple[str, str], ...]:
    return tuple(_run_visible(assignment, variant).items())


def _run_visible(assignment: str, variant: Variant | None) -> dict[str, str]:
    """Run the notebook as a student would see it: the solution (with ``variant``'s edits),
    every cell in order, test cells *without* their hidden region. Returns grade cell id ->
    the error its visible asserts raised, for each grade cell whose visible part failed.

    Plots run on matplotlib's Agg backend and are discarded.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nb = nbformat.read(ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    env: dict = {"display": lambda *args, **kwargs: None, "__name__": "__student__"}
    failures: dict[str, str] = {}
    tests = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
    for cell in nb.cells[: max(tests) + 1]:  # later cells cannot fail a visible assert
        if cell.cell_type != "code":
            continue
        source = cell.source
        if variant and is_solution_cell(cell):
            for edit in variant.edits:
                if edit.cell == grade_id(cell):
                    source = source.replace(edit.old, edit.new)
        source = strip_markers(strip_region(source, HIDDEN_BEGIN, HIDDEN_END))
        try:
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(compile(source, f"<{assignment}:{grade_id(cell)}>", "exec"), env)
        except Exception as err:  # a student's cell may fail; only grade cells are reported
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade") and cell.cell_type == "code":
                failures[grade_id(cell)] = f"{type(err).__name__}: {err}"
        finally:
            plt.close("all")
    return failures
