"""Fast tests of the pipeline commands: help, version, one-line errors, parsing helpers."""

from __future__ import annotations

import copy
import os

import pytest
from click.testing import CliRunner
from pipeline_helpers import ROOT, A, read_nb, write_nb

from autograder import __version__
from autograder.authoring.course import find_root
from autograder.authoring.manifests import normalise
from autograder.authoring.views import self_check_source
from autograder.cli import main
from autograder.engine.host.hidden import check_calls
from autograder.engine.host.job import Job
from autograder.engine.host.manifest import load, release_notebook
from autograder.engine.host.prepare import PutBackTests, RestoreMetadata
from autograder.settings import ASSIGNMENTS as ASSIGNMENT_ORDER
from autograder.settings import DEFAULTS

COMMANDS = ["build", "grade", "check", "demo", "report"]


def run(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command):
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "Usage:" in result.output


def test_version():
    result = run("--version")
    assert result.exit_code == 0 and __version__ in result.output


def _one_line_error(result, *words):
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for word in words:
        assert word in lines[0]


def test_grade_missing_folder(tmp_path):
    _one_line_error(run("grade", str(tmp_path / "nope")), "does not exist")


def test_grade_empty_folder(tmp_path):
    _one_line_error(run("grade", str(tmp_path)), "no submissions")


def test_grade_unknown_assignment(tmp_path):
    (tmp_path / "alice" / A).mkdir(parents=True)
    _one_line_error(run("grade", str(tmp_path), "--assignment", "q9_nope"), "unknown assignment")


def test_check_missing_notebook(tmp_path):
    _one_line_error(run("check", str(tmp_path / "q1_value_scaling.ipynb")), "does not exist")


def test_check_malformed_notebook(tmp_path):
    bad = tmp_path / f"{A}.ipynb"
    bad.write_text('{"cells": [', encoding="utf-8")
    _one_line_error(run("check", str(bad)), "not a valid notebook")


def test_check_unknown_assignment(tmp_path):
    nb = tmp_path / "mine.ipynb"
    write_nb(read_nb(ROOT / "release" / A / f"{A}.ipynb"), nb)
    _one_line_error(run("check", str(nb), "--assignment", "q9_nope"), "unknown assignment")


def test_demo_refuses_a_folder_inside_the_repository():
    _one_line_error(run("demo", "--dir", str(ROOT / "docs" / "demo-here")), "inside the repository")
    assert not (ROOT / "docs" / "demo-here").exists()


def test_demo_refuses_a_non_empty_folder(tmp_path):
    (tmp_path / "something").write_text("x")
    _one_line_error(run("demo", "--dir", str(tmp_path)), "not empty")


def test_find_root_from_a_subdirectory(monkeypatch):
    monkeypatch.chdir(ROOT / "autograder" / "bank")
    assert find_root() == ROOT
    assert find_root(ROOT / "source" / A) == ROOT


# ------------------------------------------------------------------ build helpers


def test_self_check_cells_call_the_hidden_checks():
    source = ('x = 1\nassert x\n### BEGIN HIDDEN TESTS\nfrom autograder.bank.runner import run_check\n'
              'run_check("q1.hand_example", weights_2I=weights_2I,\n'
              '          output_2I=output_2I)\n### END HIDDEN TESTS')
    code = self_check_source(check_calls(source))
    assert 'self_check("q1.hand_example", weights_2I=weights_2I, output_2I=output_2I)' in code
    assert "run_check" not in code


def test_normalise_ignores_ids_outputs_and_volatile_metadata():
    nb = read_nb(ROOT / "solutions" / A / f"{A}.ipynb")
    other = copy.deepcopy(nb)
    for cell in other.cells:
        cell.id = "x" + cell.id[:8]
        cell.metadata["collapsed"] = True
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], 7
    assert normalise(nb) == normalise(other)
    other.cells[3].source += " "
    assert normalise(nb) != normalise(other)


def test_normalise_sees_a_tag_change():
    """A tag alone decides behaviour (raises-exception lets exercises' Run All go on), so
    `build --check` must see it change."""
    nb = read_nb(ROOT / "exercises" / A / f"{A}.ipynb")
    tagged = next(c for c in nb.cells if "raises-exception" in c.metadata.get("tags", []))
    before = normalise(nb)
    tagged.metadata["tags"] = []
    assert normalise(nb) != before


def test_every_source_test_cell_has_a_self_check_in_exercises():
    for a in ASSIGNMENT_ORDER:
        ex = ROOT / "exercises" / a / f"{a}.ipynb"
        nb = read_nb(ex)
        # practice 拓展 release their test cells ungraded: they have self-checks all the same
        tests = {s.grade_id for s in load(ex.parent.name).cells if s.is_test or s.is_practice}
        grade_ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells
                     if c.cell_type == "code"
                     and c.metadata.get("nbgrader", {}).get("grade_id") in tests]
        selfchecks = [c.id for c in nb.cells if c.id.startswith("selfcheck-")]
        assert selfchecks == [f"selfcheck-{g}"[:64] for g in grade_ids]


# ------------------------------------------------------------------ repairing submissions


def _release():
    return release_notebook(load(A))


def _ids(nb):
    return [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]


def _repair(sub, tmp_path):
    job = Job("alice", A, tmp_path, load(A), DEFAULTS)
    job.nb = sub
    RestoreMetadata()(job)
    PutBackTests()(job)
    return job


def test_repair_restores_stripped_metadata_by_cell_id(tmp_path):
    release, sub = _release(), _release()
    for cell in sub.cells:
        cell.metadata.pop("nbgrader", None)
    job = _repair(sub, tmp_path)
    assert _ids(sub) == _ids(release)
    restored = sum(1 for c in release.cells if c.metadata.get("nbgrader"))
    assert "元数据" in job.notes[0].zh and f"{restored} cells" in job.notes[0].en
    assert len(job.notes) == 1  # nothing had to be put back


def test_repair_puts_back_deleted_and_renamed_test_cells(tmp_path):
    release, sub = _release(), _release()
    sub.cells = [c for c in sub.cells if _ids(release)[release.cells.index(c)] != "test_softmax"]
    for cell in sub.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "test_attention":
            cell.metadata.nbgrader.grade_id = "my_test"
            cell.id = "changed"
    job = _repair(sub, tmp_path)
    # the renamed cell is recognised by its (locked) text, the deleted one put back
    assert "test_attention" in job.notes[0].en and "test_softmax" in job.notes[1].en
    ids = [i for i in _ids(sub) if i]
    assert ids.index("test_softmax") == ids.index("softmax_impl") + 1
    assert "my_test" not in ids


def test_the_bank_stays_light_for_the_exercises_self_checks():
    # the self-practice edition imports autograder.bank in the student's kernel
    code = ("import sys, autograder.bank; "
            "sys.exit(any(m in sys.modules for m in ('nbformat', 'nbgrader', 'click')))")
    assert os.system(f"cd {ROOT} && {os.sys.executable} -c \"{code}\"") == 0
