"""``autograder demo`` and ``autograder check`` end to end, on the sandboxed engine."""

from __future__ import annotations

import os

import pytest
import warm_zygote
from click.testing import CliRunner
from pipeline_helpers import ROOT, A, mini_repo, read_nb, without_plots, write_nb

from autograder.cli import main
from autograder.engine.host.manifest import load, release_notebook
from autograder.samples import PERFECT, mistakes, write_class
from autograder.samples import demo as demo_module
from autograder.samples.demo import demo
from autograder.samples.submission import make_submission

pytestmark = pytest.mark.e2e


def _snapshot(folder):
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns
            for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def _write_class_without_plots(course, source_nb, assignment, students):
    """The demo's class without its ungraded plotting cells (``without_plots``): no
    verdict depends on them, they were half of the 31 notebooks' running time, and the
    solution's figures are drawn in the sandbox by ``test_samples.py``."""
    write_class(course, source_nb, assignment, students)
    for path in (course / "submitted").glob(f"*/{assignment}/*.ipynb"):
        write_nb(without_plots(read_nb(path)), path)


def test_demo_scores_every_sample_student_as_expected(tmp_path, monkeypatch):
    repo = mini_repo(tmp_path / "repo")
    before = _snapshot(repo)
    monkeypatch.setattr(demo_module, "write_class", _write_class_without_plots)
    with warm_zygote.shared():
        result = demo(folder=tmp_path / "demo", root=repo, jobs=2)
    assert _snapshot(repo) == before, "the demo changed the repository"
    students = {r.student: r for r in result.results}
    assert {"perfect", "blank"} <= set(students)
    assert {f"mistake-{v.name}" for v in mistakes(A)} <= set(students)
    perfect, blank = students["perfect"], students["blank"]
    assert perfect.auto_score == perfect.auto_max > 0
    assert blank.auto_score == 0.0
    for r in result.results:
        assert result.verdict(r), (r.student, r.lost, r.reason)
    assert result.ok
    assert (tmp_path / "demo" / "results" / "scores.csv").is_file()
    assert (tmp_path / "demo" / "results" / "feedback" / "perfect" / A / f"{A}.html").is_file()
    assert result.report == tmp_path / "demo" / "results" / "report.html"
    assert f'<section id="{A}">' in result.report.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def student_notebooks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("check")
    source = read_nb(ROOT / "source" / A / f"{A}.ipynb")
    release = release_notebook(load(A))
    naive = next(v for v in mistakes(A) if v.name == "naive_softmax")
    paths = {}
    for name, variant in (("perfect", PERFECT), ("naive", naive), ("blank", None)):
        path = folder / name / f"{A}.ipynb"
        write_nb(make_submission(source, release, variant), path)
        paths[name] = path
    renamed = folder / "renamed" / "my homework.ipynb"
    write_nb(read_nb(paths["naive"]), renamed)
    paths["renamed"] = renamed
    return paths


def _check(*args):
    """``autograder check`` from a folder outside any course: it needs only the package."""
    old = os.getcwd()
    os.chdir(args[0].parent)
    try:
        return CliRunner().invoke(main, ["check", *map(str, args)])
    finally:
        os.chdir(old)


def test_check_passes_the_perfect_notebook(student_notebooks):
    result = _check(student_notebooks["perfect"])
    assert result.exit_code == 0, result.output
    assert "❌" not in result.output and result.output.count("✅") >= 5


def test_check_fails_a_mistake_with_its_diagnosis(student_notebooks):
    result = _check(student_notebooks["naive"])
    assert result.exit_code == 1
    assert "❌ test_softmax_stable" in result.output
    assert "softmax 数值溢出" in result.output
    assert result.output.count("❌") == 1  # only the mistake's own cell


def test_check_of_a_blank_notebook_reports_every_check(student_notebooks):
    result = _check(student_notebooks["blank"], "--timeout", "30")
    assert result.exit_code == 1
    assert "✅" not in result.output.split("报告")[-1].split("通过")[0]
    assert "NotImplementedError" in result.output or "还没有实现" in result.output


def test_check_detects_the_assignment_from_the_cells(student_notebooks):
    result = _check(student_notebooks["renamed"])
    assert result.exit_code == 1 and "❌ test_softmax_stable" in result.output
