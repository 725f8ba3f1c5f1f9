"""Headless Chromium driven over the DevTools protocol: a page measured at a device width.

``--window-size`` cannot go below 500 px in headless Chromium, and a desktop window
ignores ``<meta name="viewport">``; DevTools' device emulation does neither: at
``mobile=True`` the page is laid out as a phone lays it out (980 px without a viewport
tag). One browser per :class:`Browser`, no network but loopback (every host name
resolves nowhere), a fresh profile. The socket is ``websocket-client`` (the dev extra; jupyter_server
needs it too).
"""

from __future__ import annotations

import collections
import itertools
import json
import re
import subprocess
import threading
import time
from pathlib import Path

import websocket

__all__ = ["Browser"]


class Browser:
    """One headless Chromium with one page, driven through DevTools."""

    def __init__(self, executable: str, profile: Path, *, loopback: bool = False,
                 window: str | None = None) -> None:
        """``loopback``: 127.0.0.1 resolves (a local server's pages); every other name
        never does. ``window``: the window size, ``"W,H"``."""
        hosts = "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1" if loopback else "MAP * ~NOTFOUND"
        self.process = subprocess.Popen(
            [executable, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--host-resolver-rules={hosts}", f"--user-data-dir={profile}",
             *([f"--window-size={window}"] if window else []),
             "--remote-debugging-port=0", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self._ids = itertools.count(1)
        try:
            self.socket = websocket.create_connection(self._page_url(), timeout=60,
                                                      suppress_origin=True)
            # what Chromium logs later is read and dropped: a full pipe would stall it
            self._drain = threading.Thread(target=collections.deque,
                                           args=(self.process.stderr, 0), daemon=True)
            self._drain.start()
            self.call("Page.enable")
        except BaseException:
            self.close()
            raise

    def _page_url(self) -> str:
        """The page target's DevTools socket, from the port Chromium prints on stderr."""
        for line in self.process.stderr:
            found = re.search(r"DevTools listening on (ws://[^/]+)/", line)
            if found:
                import urllib.request

                base = found.group(1).replace("ws://", "http://")
                targets = json.load(urllib.request.urlopen(f"{base}/json/list", timeout=30))
                return next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        raise RuntimeError("Chromium printed no DevTools address")

    def call(self, method: str, **params) -> dict:
        """One DevTools command; its result (events that come first are skipped)."""
        ident = next(self._ids)
        self.socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def _wait_for(self, event: str) -> None:
        while json.loads(self.socket.recv()).get("method") != event:
            pass

    def open(self, url: str, *, width: int, height: int = 900, mobile: bool) -> None:
        """``url`` laid out at ``width`` CSS pixels (as a phone when ``mobile``)."""
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=mobile)
        self.call("Page.navigate", url=url)
        self._wait_for("Page.loadEventFired")

    def navigate(self, url: str) -> None:
        """Start loading ``url`` (a single-page app: wait with :meth:`until`)."""
        self.call("Page.navigate", url=url)

    def evaluate(self, expression: str, *, strict: bool = True):
        """The JSON value of ``expression`` in the page (awaited when it is a promise); an
        exception raises, or gives None when not ``strict``."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            if not strict:
                return None
            raise RuntimeError(str(result["exceptionDetails"])[:2000])
        return result["result"].get("value")

    def until(self, expression: str, seconds: float, what: str):
        """The first truthy value of ``expression`` within ``seconds``."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            value = self.evaluate(expression, strict=False)
            if value:
                return value
            time.sleep(0.3)
        shown = str(self.evaluate("document.body.innerText", strict=False))[-3000:]
        raise AssertionError(f"{what} not seen in {seconds:g} s; the page ends with:\n{shown}")

    def close(self) -> None:
        if getattr(self, "socket", None) is not None:
            self.socket.close()
        self.process.kill()
        self.process.wait(timeout=30)
        if getattr(self, "_drain", None) is not None:
            self._drain.join(timeout=30)
        self.process.stderr.close()
