"""JupyterLab 4 in headless Chromium, driven over the DevTools protocol (websocket-client,
which Jupyter Server itself depends on): a student's view of a notebook.

:class:`Lab` is one ``jupyter lab`` on a free loopback port (token auth, its own Jupyter
folders, the app exposed to the page as ``window.jupyterapp``, the course's Jupyter
settings from ``jupyter-config/`` as an installed wheel puts them in ``etc/jupyter``);
:class:`Page` is one Chromium tab with :meth:`Page.js` to evaluate an expression.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from browser_helpers import BROWSER, _free_port, wait_for_server
from cdp import Browser
from pipeline_helpers import ROOT

#: What an installed wheel puts in ``<prefix>/etc/jupyter`` (an editable install does not).
JUPYTER_CONFIG = ROOT / "jupyter-config"


class Lab:
    def __init__(self, root: Path, home: Path, *, config: Path | None = JUPYTER_CONFIG) -> None:
        self.port, self.token = _free_port(), "t" + os.urandom(8).hex()
        env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"),
               "JUPYTER_DATA_DIR": str(home / "data"), "JUPYTER_RUNTIME_DIR": str(home / "run"),
               "HOME": str(home), "JUPYTER_PLATFORM_DIRS": "1",
               "JUPYTER_CONFIG_PATH": str(config or home / "none")}
        self.log = open(home / "lab.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
             f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}",
             "--ServerApp.allow_root=True", "--LabApp.expose_app_in_browser=True",
             "--LabApp.news_url=", "--LabApp.check_for_updates_class="
             "jupyterlab.NeverCheckForUpdate"],
            cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}?token={self.token}"

    def wait(self, seconds: float = 300.0) -> None:
        wait_for_server(self, "jupyter lab", seconds)

    def read_log(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return Path(self.log.name).read_text(encoding="utf-8", errors="replace")[-4000:]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def lab_page(profile: Path) -> Browser:
    """Headless Chromium for a JupyterLab on the loopback address, in a wide window."""
    return Browser(BROWSER, profile, loopback=True, window="1400,1000")
