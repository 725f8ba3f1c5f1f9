"""The host's line to the zygote: the warm process every sandboxed child is forked from.

:class:`Zygote` starts ``python -m autograder.engine.child.zygote`` with a clean
environment and logs what it prints; :meth:`ZygoteLink.spawn` forks one sandboxed
:class:`~.proxy.Child` per submission through a control line of its own (one per grading
worker). What the zygote achieved (namespaces, a separate user, or nothing) is its
:class:`Isolation`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ...settings import PACKAGE_DIR
from ..protocol import wire
from ..protocol.budgets import SMALL_FRAME
from ..protocol.limits import Protection, SandboxLimits
from .proxy import Child, alive

__all__ = ["Zygote", "ZygoteLink", "ZygoteError", "Isolation", "REAP_WAIT"]

log = logging.getLogger("autograder.engine")

#: Seconds a finished child's namespace may take to be torn down before it is reported.
REAP_WAIT = 10.0
#: Variables of the host's environment the zygote may see (nothing else crosses).
_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT")


class ZygoteError(RuntimeError):
    """The zygote could not be started (a grader problem, not a student's)."""


def _zygote_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _ENV_KEEP or k.startswith("OPENBLAS_")}
    env.update({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "PYTHONPATH": str(PACKAGE_DIR.parent), "PYTHONNOUSERSITE": "1",
                "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "agg",
                # nor the working folder (Python 3.11+): without namespaces, a student who
                # plants /tmp/bdb.py must not run code in the next child that imports bdb
                "PYTHONSAFEPATH": "1"})
    return env


@dataclass(frozen=True)
class Isolation:
    """What the zygote achieved: namespaces in force, or which protections are missing;
    ``protection``: what the children get."""

    isolated: bool
    missing: str
    protection: Protection = Protection.NONE


class ZygoteLink:
    """One control line to a running zygote: children are spawned through it.

    Each grading worker has a link of its own (see :meth:`Zygote.link`), so several
    workers share one warm zygote without their requests crossing. With ``ahead``, each
    spawn also asks for the next child, which forks and isolates itself while the
    current one works. :meth:`retire` ends a child without waiting for its namespace to
    be torn down; :meth:`close` confirms that every retired child is gone.
    """

    def __init__(self, control: socket.socket, timeout: float = 180.0, *,
                 ahead: bool = False) -> None:
        self.control = control
        self._timeout = timeout
        self._isolation: Isolation | None = None
        self._lock = threading.Lock()
        self._ahead = ahead
        self._next: tuple[socket.socket, SandboxLimits] | None = None
        self._retired: list[tuple[int, float]] = []  # (reaper, when retired)

    @property
    def isolation(self) -> Isolation:
        """Waits until the zygote is ready (it starts in the background)."""
        if self._isolation is None:
            self._isolation = self._await_ready()
        return self._isolation

    def _await_ready(self) -> Isolation:
        self.control.settimeout(self._timeout)
        try:
            ready = json.loads(self.control.recv(1 << 16) or b"null")
        except (OSError, ValueError) as err:
            self.close()
            raise ZygoteError(f"the sandbox's zygote did not start ({err})") from None
        finally:
            with contextlib.suppress(OSError):
                self.control.settimeout(None)
        if not isinstance(ready, dict):
            self.close()
            raise ZygoteError("the sandbox's zygote exited while starting")
        protection = ready.get("protection")
        return Isolation(bool(ready.get("isolated")), str(ready.get("missing", "")),
                         Protection(protection) if protection in set(Protection)
                         else Protection.NONE)

    def spawn(self, limits: SandboxLimits) -> Child:
        """A new sandboxed child, ready for requests."""
        _ = self.isolation
        with self._lock:
            self._prune()
            child = None
            if self._next is not None:
                sock, asked = self._next
                self._next = None
                child = self._answered(sock)
                if asked != limits:  # asked ahead for other limits: not this one
                    self._retire(child)
                    child = None
            if child is None:
                child = self._answered(self._ask(limits))
            if self._ahead:
                self._next = (self._ask(limits), limits)
            return child

    def _ask(self, limits: SandboxLimits) -> socket.socket:
        """Send a spawn request; the answer is read by :meth:`_answered`."""
        ours, theirs = socket.socketpair()
        request = json.dumps({"op": "spawn", "limits": asdict(limits)}).encode()
        try:
            socket.send_fds(self.control, [request], [theirs.fileno()])
        except OSError as err:
            ours.close()
            raise ZygoteError(f"the zygote stopped answering ({err})") from None
        finally:
            theirs.close()
        return ours

    def _answered(self, ours: socket.socket) -> Child:
        try:
            line = self.control.recv(1 << 16)
        except OSError as err:
            ours.close()
            raise ZygoteError(f"the zygote stopped answering ({err})") from None
        if not line:
            ours.close()
            raise ZygoteError("the zygote exited")
        try:
            hello, _ = wire.recv(ours, deadline=time.monotonic() + 30, limits=SMALL_FRAME)
        except wire.WireError as err:
            ours.close()
            raise ZygoteError(f"a new child did not start ({err})") from None
        return Child(ours, int(hello["init"]), reaper=int(json.loads(line)["pid"]))

    def retire(self, child: Child) -> None:
        """End ``child`` now; that its last process is gone is confirmed later (the
        kernel tears a namespace down in about 10 ms, which the next child need not wait
        for)."""
        with self._lock:
            self._retire(child)

    def _retire(self, child: Child) -> None:
        child.close(wait=0)
        if child.reaper:
            self._retired.append((child.reaper, time.monotonic()))

    def _prune(self, wait: float = 0.0) -> None:
        """Forget retired children that are gone; wait up to ``wait`` s for the rest."""
        deadline = time.monotonic() + wait
        while self._retired:
            now, left = time.monotonic(), []
            for pid, when in self._retired:
                if not alive(pid):
                    continue
                if now - when > REAP_WAIT:
                    log.warning("the reaper %d of a finished child did not exit within %g s",
                                pid, REAP_WAIT)
                    continue
                left.append((pid, when))
            self._retired = left
            if not left or now >= deadline:
                return
            time.sleep(0.005)

    def close(self) -> None:
        """Close this line (the zygote goes on serving the others), once every child
        spawned through it is gone."""
        with self._lock:
            if self._next is not None:
                sock, _ = self._next
                self._next = None
                with contextlib.suppress(ZygoteError):
                    self._retire(self._answered(sock))
            self._prune(wait=REAP_WAIT)
        with contextlib.suppress(OSError):
            self.control.close()


class Zygote(ZygoteLink):
    """The pre-warmed process children are forked from, and the first link to it."""

    def __init__(self, *, timeout: float = 180.0, figures: bool = True, warm: bool = True,
                 tokenizer: bool = True, isolate: bool = True) -> None:
        """``figures``: render plots as PNG; ``warm``: pre-draw and preload for many
        forks; ``tokenizer``: preload q5's BPE tokenizer; ``isolate``: use namespaces
        where the kernel allows (off: limits, sessions and a subreaper only)."""
        control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        super().__init__(control, timeout)
        self.root = Path(tempfile.mkdtemp(prefix="autograder-view-"))
        options = json.dumps({"figures": figures, "warm": warm, "tokenizer": tokenizer,
                              "isolate": isolate})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autograder.engine.child.zygote", str(theirs.fileno()),
             str(self.root), options],
            pass_fds=[theirs.fileno()], env=_zygote_env(), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            cwd=self.root)  # root's own: `-m` puts the working folder first on sys.path
        theirs.close()
        threading.Thread(target=self._relay_log, daemon=True).start()

    def _relay_log(self) -> None:
        for line in self.proc.stderr:
            log.info("%s", line.rstrip())

    def link(self, *, ahead: bool = False) -> ZygoteLink:
        """Another line to this zygote (for another worker); usable before it is ready.
        ``ahead``: see :class:`ZygoteLink`."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            with self._lock:
                socket.send_fds(self.control, [b'{"op": "link"}'], [theirs.fileno()])
        except OSError as err:
            ours.close()
            raise ZygoteError(self._why_gone(err)) from None
        finally:
            theirs.close()
        return ZygoteLink(ours, self._timeout, ahead=ahead)

    def _why_gone(self, err: OSError) -> str:
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return f"the sandbox's zygote stopped answering ({err})"
        return f"the sandbox's zygote exited while starting (exit code {code})"

    def close(self) -> None:
        super().close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)
