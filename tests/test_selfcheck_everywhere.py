"""The student's check where students are: without Linux, on Colab, on a shared hub.

- Without Linux (an interpreter whose ``sitecustomize`` removes ``fcntl``, ``resource``,
  ``os.fork``, ``os.unshare``, ``socket.AF_UNIX`` and ``/proc``, as on macOS or Windows):
  ``autograder check`` and the check cell print the Linux report, line for line, but for
  the last line saying how the notebook ran. Real macOS and Windows were not run.
- Colab (a stand-in ``google.colab`` whose front end returns the notebook): the cell checks
  the open notebook with no file on disk; elsewhere, without a file, it prints one line
  to run instead, and that line works.
- A plain child that ignores interrupts is killed at its time limit.
- A shared hub: modules another user planted in the shared temporary folder and in the
  notebook's folder never run in this user's check, daemon and check cell included.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from pipeline_helpers import ROOT, without_plots

from autograder.authoring import cells as nbs
from autograder.engine.host.manifest import load, release_notebook
from autograder.integrations.selfcheck import incell
from autograder.integrations.selfcheck.report import mode_line
from autograder.samples import mistakes
from autograder.samples.submission import make_submission

A = "q1_value_scaling"
#: q1's automatic points; the wrong notebook loses test_softmax_stable's one point.
TOTAL = int(load(A).auto_max)
FULL, WRONG = f"总分：{TOTAL} / {TOTAL} 分", f"总分：{TOTAL - 1} / {TOTAL} 分"
NOLINUX = Path(__file__).resolve().parent / "nolinux"
CELL = f"from autograder.integrations.selfcheck.incell import check_here; check_here({A!r})"


@pytest.fixture(scope="module")
def notebooks(tmp_path_factory) -> dict[str, Path]:
    """A right notebook (the solutions) and a wrong one (a named mistake: causes shown),
    each alone in a folder under its assignment's name."""
    top = tmp_path_factory.mktemp("everywhere")
    wrong = next(v for v in mistakes(A) if v.name == "global_max")
    made = {"right": nbs.read(ROOT / "solutions" / A / f"{A}.ipynb"),
            "wrong": without_plots(make_submission(nbs.read(ROOT / "source" / A / f"{A}.ipynb"),
                                                   release_notebook(load(A)), wrong))}
    paths = {}
    for name, nb in made.items():
        (top / name).mkdir()
        nbs.write(nb, top / name / f"{A}.ipynb")
        paths[name] = top / name / f"{A}.ipynb"
    return paths


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AUTOGRADER", "PYTHONPATH"))}
    return {**env, "PYTHONIOENCODING": "utf-8", **extra}


def _check(notebook: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder.cli", "check", str(notebook)],
                          capture_output=True, text=True, encoding="utf-8", env=env,
                          cwd=notebook.parent, timeout=600)


def _cell(folder: Path, env: dict[str, str], code: str = CELL) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          encoding="utf-8", env=env, cwd=folder, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("which", ["right", "wrong"])
def test_without_linux_the_check_and_the_cell_report_as_on_linux(notebooks, which):
    notebook = notebooks[which]
    linux = _check(notebook, _env(AUTOGRADER_CHECK_DAEMON="0"))
    assert linux.returncode == (0 if which == "right" else 1), linux.stderr
    elsewhere = _check(notebook, _env(PYTHONPATH=str(NOLINUX)))
    assert elsewhere.returncode == linux.returncode, elsewhere.stderr
    assert "Traceback" not in elsewhere.stderr, elsewhere.stderr  # no step failed on the way
    want, got = linux.stdout.splitlines(), elsewhere.stdout.splitlines()
    assert got[:-1] == want[:-1] and got[-1] == mode_line("plain") != want[-1]
    assert want[-2].startswith(FULL if which == "right" else WRONG)
    if which == "wrong":
        assert "  • 【减去了整张打分表的最大值】：test_softmax_stable（共失 1 分）" in got
    cell = _cell(notebook.parent, _env(PYTHONPATH=str(NOLINUX))).splitlines()
    assert cell[1:] == got  # after the line saying which file and when it was saved


def _colab_standin(folder: Path, notebook: Path | None) -> Path:
    """A ``google.colab`` whose front end answers ``get_ipynb`` with ``notebook``."""
    package = folder / "google" / "colab"
    package.mkdir(parents=True)
    (folder / "google" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    nb = json.loads(notebook.read_text(encoding="utf-8")) if notebook else None
    if nb:  # as Colab's front end may send it: no format numbers, no notebook metadata
        nb = {"cells": nb["cells"]}
    (package / "_message.py").write_text(
        "import json\n"
        f"NB = json.loads({json.dumps(json.dumps(nb))})\n"
        "def blocking_request(kind, request='', timeout_sec=5, parent=None):\n"
        "    assert kind == 'get_ipynb'\n"
        "    return {'ipynb': NB}\n")
    return folder


def test_on_colab_the_cell_checks_the_open_notebook_with_no_file_on_disk(notebooks, tmp_path):
    standin = _colab_standin(tmp_path / "colab", notebooks["right"])
    kernel = tmp_path / "content"  # Colab's working folder: no notebook in it
    kernel.mkdir()
    out = _cell(kernel, _env(PYTHONPATH=str(standin)), "import google.colab\n" + CELL)
    assert "检查的是 Colab 中打开的这个 notebook 的当前内容" in out
    assert FULL + "（自动评分部分，全部通过" in out, out
    assert list(kernel.iterdir()) == []


def test_without_a_file_the_cell_names_one_line_that_works(notebooks, tmp_path):
    kernel = tmp_path / "working"
    kernel.mkdir()
    out = _cell(kernel, _env(AUTOGRADER_CHECK_DAEMON="0"))
    assert out.strip() == incell.not_found_message(A)
    line = out.strip().splitlines()[-1].strip()
    assert line == f'import autograder; autograder.check("{A}.ipynb")'
    shutil.copy(notebooks["wrong"], kernel / f"{A}.ipynb")  # "uploaded"
    out = _cell(kernel, _env(AUTOGRADER_CHECK_DAEMON="0"), line)
    assert WRONG in out, out


def test_a_plain_child_that_ignores_interrupts_is_killed_at_its_limit(monkeypatch, tmp_path):
    from autograder.engine.host import plainchild
    from autograder.integrations.selfcheck.check import run_check_notebook

    nb = nbs.read(ROOT / "release" / A / f"{A}.ipynb")
    nb.cells.insert(0, nbs.code("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                                "while True:\n    pass"))
    nbs.write(nb, tmp_path / f"{A}.ipynb")
    from autograder.engine.host import proxy

    spawned = []
    spawn = plainchild.PlainSpawner.spawn
    monkeypatch.setattr(proxy, "GRACE", 0.5)  # the wait after the interrupt: 2 s, only waited
    monkeypatch.setattr(plainchild, "zygote_missing", lambda: "a test without the sandbox")
    monkeypatch.setattr(plainchild.PlainSpawner, "spawn",
                        lambda self, limits: spawned.append(spawn(self, limits)) or spawned[-1])
    outcomes = run_check_notebook(notebook=tmp_path / f"{A}.ipynb", timeout=1)
    assert outcomes.mode == "plain" and not any(o.passed for o in outcomes)
    assert "中断后仍无响应，进程已被终止" in outcomes[0].message
    assert spawned[0].proc.poll() is not None and not spawned[0].home.exists()


def test_a_plain_child_has_a_memory_limit_where_the_system_offers_one():
    """Linux without the zygote: the address space is limited (a 4 GiB array is refused
    at once, without being allocated); its working folder is its own and goes with it."""
    from autograder.engine.host.plainchild import PlainSpawner
    from autograder.engine.protocol.limits import SandboxLimits

    spawner = PlainSpawner("a test")
    child = spawner.spawn(SandboxLimits(memory=256 << 20))
    try:
        reply = child.run("import numpy as np\nx = np.ones(1 << 29)", seconds=30)
        assert not reply["ok"]
        assert any(o.get("ename") == "MemoryError" for o in reply["outputs"]), reply
        where = child.run("import os\nprint(os.getcwd())", seconds=30)
        assert where["outputs"][0]["text"].strip() == str(child.home)
    finally:
        spawner.retire(child)
    assert child.proc.poll() is not None and not child.home.exists()


def test_a_zygote_that_does_not_start_leaves_the_check_to_a_plain_child(monkeypatch, notebooks):
    """A partial sandbox (the zygote cannot start): the check still runs, and says how."""
    from autograder.engine.host import zygote_link
    from autograder.integrations.selfcheck.check import run_check_notebook

    class Broken(zygote_link.Zygote):
        @property
        def isolation(self):
            raise zygote_link.ZygoteError("the sandbox's zygote did not start (a test)")

    monkeypatch.setattr(zygote_link, "Zygote", Broken)
    outcomes = run_check_notebook(notebook=notebooks["wrong"])
    assert outcomes.mode == "plain"
    assert sum(o.earned for o in outcomes) == TOTAL - 1 and len(outcomes) >= 17


# ------------------------------------------------------------------ a shared hub


@pytest.fixture
def other_user() -> int:
    """Another user: a uid and gid of no account (no /etc/passwd entry to add, lock or
    leave behind); root only, to act as that user."""
    import pwd

    if os.geteuid() != 0:
        pytest.skip("needs root to act as a second user")
    uid = 64000
    while True:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
        uid += 1


PLANT = ("import os, sys\n"
         "open(os.path.join({marker!r}, 'ran-' + str(os.getpid())), 'w').write(sys.argv[0])\n"
         "del sys.modules['json']\n"
         "sys.path[:] = [p for p in sys.path if p not in ('', {folder!r})]\n"
         "import json\n")


def test_modules_another_user_planted_never_run_in_a_check(notebooks, other_user, monkeypatch):
    from autograder.integrations.selfcheck import daemon as checkd

    top = Path(tempfile.mkdtemp(prefix="ag-hub-"))
    try:
        top.chmod(0o755)
        shared, course, marker, home = (top / n for n in ("tmp", "course", "marker", "home"))
        for folder in (shared, course, marker):
            folder.mkdir()
            folder.chmod(0o1777)  # a sticky shared /tmp; a folder the class can write
        home.mkdir(mode=0o700)
        shutil.copy(notebooks["right"], course / f"{A}.ipynb")
        uid = os.geteuid()
        # the other user: modules named like the standard library's, and the daemon's
        # old folder taken first
        for folder in (shared, course):
            code = PLANT.format(marker=str(marker), folder=str(folder))
            subprocess.run(["sh", "-c", f"cat > {folder}/json.py; mkdir -p {shared}/"
                            f"attention-autograder-{uid}"], input=code, text=True,
                           user=other_user, group=other_user, extra_groups=[], check=True)
        assert {(f / "json.py").stat().st_uid for f in (shared, course)} == {other_user}
        env = _env(TMPDIR=str(shared), HOME=str(home))
        env.pop("XDG_RUNTIME_DIR", None)
        monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
        monkeypatch.setenv("HOME", str(home))
        autograder = Path(sys.executable).with_name("autograder")
        for _ in range(2):  # cold (starts the daemon), then warm once it serves
            done = subprocess.run([str(autograder), "check", f"{A}.ipynb"], cwd=course, env=env,
                                  capture_output=True, text=True, encoding="utf-8", timeout=600)
            assert done.returncode == 0 and FULL in done.stdout, done.stderr
            deadline = time.monotonic() + 60
            while checkd.ping() is None and time.monotonic() < deadline:
                time.sleep(0.1)
        assert checkd.ping() is not None  # in the home, not in the folder taken first
        cell = subprocess.run([sys.executable, "-I", "-c", CELL], cwd=course, env=env,
                              capture_output=True, text=True, encoding="utf-8", timeout=600)
        assert FULL in cell.stdout, cell.stderr
        assert list(marker.iterdir()) == []
    finally:
        checkd.stop()
        shutil.rmtree(top, ignore_errors=True)


def test_when_not_even_a_plain_child_starts_the_check_says_so_in_one_line(monkeypatch,
                                                                          notebooks):
    from autograder.engine.host import plainchild, zygote_link
    from autograder.errors import CourseError
    from autograder.integrations.selfcheck.check import run_check_notebook

    def refused(self, limits):
        raise zygote_link.ZygoteError("a plain child did not start (connection refused)")

    monkeypatch.setattr(plainchild, "zygote_missing", lambda: "a test without the sandbox")
    monkeypatch.setattr(plainchild.PlainSpawner, "spawn", refused)
    with pytest.raises(CourseError, match="本机无法启动运行 notebook 的子进程") as caught:
        run_check_notebook(notebook=notebooks["right"])
    assert "\n" not in str(caught.value) and "127.0.0.1" in str(caught.value)
