"""The student's check: the report of ``autograder check`` and the release's check cell.

In-process: the report (causes first, each once; points per cell and the total as the
grader gives them; practice cells apart; Chinese lines), how the cell finds its notebook
(Jupyter Server's ``JPY_SESSION_NAME``, nbclient's cwd) and spots unsaved code, and that it
does nothing under nbgrader. One real sandbox run: grading skips the check cell, whatever
a submission put in it. One nbclient run: an exercises notebook with a wrong answer runs
to its last cell (``raises-exception``), whose check finds the notebook by its folder and
prints the grader's total.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
from pipeline_helpers import ROOT, without_plots

from autograder.authoring import cells as nbs
from autograder.authoring.views import RAISES, check_cell
from autograder.engine.host.manifest import load, release_notebook
from autograder.integrations.selfcheck import incell
from autograder.integrations.selfcheck.check import Outcome
from autograder.integrations.selfcheck.report import report_lines
from autograder.samples import alternatives, mistakes
from autograder.samples.submission import make_submission
from autograder.settings import SELF_CHECK_ID

A = "q1_value_scaling"
CAUSE = ("no_scaling", "缺少 1/√d_k 缩放")


def _outcomes() -> list[Outcome]:
    return [Outcome("test_a", "q1.a", "甲", False, "差了很多。【缺少 1/√d_k 缩放】……", 2.0,
                    misconceptions=(CAUSE,)),
            Outcome("test_b", "q1.b", "乙", True, "", 1.0),
            Outcome("test_c", "q1.c", "丙", False, "又差了。", 3.0, misconceptions=[list(CAUSE)]),
            Outcome("test_p", "q1.p", "丁", False, "拓展错了。", 1.0, practice=True,
                    misconceptions=(CAUSE,))]


def test_report_gives_the_causes_first_each_once_then_points_and_total():
    lines = report_lines("x.ipynb", _outcomes())
    text = "\n".join(lines)
    assert lines[1] == "最可能的原因（每个只列一次）："
    assert lines[2] == "  • 【缺少 1/√d_k 缩放】：test_a、test_c、test_p（共失 5 分）"
    assert text.count("【缺少 1/√d_k 缩放】：") == 1
    assert "❌ test_a（0 / 2 分）：甲" in lines and "✅ test_b（1 / 1 分）：乙" in lines
    assert lines.index("拓展练习（检查但不计分）：") < lines.index(
        "❌ test_p（拓展练习，不计分；计分时值 1 分）：丁")
    assert lines[-1] == "总分：1 / 6 分（自动评分部分，2 个单元格失分；文字回答由老师人工评分）"


def test_report_lines_are_chinese_only():
    names = re.compile(r"test_[a-z]+|x\.ipynb|1/√d_k")
    for line in report_lines("x.ipynb", _outcomes()):
        assert not re.search(r"[A-Za-z]{2,}", names.sub("", line)), line


def test_full_marks_and_no_causes():
    right = [Outcome("test_b", "q1.b", "乙", True, "", 1.0)]
    assert report_lines("x.ipynb", right)[1:] == ["各单元格得分：", "✅ test_b（1 / 1 分）：乙",
                                                  "总分：1 / 1 分（自动评分部分，全部通过；文字回答由老师人工评分）"]


# ------------------------------------------------------------------ the cell


def _notebook(path, *, check: bool = True) -> None:
    nb = nbs.new_notebook([nbs.code("x = 1"), *([check_cell(A)] if check else [])])
    nbs.write(nb, path)


def test_finds_the_notebook_jupyter_server_names(tmp_path):
    _notebook(tmp_path / "renamed.ipynb")
    _notebook(tmp_path / f"{A}.ipynb")
    env = {"JPY_SESSION_NAME": str(tmp_path / "renamed.ipynb")}
    assert incell.find_notebook(A, env=env, cwd=tmp_path) == tmp_path / "renamed.ipynb"
    # a stale name (the notebook renamed since the kernel started): the folder decides
    env = {"JPY_SESSION_NAME": str(tmp_path / "gone.ipynb")}
    assert incell.find_notebook(A, env=env, cwd=tmp_path) == tmp_path / f"{A}.ipynb"


def test_under_nbclient_the_one_notebook_with_a_check_cell(tmp_path):
    _notebook(tmp_path / "mine.ipynb")
    _notebook(tmp_path / "notes.ipynb", check=False)
    assert incell.find_notebook(A, env={}, cwd=tmp_path) == tmp_path / "mine.ipynb"
    _notebook(tmp_path / "copy.ipynb")
    assert incell.find_notebook(A, env={}, cwd=tmp_path) is None  # two: which? say so


def test_code_run_but_not_saved_is_found(tmp_path):
    _notebook(tmp_path / f"{A}.ipynb")
    ran = ["", "x = 1", "check_here('q1', In)"]
    assert incell.unsaved(ran, tmp_path / f"{A}.ipynb") == []
    assert incell.unsaved([*ran, "x = 2"], tmp_path / f"{A}.ipynb") == ["x = 2"]


def test_does_nothing_under_nbgrader(monkeypatch, capsys):
    def never(*_a, **_k):
        raise AssertionError("ran the check under nbgrader")

    monkeypatch.setattr(incell, "_run_check", never)
    monkeypatch.setattr(incell, "find_notebook", never)
    for execution in ("autograde", "validate"):
        monkeypatch.setenv("NBGRADER_EXECUTION", execution)
        incell.check_here(A, [])
        assert capsys.readouterr().out.strip() == incell.SKIPPED


def test_every_student_edition_ends_with_the_check_cell():
    for view in ("release", "exercises"):
        cell = nbs.read(ROOT / view / A / f"{A}.ipynb").cells[-1]
        assert nbs.grade_id(cell) == SELF_CHECK_ID and cell.metadata.nbgrader["locked"]
    assert load(A).by_grade_id(SELF_CHECK_ID).locked


# ------------------------------------------------------------------ real runs


def test_grading_never_runs_the_check_cell(tmp_path):
    """A submission's check cell with the grader's import and an exit in it: the text is
    restored, nothing of it runs (no output), nothing is flagged, every point kept."""
    from autograder.engine.host.job import Job
    from autograder.engine.host.pipeline import run
    from autograder.engine.host.zygote_link import Zygote
    from autograder.settings import PRACTICE_SALT, GradeSettings, Status

    nb = make_submission(nbs.read(ROOT / "source" / A / f"{A}.ipynb"), release_notebook(load(A)),
                         alternatives(A)[0])
    without_plots(nb)
    nb.cells[-1].source = "import autograder\nraise SystemExit('从检查单元格退出')"
    nbs.write(nb, tmp_path / f"{A}.ipynb")
    manifest, zygote = load(A), Zygote(figures=False, warm=False)
    try:
        job = run(Job("s", A, tmp_path, manifest, GradeSettings(salt=PRACTICE_SALT),
                      zygote=zygote))
    finally:
        zygote.close()
    lost = [s.grade_id for s in manifest.graded if not s.is_manual
            and job.result_for(s).status != Status.PASSED]
    assert lost == []
    last = job.nb.cells[-1]
    assert nbs.grade_id(last) == SELF_CHECK_ID and last.source == check_cell(A).source
    assert last.outputs == [] and job.review == []


def test_exercises_run_all_reaches_the_check_cell_and_its_total(tmp_path, monkeypatch):
    from nbclient import NotebookClient

    exercises = nbs.read(ROOT / "exercises" / A / f"{A}.ipynb")
    assert all(RAISES in c.metadata.get("tags", []) for c in exercises.cells
               if c.cell_type == "code" and (c.metadata.get("nbgrader") or {}).get("grade"))
    wrong = next(v for v in mistakes(A) if v.name == "global_max")
    nb = without_plots(make_submission(nbs.read(ROOT / "source" / A / f"{A}.ipynb"),
                                       exercises, wrong))
    nbs.write(nb, tmp_path / f"{A}.ipynb")
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.setenv("AUTOGRADER_CHECK_DAEMON", "0")
    run = nbformat.read(tmp_path / f"{A}.ipynb", as_version=4)
    NotebookClient(run, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    failed = [nbs.grade_id(c) for c in run.cells if c.cell_type == "code"
              and any(o.output_type == "error" for o in c.get("outputs", []))]
    assert failed == ["test_softmax_stable"]  # its visible assert: Run All went on
    report = "".join(o.get("text", "") for o in run.cells[-1].outputs)
    total = int(load(A).auto_max)
    assert "test_softmax_stable（0 / 1 分）" in report and f"总分：{total - 1} / {total} 分" in report, report
    assert "  • 【减去了整张打分表的最大值】：test_softmax_stable（共失 1 分）" in report


def test_the_wheel_disables_nbgraders_validate_button():
    """nbgrader's Validate runs only the visible asserts ("passes all the tests" for a
    notebook that loses points): the settings the wheel installs turn its plugin off
    (the browser test shows the button gone with them and present without)."""
    import nbgrader

    shipped = "jupyter-config/labconfig/page_config.d/attention-autograder.json"
    entry = f'"etc/jupyter/labconfig/page_config.d" = ["{shipped}"]'
    assert entry in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    disabled = json.loads((ROOT / shipped).read_text(encoding="utf-8"))["disabledExtensions"]
    plugin = "@jupyter/nbgrader:validate-assignment"
    assert disabled == {plugin: True}
    bundle = Path(nbgrader.__file__).parent / "labextension" / "static"
    assert any(f'id:"{plugin}"' in p.read_text(errors="replace") for p in bundle.glob("*.js"))


def test_a_saved_magic_is_not_taken_for_unsaved_code(tmp_path):
    """``In`` holds ``%pip install x`` as IPython rewrote it; the saved cell says ``%pip``."""
    from IPython.core.inputtransformer2 import TransformerManager

    nb = nbs.new_notebook([nbs.code("%pip install -q x.whl"), check_cell(A)])
    nbs.write(nb, tmp_path / f"{A}.ipynb")
    ran = TransformerManager().transform_cell("%pip install -q x.whl")
    assert "run_line_magic" in ran
    assert incell.unsaved(["", ran], tmp_path / f"{A}.ipynb") == []
