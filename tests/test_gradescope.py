"""The Gradescope bundle, unpacked into a folder laid out as Gradescope's ``/autograder``.

Nothing is installed: the bundle's own wheel is unpacked onto ``PYTHONPATH`` and its own
``run_autograder`` runs with this interpreter (``AUTOGRADER_PYTHON``), once per
submission as Gradescope would, all of them at once. The same notebooks go through
``autograder grade`` for comparison. Plot cells are dropped to keep it quick.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
import warm_zygote
from click.testing import CliRunner
from pipeline_helpers import SUBPROCESS_PATH, A, read_nb, sample_submissions, without_plots

from autograder.cli import main
from autograder.engine.host.manifest import load
from autograder.integrations.gradescope.bundle import FALLBACK, make_bundle
from autograder.integrations.gradescope.run import run
from autograder.integrations.nbgrader.grade import grade
from autograder.settings import STUDENT_UID, GradeSettings

pytestmark = pytest.mark.e2e

SALT = "test-gradescope"
SETTINGS = GradeSettings(timeout=60, cell_timeout=5, salt=SALT)
#: Gradescope's results.json fields (https://gradescope-autograders.readthedocs.io/en/latest/specs/)
TOP_FIELDS = {"score", "execution_time", "output", "output_format", "test_output_format",
              "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests",
              "leaderboard"}
TEST_FIELDS = {"score", "max_score", "status", "name", "name_format", "number", "output",
               "output_format", "tags", "visibility", "extra_data"}
FORMATS = {"text", "html", "simple_format", "md", "ansi"}
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}
#: A loop that ignores the interrupt: the engine has to kill it.
LOOP = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"


def validate(data: dict) -> None:
    """results.json as Gradescope's specification describes it."""
    assert set(data) <= TOP_FIELDS, set(data) - TOP_FIELDS
    assert isinstance(data["score"], float) and isinstance(data["execution_time"], (int, float))
    assert isinstance(data["output"], str) and data["output"]
    for key in ("output_format", "test_output_format"):
        assert data.get(key, "text") in FORMATS
    for key in ("visibility", "stdout_visibility"):
        assert data.get(key, "visible") in VISIBILITY
    for test in data["tests"]:
        assert set(test) <= TEST_FIELDS, set(test) - TEST_FIELDS
        assert type(test["score"]) is float and type(test["max_score"]) is float
        assert 0 <= test["score"] <= test["max_score"]
        assert isinstance(test["name"], str) and isinstance(test["output"], str)
        assert test.get("visibility", "visible") in VISIBILITY
        assert test.get("status", "passed") in ("passed", "failed")
        assert test.get("output_format", "text") in FORMATS
    json.dumps(data)


def _looping(nb):
    nb.cells.insert(0, nbformat.v4.new_code_cell(LOOP))
    return nb


def _root(base: Path, source: Path, site: Path, name: str, files: dict[str, bytes],
          user: int | None = None, config: dict | None = None) -> Path:
    """A Gradescope-shaped folder: source/ (the bundle), submission/, metadata."""
    root = base / name
    shutil.copytree(source, root / "source")
    (root / "submission").mkdir(parents=True)
    for filename, data in files.items():
        (root / "submission" / filename).write_bytes(data)
    if user is not None:
        meta = {"id": 1, "users": [{"id": user, "email": f"{user}@example.edu", "name": "x"}]}
        (root / "submission_metadata.json").write_text(json.dumps(meta))
    if config:
        data = json.loads((root / "source" / "config.json").read_text())
        (root / "source" / "config.json").write_text(json.dumps({**data, **config}))
    return root


def _start(root: Path, site: Path) -> subprocess.Popen:
    env = {**os.environ, "GRADESCOPE_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(site), SUBPROCESS_PATH])}
    return subprocess.Popen(["bash", str(root / "source" / "run_autograder")], cwd=root,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    base = tmp_path_factory.mktemp("bundle")
    (base / "salt").write_text(SALT + "\n")
    made = make_bundle(assignment=A, out=base / "autograder.zip", settings=SETTINGS,
                       salt_file=base / "salt")
    with zipfile.ZipFile(made.path) as zf:
        zf.extractall(base / "source")
    for script in ("setup.sh", "run_autograder"):  # extractall drops the modes
        (base / "source" / script).chmod(0o755)
    with zipfile.ZipFile(next((base / "source" / "wheels").glob("*.whl"))) as zf:
        zf.extractall(base / "site")
    return made, base / "source", base / "site"


@pytest.fixture(scope="module")
def runs(bundle, tmp_path_factory):
    """Every sample submission through run_autograder (in parallel; the three without a
    notebook to run through its Python entry point), and the same notebooks through
    ``autograder grade``."""
    _made, source, site = bundle
    base = tmp_path_factory.mktemp("runs")
    sample_submissions(base / "class", ("perfect", "mistake-naive_softmax"))
    nbs = {s: without_plots(read_nb(base / "class" / "submitted" / s / A / f"{A}.ipynb"))
           for s in ("perfect", "mistake-naive_softmax")}
    perfect = nbformat.writes(nbs["perfect"]).encode()
    mistake = nbformat.writes(nbs["mistake-naive_softmax"]).encode()
    roots = {
        "perfect": _root(base, source, site, "perfect", {f"{A}.ipynb": perfect}, user=1001),
        "mistake": _root(base, source, site, "mistake", {f"{A} (2).ipynb": mistake}, user=1002),
        "badjson": _root(base, source, site, "badjson", {f"{A}.ipynb": b'{"cells": ['}),
        "none": _root(base, source, site, "none", {f"{A}.py": b"print(1)\n"}),
        "several": _root(base, source, site, "several", {"a.ipynb": perfect,
                                                          "b.ipynb": mistake}),
        "loop": _root(base, source, site, "loop",
                      {f"{A}.ipynb": nbformat.writes(_looping(nbs["perfect"])).encode()},
                      config={"timeout": 10, "cell_timeout": 1.5}),
    }
    quick = ("none", "several", "badjson")  # no notebook to run: graded here, no subprocess
    procs = {name: _start(root, site) for name, root in roots.items() if name not in quick}
    for student, nb in (("1001", perfect), ("1002", mistake)):
        (base / "nbgrader" / student / A).mkdir(parents=True)
        (base / "nbgrader" / student / A / f"{A}.ipynb").write_bytes(nb)
    with warm_zygote.shared():
        graded = grade(submissions=base / "nbgrader", out=base / "out", settings=SETTINGS,
                       jobs=1)
    logs = {name: str(run(roots[name])) for name in quick}
    logs.update({name: proc.communicate(timeout=300)[0] for name, proc in procs.items()})
    data = {name: json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
            for name, root in roots.items()}
    return data, {r.student: r for r in graded}, logs


def test_the_bundle_follows_gradescopes_layout(bundle):
    made, source, _site = bundle
    with zipfile.ZipFile(made.path) as zf:
        names = set(zf.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
        wheel = next(n for n in names if n.endswith(".whl"))
    assert {"setup.sh", "run_autograder", "requirements.txt", "config.json", "salt"} <= names
    assert modes["setup.sh"] & 0o111 and modes["run_autograder"] & 0o111
    assert modes["salt"] & 0o077 == 0
    for script in ("setup.sh", "run_autograder"):
        assert (source / script).read_text().startswith("#!/usr/bin/env bash\n")
        assert subprocess.run(["bash", "-n", str(source / script)]).returncode == 0
    pins = (source / "requirements.txt").read_text().split()
    assert pins and all("==" in p for p in pins)
    assert {"numpy", "sympy", "nbformat", "latex2mathml"} <= {p.split("==")[0] for p in pins}
    with zipfile.ZipFile(source / wheel) as zf:
        assert f"autograder/manifests/{A}.json" in zf.namelist()
        assert "autograder/integrations/gradescope/run.py" in zf.namelist()
    setup = (source / "setup.sh").read_text()
    assert f"useradd --system --uid {STUDENT_UID}" in setup and f"--gid {STUDENT_UID}" in setup
    assert "gradescope.run --prepare" in setup
    assert setup.index("chmod -R a+rX") < setup.index("--prepare")  # closed after opened
    assert (source / "salt").read_text().strip() == SALT
    assert json.loads((source / "config.json").read_text())["assignment"] == A
    assert made.size < 2 << 20


@pytest.mark.parametrize("name", ["perfect", "mistake", "badjson", "none", "several", "loop"])
def test_every_results_json_follows_the_specification(runs, name):
    data, _graded, logs = runs
    validate(data[name])
    cells = [*load(A).graded, *load(A).practice]  # practice 拓展 are tests worth 0
    assert [t["name"].split("：")[0] for t in data[name]["tests"]] == \
        [s.grade_id for s in cells], logs[name]
    assert all(t["max_score"] == 0 for t in data[name]["tests"] if "practice" in t["tags"])


def test_scores_equal_autograder_grade(runs):
    data, graded, logs = runs
    for name, student in (("perfect", "1001"), ("mistake", "1002")):
        tests = {t["name"].split("：")[0]: t for t in data[name]["tests"]}
        row = graded[student]
        auto = {c: s for c, s in row.cells.items() if c not in row.manual}
        assert {c: tests[c]["score"] for c in auto} == auto, logs[name]
        assert data[name]["score"] == row.auto_score
        assert data[name]["extra_data"]["student"] == student
        assert data[name]["extra_data"]["protection"] == row.protection == "namespaces"
    assert data["perfect"]["score"] == load(A).auto_max
    assert data["mistake"]["score"] < load(A).auto_max


def test_failed_tests_carry_the_chinese_diagnosis(runs):
    data, _graded, _logs = runs
    tests = {t["name"].split("：")[0]: t for t in data["mistake"]["tests"]}
    failed = tests["test_softmax_stable"]
    assert failed["status"] == "failed" and failed["score"] == 0.0
    assert "softmax 数值溢出" in failed["output"]
    assert tests["test_softmax"]["output"] == "通过。"
    summary = data["mistake"]["output"]
    assert "自动评分" in summary and "test_softmax_stable" in summary
    # a single notebook with another name is graded, and the name is pointed out
    assert "文件名应为" in data["mistake"]["output"]


def test_written_answers_are_listed_for_hand_grading(runs):
    data, _graded, _logs = runs
    manual = [t for t in data["perfect"]["tests"] if "manual" in t["tags"]]
    assert manual and all(t["score"] == 0.0 and t["max_score"] > 0 for t in manual)
    assert all("人工评分" in t["output"] and "status" not in t for t in manual)
    assert "人工评分" in data["perfect"]["output"]


@pytest.mark.parametrize("name,words", [
    ("badjson", ["不是有效的 notebook", "JSON"]),
    ("none", ["没有找到 notebook", f"{A}.py"]),
    ("several", ["2 个 notebook", "a.ipynb", "b.ipynb"]),
    ("loop", ["进程终止"]),
])
def test_broken_and_looping_submissions_get_zero_and_a_reason(runs, name, words):
    data, _graded, logs = runs
    result = data[name]
    assert result["score"] == 0.0, logs[name]
    assert all(t["score"] == 0.0 for t in result["tests"])
    for word in words:
        assert word in result["output"], (result["output"], logs[name])


def test_the_loop_is_killed_and_the_cells_after_it_are_reported_not_run(runs):
    data, _graded, logs = runs
    auto = [t for t in data["loop"]["tests"] if "auto" in t["tags"]]
    assert all(t["output"].startswith("未运行") for t in auto), logs["loop"]


def test_a_grader_that_cannot_start_still_writes_results(bundle, tmp_path):
    _made, source, site = bundle
    root = _root(tmp_path, source, site, "dead", {f"{A}.ipynb": b"{}"})
    env = {**os.environ, "GRADESCOPE_ROOT": str(root), "AUTOGRADER_PYTHON": "/bin/false"}
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0
    data = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert data["score"] == 0.0 and data["output"] == FALLBACK
    assert "exited with status 1" in data["extra_data"]["grader"] and \
        "exited with status 1" in done.stdout


def test_a_crash_inside_the_grader_still_writes_results(bundle, tmp_path, capsys):
    _made, source, site = bundle
    root = _root(tmp_path, source, site, "crash", {f"{A}.ipynb": b"{}"})
    (root / "source" / "config.json").write_text('{"assignment": "no_such_assignment"}')
    data = run(root)
    validate(data)
    assert data["score"] == 0.0 and "评分程序内部出错" in data["output"]
    assert "Traceback" in capsys.readouterr().out  # for the instructor (Gradescope's stdout)


def test_cli_writes_the_bundle_and_refuses_bad_input(tmp_path):
    out = tmp_path / "q4.zip"
    done = CliRunner().invoke(main, ["gradescope", "q4_single_token", "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert out.is_file() and "KiB" in done.output
    with zipfile.ZipFile(out) as zf:
        salt = zf.read("salt").decode().strip()
    assert len(salt) == 64 and salt != SALT
    for args in (["gradescope", "q9_nothing", "--out", str(tmp_path / "x.zip")],
                 ["gradescope", A, "--out", str(tmp_path / "x.tar")],
                 ["gradescope", A, "--out", str(tmp_path / "y.zip"), "--salt-file",
                  str(tmp_path / "missing")]):
        done = CliRunner().invoke(main, args)
        assert done.exit_code == 2 and done.output.startswith("error: "), done.output


def test_a_sandbox_that_cannot_start_is_retried_without_namespaces(monkeypatch, capsys):
    from autograder.errors import SandboxUnavailable
    from autograder.integrations.gradescope import run as gradescope_run

    calls = []

    def fake(subs, *, settings, jobs, verdict=None):
        calls.append(settings.isolate)
        if settings.isolate:
            raise SandboxUnavailable("the sandbox's zygote exited while starting (exit code 1)")
        return ["row"], ["record"]

    monkeypatch.setattr(gradescope_run, "grade_submissions", fake)
    assert gradescope_run._engine("submission", SETTINGS) == (["row"], ["record"])
    assert calls == [True, False]
    assert "without namespaces" in capsys.readouterr().out


def test_an_engine_crash_is_zero_and_said_to_be_the_graders_fault():
    from autograder.engine.host.pool import Graded
    from autograder.engine.host.pool import Submission as Task
    from autograder.grading.batch import Result
    from autograder.integrations.gradescope.run import CRASHED, BundleConfig, results_for

    graded = Graded(Task("s", A, Path(".")), crashed="Traceback: a bug")
    row = Result("s", A, status="grader-error", auto_max=load(A).auto_max)
    data = results_for(BundleConfig(A), load(A), row, graded)
    data["execution_time"] = 1.0
    validate(data)
    assert data["score"] == 0.0 and CRASHED in data["output"] and "a bug" not in data["output"]
