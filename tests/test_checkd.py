"""The warm ``autograder check`` daemon: one per user at a time, answering as the cold
path does, giving way to a newer package and stopping when asked."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from autograder.integrations.selfcheck import daemon as checkd
from autograder.integrations.selfcheck.check import run_check_notebook

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "solutions" / "q1_value_scaling" / "q1_value_scaling.ipynb"


@pytest.fixture
def runtime(monkeypatch):
    """A private folder for the daemon's socket and lock (short: a socket path has a
    length limit), emptied of daemons afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="ag-"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    started: list[subprocess.Popen] = []
    yield folder, started
    checkd.stop()
    for proc in started:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    shutil.rmtree(folder, ignore_errors=True)


def _daemon(runtime, key: str | None = None) -> subprocess.Popen:
    folder, started = runtime
    log = open(folder / f"daemon-{len(started)}.log", "wb")  # noqa: SIM115 - the child's
    proc = subprocess.Popen([sys.executable, "-m", "autograder.integrations.selfcheck.daemon", key or checkd.package_key()],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=folder)
    log.close()
    started.append(proc)
    return proc


def _until(condition, seconds: float = 30.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not within {seconds} s")


def _logs(runtime) -> str:
    return "\n".join(p.read_text(errors="replace") for p in sorted(runtime[0].glob("*.log")))


def test_two_daemons_started_together_leave_one_serving(runtime):
    first, second = _daemon(runtime), _daemon(runtime)
    serving = _until(checkd.ping)
    _until(lambda: first.poll() is not None or second.poll() is not None, 40)
    left, stayed = (first, second) if first.poll() is not None else (second, first)
    assert left.returncode == 0, _logs(runtime)
    assert stayed.poll() is None and serving == stayed.pid == checkd.ping(), _logs(runtime)


def test_a_later_daemon_leaves_the_serving_one_alone(runtime):
    first = _daemon(runtime)
    _until(lambda: checkd.ping() == first.pid)
    second = _daemon(runtime)
    assert second.wait(timeout=30) == 0, _logs(runtime)
    assert first.poll() is None and checkd.ping() == first.pid


def test_an_outdated_daemon_gives_way_to_the_new_package(runtime):
    old = _daemon(runtime, key="0ld-package")
    _until(lambda: checkd.ping(key="0ld-package") == old.pid)
    new = _daemon(runtime)
    assert old.wait(timeout=30) == 0, _logs(runtime)
    assert _until(checkd.ping) == new.pid


def test_the_warm_answer_is_the_cold_answer(runtime):
    cold = run_check_notebook(notebook=NOTEBOOK)
    daemon = _daemon(runtime)
    _until(lambda: checkd.ping() == daemon.pid)
    warm = checkd.ask(NOTEBOOK, None, 0)
    assert warm == cold and all(o.passed for o in warm) and len(warm) >= 10


def test_stop_ends_the_daemon_and_removes_its_socket(runtime):
    daemon = _daemon(runtime)
    _until(lambda: checkd.ping() == daemon.pid)
    assert checkd.stop()
    assert daemon.wait(timeout=30) == 0
    assert not checkd.socket_path().exists() and checkd.ping() is None


def test_a_bad_request_gets_an_error_and_the_daemon_goes_on(runtime):
    daemon = _daemon(runtime)
    _until(lambda: checkd.ping() == daemon.pid)
    answer = checkd._exchange({"key": checkd.package_key()}, 5.0)
    assert answer == {"error": "the request names no notebook"}
    assert checkd.ping() == daemon.pid


def test_the_readme_says_where_the_daemon_lives_and_how_long_it_waits(runtime):
    en = (ROOT / "README.md").read_text(encoding="utf-8")
    zh = (ROOT / "README.zh.md").read_text(encoding="utf-8")
    minutes = checkd.IDLE_SECONDS // 60
    assert f"exits after {minutes} idle minutes" in en and f"空闲 {minutes} 分钟" in zh
    where = checkd.socket_path().parent
    assert where.parent == runtime[0] and where.name.startswith("attention-autograder-")
    place = "$XDG_RUNTIME_DIR/attention-autograder-<uid>/"
    assert en.count(place) == 1 and zh.count(place) == 1


def test_a_terminated_daemon_cleans_up_as_an_idle_one_does(runtime):
    daemon = _daemon(runtime)
    _until(lambda: checkd.ping() == daemon.pid)
    daemon.terminate()
    assert daemon.wait(timeout=30) == 0, _logs(runtime)
    assert not checkd.socket_path().exists()
    assert f"checkd[{daemon.pid}] serving" in _logs(runtime)  # it logs, to its log file


def test_a_client_that_hangs_up_before_its_answer_leaves_the_daemon_serving(runtime):
    """The daemon answers into a closed socket (EPIPE) and serves the next client."""
    import json
    import socket

    daemon = _daemon(runtime)
    _until(lambda: checkd.ping() == daemon.pid)
    for _ in range(3):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(str(checkd.socket_path()))
            client.sendall(json.dumps({"key": checkd.package_key(), "ping": True}).encode() + b"\n")
    assert _until(checkd.ping) == daemon.pid and daemon.poll() is None, _logs(runtime)
