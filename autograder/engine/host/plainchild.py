"""Children without the sandbox, for a student's own check where the zygote cannot run.

:func:`zygote_missing` says why the sandbox's zygote cannot run here (macOS, Windows, a
Python without ``fcntl``/``resource``/``fork``/Unix sockets/``/proc``); :class:`PlainSpawner`
then stands in for a :class:`~.zygote_link.ZygoteLink`: each :meth:`~PlainSpawner.spawn`
starts ``python -m autograder.engine.child.plain`` in a private working folder, with a
safe import path, and the same wire protocol over a loopback TCP connection (the one
kind of socket every system has), authenticated by a one-time token. The checks stay in
this process, as in grading; the wall-clock limits are the host's (the child is killed),
the memory limit the child's own where its system offers one.

Only ``autograder check`` uses this: grading needs the sandbox (:mod:`.pool`).
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from ...settings import PACKAGE_DIR
from ..protocol import wire
from ..protocol.budgets import SMALL_FRAME
from ..protocol.limits import Protection, SandboxLimits
from .proxy import Child
from .pythonpath import safe_env, safe_python
from .zygote_link import Isolation, ZygoteError

__all__ = ["zygote_missing", "PlainSpawner", "PlainChild"]

log = logging.getLogger("autograder.engine")

#: Seconds a plain child may take to import its libraries and connect back.
START_SECONDS = 120.0


def zygote_missing() -> str:
    """Empty when the sandbox's zygote can run here; else what this system lacks."""
    if not sys.platform.startswith("linux"):
        return f"{sys.platform} is not Linux"
    for module in ("fcntl", "resource"):
        try:
            __import__(module)
        except ImportError:
            return f"no {module} module"
    for name, owner in (("fork", os), ("AF_UNIX", socket),
                        ("SOCK_SEQPACKET", socket), ("send_fds", socket)):
        if not hasattr(owner, name):
            return f"no {owner.__name__}.{name}"
    if not os.path.exists("/proc/self/status"):
        return "no /proc"
    return ""


def _child_env() -> dict[str, str]:
    env = safe_env({k: v for k, v in os.environ.items() if not k.startswith("AUTOGRADER")})
    path = [str(PACKAGE_DIR.parent), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env.update({"PYTHONPATH": os.pathsep.join(path),
                "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "agg", "PYTHONIOENCODING": "utf-8",
                "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    return env


class PlainChild(Child):
    """A :class:`~.proxy.Child` that is an ordinary process: killed with its process
    group where there is one, and its working folder removed once it is gone."""

    def __init__(self, sock: socket.socket, proc: subprocess.Popen, pid: int, home: Path) -> None:
        # ``pid``: the interpreter's own (a Windows venv's python.exe is a launcher)
        super().__init__(sock, pid)
        self.proc, self.home = proc, home

    def kill(self, reason: str) -> None:
        if self.alive:
            self.alive, self.death = False, reason
            if self.pid != self.proc.pid:
                with contextlib.suppress(OSError):
                    os.kill(self.pid, getattr(signal, "SIGKILL", signal.SIGTERM))
            _end(self.proc)
            with contextlib.suppress(OSError):
                self.sock.close()

    def close(self, *, wait: float = 10.0) -> None:
        super().close(wait=0)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=max(wait, 1.0))
        shutil.rmtree(self.home, ignore_errors=True)


def _end(proc: subprocess.Popen) -> None:
    """Kill ``proc`` and, on POSIX, the session it leads (what it started)."""
    killpg, kill = getattr(os, "killpg", None), getattr(signal, "SIGKILL", None)
    if killpg is not None and kill is not None:
        with contextlib.suppress(OSError):
            killpg(proc.pid, kill)
    with contextlib.suppress(OSError):
        proc.kill()


class PlainSpawner:
    """Stands in for a zygote link: plain children, one per :meth:`spawn`."""

    def __init__(self, why: str, *, figures: bool = False) -> None:
        self.why, self.figures = why, figures

    @property
    def isolation(self) -> Isolation:
        return Isolation(False, self.why, Protection.NONE)

    def spawn(self, limits: SandboxLimits) -> PlainChild:
        home = Path(tempfile.mkdtemp(prefix="autograder-check-"))
        token = secrets.token_hex(16)
        with socket.create_server(("127.0.0.1", 0)) as server, \
                tempfile.TemporaryFile() as errors:
            proc = subprocess.Popen(
                [*safe_python(), "-m", "autograder.engine.child.plain"],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=errors, cwd=home,
                env=_child_env(), **_own_group())
            request = {"port": server.getsockname()[1], "token": token, "figures": self.figures,
                       "limits": asdict(limits)}
            try:
                proc.stdin.write(json.dumps(request).encode() + b"\n")
                proc.stdin.close()
                sock, pid = _accept(server, token, proc)
            except (OSError, ZygoteError) as err:
                _end(proc)
                proc.wait()
                shutil.rmtree(home, ignore_errors=True)
                errors.seek(0)
                tail = errors.read()[-2000:].decode("utf-8", "replace").strip()
                raise ZygoteError(f"a plain child did not start ({err}): {tail}") from None
        return PlainChild(sock, proc, pid, home)

    def retire(self, child: Child) -> None:
        child.close(wait=2.0)

    def close(self) -> None:
        """Nothing outlives its :meth:`retire`."""


def _own_group() -> dict:
    """Popen arguments that give the child a process group of its own (so a kill reaches
    what it started, and a ^C in the terminal reaches only this process)."""
    if os.name == "nt":
        return {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
    return {"start_new_session": True}


def _accept(server: socket.socket, token: str, proc: subprocess.Popen) -> tuple[socket.socket, int]:
    """The child's connection, the first one that brings ``token`` (another local user
    can reach a loopback port too: whoever else connects is dropped)."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ZygoteError(f"it exited with code {proc.returncode}")
        server.settimeout(min(0.5, max(0.01, deadline - time.monotonic())))
        try:
            conn, _ = server.accept()
        except TimeoutError:
            continue
        try:
            hello, _ = wire.recv(conn, deadline=time.monotonic() + 10, limits=SMALL_FRAME)
        except wire.WireError:
            conn.close()
            continue
        if hmac.compare_digest(str(hello.get("token", "")), token) \
                and isinstance(hello.get("init"), int):
            conn.settimeout(None)
            return conn, hello["init"]
        conn.close()
    raise ZygoteError(f"no connection within {START_SECONDS:g} s")
