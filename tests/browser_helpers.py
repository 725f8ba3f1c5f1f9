"""Helpers for the browser tests: hostile submissions, headless Chromium, a formgrader server.

Chromium runs headless with no network but this machine's loopback (every host name
resolves nowhere), a fresh profile each time, and ``--dump-dom`` after a few seconds
of virtual time (images that fail to load have fired their ``onerror`` by then).
"""

from __future__ import annotations

import copy
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
from hostile_browser import ATTACKS, MARK
from pipeline_helpers import ROOT

from autograder.authoring import cells as nbs
from autograder.engine.host.manifest import load, release_notebook
from autograder.samples import mistakes
from autograder.samples.submission import make_submission

A = "q1_value_scaling"
BROWSER = (shutil.which("chromium") or shutil.which("chromium-browser")
           or shutil.which("google-chrome"))
#: The first line of the course config's block that makes nbgrader's pages sanitise (its
#: last sets ``c.HTMLExporter.filters``): cut out for the control.
PROTECTION = "# Nothing a student wrote runs in the browser"


def honest_wrong(*, plots: bool = True) -> nbformat.NotebookNode:
    """q1 without 1/√d_k (its figure cell kept unless ``plots`` is false)."""
    variant = next(v for v in mistakes(A) if v.name == "no_sqrt_dk")
    nb = make_submission(nbs.read(ROOT / "source" / A / f"{A}.ipynb"),
                             release_notebook(load(A)), variant)
    if not plots:
        nb.cells = [c for c in nb.cells if "plt." not in c.source or c.metadata.get("nbgrader")]
    return nb


def after_imports(nb, cell) -> None:
    at = next(i for i, c in enumerate(nb.cells) if nbs.grade_id(c) == "imports")
    nb.cells.insert(at + 1, cell)


def hostile_submission() -> nbformat.NotebookNode:
    """The honest wrong answer carrying every attack of :data:`hostile_browser.ATTACKS`,
    and a legitimate formula in its written answer (it must still render)."""
    nb = honest_wrong()
    answer = next(c for c in nb.cells if nbs.grade_id(c) == "written_qk_vs_v")
    parts = ["Q、K 决定权重，V 决定输出：$\\frac{QK^\\top}{\\sqrt{d_k}}$ 不含 $W_v$。"]
    for attack in reversed(ATTACKS):
        if attack.code is not None:
            cell = nbformat.v4.new_code_cell(attack.code)
            cell.outputs = [nbformat.from_dict(copy.deepcopy(o)) for o in attack.outputs]
            after_imports(nb, cell)
        elif attack.on_cell is not None:
            target = next(c for c in nb.cells if nbs.grade_id(c) == attack.on_cell)
            target.outputs = [nbformat.from_dict(copy.deepcopy(o)) for o in attack.outputs]
            target.execution_count = 7
        if attack.answer is not None:
            parts.append(attack.answer)
        if attack.cell is not None:
            nb.cells.insert(nb.cells.index(answer), nbformat.from_dict(copy.deepcopy(attack.cell)))
    answer.source = "\n\n".join(parts)
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "version_major": 2, "version_minor": 0, "state": {}}}
    return nb


# ------------------------------------------------------------------ Chromium


def chromium(url: str, *, profile: Path, wait_ms: int = 4000) -> str:
    """The DOM of ``url`` after ``wait_ms`` of virtual time."""
    command = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
               "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync",
               "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
               f"--user-data-dir={profile}",
               "--window-size=1000,1600", f"--virtual-time-budget={wait_ms}", "--dump-dom",
               url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert "<html" in done.stdout.lower(), done.stderr[-2000:]
    return done.stdout


def fired(dom: str) -> set[str]:
    """Attacks whose script ran on the page (the marker they set on its root element)."""
    return set(re.findall(re.escape(MARK) + r"([a-z_]+)=", dom))


def script_links(dom: str) -> list[str]:
    return re.findall(r"""href\s*=\s*["']?\s*javascript:""", dom, flags=re.I)


# ------------------------------------------------------------------ formgrader


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: The server extensions an installed environment enables, all off but formgrader (the
#: others only cost start-up time: JupyterLab's import alone takes seconds).
_EXTENSIONS = ("jupyterlab", "notebook", "notebook_shim", "jupyter_lsp",
               "jupyter_server_terminals", "nbgrader.server_extensions.assignment_list",
               "nbgrader.server_extensions.course_list",
               "nbgrader.server_extensions.validate_assignment")


class Formgrader:
    """``jupyter server`` with nbgrader's formgrader on ``course`` (its working folder, as
    an instructor starts it), token auth, a free loopback port, its own Jupyter folders."""

    def __init__(self, course: Path, home: Path) -> None:
        self.course, self.token, self.port = course, secrets.token_hex(16), _free_port()
        env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"),
               "JUPYTER_DATA_DIR": str(home / "data"), "JUPYTER_RUNTIME_DIR": str(home / "run"),
               "HOME": str(home), "JUPYTER_PLATFORM_DIRS": "1"}
        self.log = open(home / "server.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", "--no-browser", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
             f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={course}",
             "--ServerApp.allow_root=True",
             "--ServerApp.jpserver_extensions="
             + repr({**dict.fromkeys(_EXTENSIONS, False),
                     "nbgrader.server_extensions.formgrader": True})],
            cwd=course, env=env, stdin=subprocess.DEVNULL, stdout=self.log,
            stderr=subprocess.STDOUT)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}?token={self.token}"

    def wait(self, seconds: float = 300.0) -> None:
        wait_for_server(self, "formgrader", seconds)

    def submission_url(self, student: str) -> str:
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{self.course / 'gradebook.db'}") as gb:
            sid = gb.find_submission_notebook(A, A, student).id
        return self.url(f"/formgrader/submissions/{sid}/")

    def read_log(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return (Path(self.log.name).read_text(encoding="utf-8", errors="replace"))[-4000:]

    def stop(self) -> None:
        """Killed outright: it runs no kernel, and its files are all in this test's folders
        (a polite stop takes seconds)."""
        self.proc.kill()
        self.proc.wait()
        self.log.close()


def wait_for_server(server, what: str, seconds: float = 300.0) -> None:
    """Until a Jupyter server (``proc``, ``url()``, ``read_log()``) answers on
    ``/api/status``: it starts in seconds, far longer on a machine under load."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert server.proc.poll() is None, server.read_log()
        try:
            with urllib.request.urlopen(server.url("/api/status"), timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{what} did not start:\n{server.read_log()}")
