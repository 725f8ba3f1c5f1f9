"""JupyterLab 4 in headless Chromium, driven over the DevTools protocol (websocket-client,
which Jupyter Server itself depends on): a student's view of a notebook.

:class:`Lab` is one ``jupyter lab`` on a free loopback port (token auth, its own Jupyter
folders, the app exposed to the page as ``window.jupyterapp``, the course's Jupyter
settings from ``jupyter-config/`` as an installed wheel puts them in ``etc/jupyter``);
:class:`Page` is one Chromium tab with :meth:`Page.js` to evaluate an expression.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import websocket
from browser_helpers import BROWSER, _free_port, wait_for_server
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


class Page:
    """One headless Chromium with one tab (loopback only), evaluated over DevTools."""

    def __init__(self, profile: Path) -> None:
        self.port = _free_port()
        self.proc = subprocess.Popen(
            [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
             f"--remote-debugging-port={self.port}", "--remote-allow-origins=*",
             f"--user-data-dir={profile}", "--window-size=1400,1000", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.ws, self.serial = self._connect(), 0

    def _connect(self, seconds: float = 60.0) -> websocket.WebSocket:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json", timeout=2) as r:
                    pages = [t for t in json.load(r) if t.get("type") == "page"]
                if pages:
                    return websocket.create_connection(pages[0]["webSocketDebuggerUrl"],
                                                       timeout=60)
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError("chromium's DevTools did not answer")

    def send(self, method: str, **params) -> dict:
        self.serial += 1
        self.ws.send(json.dumps({"id": self.serial, "method": method, "params": params}))
        while True:
            answer = json.loads(self.ws.recv())
            if answer.get("id") == self.serial:
                return answer

    def open(self, url: str) -> None:
        self.send("Page.navigate", url=url)

    def js(self, expression: str):
        """The value of ``expression`` (awaited when it is a promise)."""
        answer = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        return answer.get("result", {}).get("result", {}).get("value")

    def until(self, expression: str, seconds: float, what: str):
        """The first truthy value of ``expression`` within ``seconds``."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.3)
        shown = str(self.js("document.body.innerText"))[-3000:]
        raise AssertionError(f"{what} not seen in {seconds:g} s; the page ends with:\n{shown}")

    def close(self) -> None:
        self.ws.close()
        self.proc.kill()
        self.proc.wait()
