"""The host's side of the boundary: the zygote, one child, and functions living in it.

:class:`Zygote` starts ``python -m autograder.engine.zygote`` with a clean environment
and logs what it prints. :meth:`Zygote.spawn` forks one sandboxed :class:`Child` per
submission. Every request to a child has a deadline; when it passes, the child is sent
``SIGINT`` (IPython turns it into ``KeyboardInterrupt``, as a notebook's interrupt
button would) and, if it does not answer within a grace period, killed. Killing the
child's PID 1 ends its PID namespace, so every process it started dies with it.

A :class:`RemoteFunction` is what a check receives for a student's function: calling
it sends the arguments as data and brings the result back as data.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from . import replies, wire
from .budgets import RUN_FRAME, SMALL_FRAME, VALUE_FRAME, FrameBudget
from .errors import BadValue, ChildGone, Interrupted, Missing, StudentFault
from .hostdecode import decode_from_child
from .sandbox import SandboxLimits

__all__ = ["Zygote", "ZygoteLink", "Child", "RemoteFunction", "call_deadline", "GRACE", "ZygoteError",
           "Isolation", "PROTECTIONS"]

log = logging.getLogger("autograder.engine")

#: Seconds a child gets to answer after SIGINT before it is killed.
GRACE = 2.0
#: Seconds a finished child's namespace may take to be torn down before it is reported.
REAP_WAIT = 10.0
#: Bytes a ``run`` answer may take besides the outputs the host has room for (its own
#: fields, and the one short output a child that left some out may add).
RUN_REPLY_SLACK = 64 << 10
#: The wire's own bounds on one answer, for requests that set none of their own.
#: Variables of the host's environment the zygote may see (nothing else crosses).
_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT")

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("deadline", default=None)


class ZygoteError(RuntimeError):
    """The zygote could not be started (a grader problem, not a student's)."""


@contextlib.contextmanager
def call_deadline(deadline: float) -> Iterator[None]:
    """Calls of remote functions inside the block must answer by ``deadline`` (monotonic)."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def _zygote_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _ENV_KEEP or k.startswith("OPENBLAS_")}
    package_parent = Path(__file__).resolve().parent.parent.parent
    env.update({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "PYTHONPATH": str(package_parent), "PYTHONNOUSERSITE": "1",
                "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "agg",
                # nor the working folder (Python 3.11+): without namespaces, a student who
                # plants /tmp/bdb.py must not run code in the next child that imports bdb
                "PYTHONSAFEPATH": "1"})
    return env


#: What the zygote's children get (see :func:`.zygote._protection`): Linux namespaces; a
#: separate unprivileged user per child; or nothing beyond limits (the grader's own user).
PROTECTIONS = ("namespaces", "separate-user", "none")


@dataclass(frozen=True)
class Isolation:
    """What the zygote achieved: namespaces in force, or which protections are missing;
    ``protection`` is one of :data:`PROTECTIONS`."""

    isolated: bool
    missing: str
    protection: str = "none"


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
            raise ZygoteError(f"the sandbox's zygote did not start ({err}); see the log") from None
        finally:
            with contextlib.suppress(OSError):
                self.control.settimeout(None)
        if not isinstance(ready, dict):
            self.close()
            raise ZygoteError("the sandbox's zygote exited while starting; see the log")
        protection = ready.get("protection")
        return Isolation(bool(ready.get("isolated")), str(ready.get("missing", "")),
                         protection if protection in PROTECTIONS else "none")

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
                if not _alive(pid):
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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
            [sys.executable, "-m", "autograder.engine.zygote", str(theirs.fileno()),
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


class Child:
    """One submission's sandboxed process (PID 1 of its namespace) and its socket."""

    def __init__(self, sock: socket.socket, pid: int, reaper: int | None = None) -> None:
        self.sock, self.pid, self.reaper = sock, pid, reaper
        self.alive = True
        self.death: str = ""
        self._next = 0

    # -------------------------------------------------------------- requests

    def request(self, header: dict, blobs: list[bytes] | tuple = (), *, deadline: float,
                limits: FrameBudget = VALUE_FRAME) -> tuple[dict, list[bytes]]:
        """Send ``header`` and return the answer to it, read within ``limits``; see the
        module docstring for what happens at the deadline. Raises :class:`ChildGone`,
        :class:`Interrupted` or :class:`~.replies.BadReply` (all the student's)."""
        if not self.alive:
            raise ChildGone(self.death)
        self._next += 1
        ident = self._next
        try:
            return self._exchange({**header, "id": ident}, list(blobs), deadline, limits)
        except StudentFault:
            raise
        except BaseException:  # the host's own time limit (or ^C) mid-message: the rest
            self.kill("评分程序的时间限制已到，进程的回答没有读完，已被终止。")  # of the
            raise                                            # stream can no longer be read

    def _exchange(self, header: dict, blobs: list[bytes], deadline: float,
                  limits: FrameBudget) -> tuple[dict, list[bytes]]:
        ident = header["id"]
        try:
            wire.send(self.sock, header, blobs)
            return self._answer(ident, deadline, limits)
        except wire.Deadline:
            return self._interrupt(ident, deadline, limits)
        except wire.WireError as err:
            self.kill(_gone_reason(err))
            raise ChildGone(self.death) from None
        except replies.BadReply as err:
            self.kill(f"{err}已被终止。")
            raise ChildGone(self.death) from None
        except OSError:
            self.kill("进程已经退出（例如调用了 os._exit、exit()，或内存耗尽被终止）。")
            raise ChildGone(self.death) from None

    def _answer(self, ident: int, deadline: float,
                limits: FrameBudget) -> tuple[dict, list[bytes]]:
        for _stale in range(64):
            reply, blobs = wire.recv(self.sock, deadline=deadline, limits=limits)
            replies.check_common(reply)
            if reply["id"] == ident:
                return reply, blobs
        self.kill("进程发来了无法识别的消息，已被终止。")
        raise ChildGone(self.death)

    def _interrupt(self, ident: int, deadline: float,
                   limits: FrameBudget) -> tuple[dict, list[bytes]]:
        seconds = max(0.0, deadline - self._started)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, signal.SIGINT)
        try:
            reply, blobs = self._answer(ident, time.monotonic() + GRACE, limits)
        except (wire.WireError, replies.BadReply):
            self.kill(f"运行超过 {seconds:.0f} 秒，中断后仍无响应，进程已被终止。")
            raise ChildGone(self.death) from None
        if reply.get("interrupted"):
            raise Interrupted(round(seconds, 1))
        reply["interrupted_after"] = round(seconds, 1)
        return reply, blobs

    def kill(self, reason: str) -> None:
        """End the child and everything it started; later requests raise ChildGone."""
        if self.alive:
            self.alive, self.death = False, reason
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                self.sock.close()

    # -------------------------------------------------------------- operations

    def timed(self, header: dict, blobs: list[bytes] | tuple = (), *, seconds: float,
              limits: FrameBudget = VALUE_FRAME) -> tuple[dict, list[bytes]]:
        self._started = time.monotonic()
        return self.request(header, blobs, deadline=self._started + seconds, limits=limits)

    def send_files(self, files: dict[str, bytes], *, seconds: float = 30.0) -> None:
        names = list(files)
        self.timed({"op": "files", "names": names}, [files[n] for n in names], seconds=seconds,
                   limits=SMALL_FRAME)

    def run(self, code: str, *, seconds: float, output_bytes: int | None = None) -> dict:
        """Run a cell: ``{"ok", "outputs", "count"}`` (``interrupted_after`` when SIGINT
        hit it). With ``output_bytes``, the child keeps its outputs within that many bytes
        (saying ``"cut": true`` if it left some out), and an answer larger than that (plus
        :data:`RUN_REPLY_SLACK`) is not read: the child is killed, so the host never holds
        more than the notebook's output budget."""
        header: dict = {"op": "run", "code": code}
        limits = RUN_FRAME
        if output_bytes is not None:
            header["output_bytes"] = output_bytes
            size = min(output_bytes + RUN_REPLY_SLACK, RUN_FRAME.json_bytes)
            limits = replace(RUN_FRAME, json_bytes=size, total_bytes=size)
        reply, _ = self.timed(header, seconds=seconds, limits=limits)
        try:
            replies.check_run(reply)
        except replies.BadReply as err:
            self.kill(f"{err}已被终止。")
            raise ChildGone(self.death) from None
        return reply

    def get(self, name: str, *, seconds: float) -> Any:
        reply, blobs = self.timed({"op": "get", "name": name}, seconds=seconds)
        if reply.get("missing") is True:
            raise Missing(name)
        return self._decode(reply, blobs)

    def call(self, handle: int, args: tuple, kwargs: dict, *, deadline: float) -> Any:
        blobs: list[bytes] = []
        header = {"op": "call", "handle": handle,
                  "args": wire.encode_for_child(list(args), blobs),
                  "kwargs": wire.encode_for_child(dict(kwargs), blobs)}
        self._started = time.monotonic()
        reply, answer_blobs = self.request(header, blobs, deadline=deadline)
        if "raised" in reply:
            raise replies.raised_from(reply["raised"])
        if reply.get("interrupted"):
            raise Interrupted(round(time.monotonic() - self._started, 1))
        if "bad_request" in reply:
            # our kernel's answer to a request it could not read; but the child is the
            # student's process, which can send the same words: logged, and their failure
            log.warning("child %d refused a call: %.200r", self.pid, reply["bad_request"])
            raise BadValue("进程拒绝了评分程序的调用请求")
        return self._decode(reply, answer_blobs)

    def _decode(self, reply: dict, blobs: list[bytes]) -> Any:
        """The reply's value; anything that does not decode is the student's failure."""
        if "value" not in reply:
            raise BadValue("回答中没有值")
        try:
            return decode_from_child(reply["value"], blobs, remote=self._remote)
        except wire.WireError as err:
            raise BadValue(str(err)) from None
        except Exception:  # a decoder fault on hostile data: logged, never the grader's 0
            log.exception("child %d sent a value the host could not decode", self.pid)
            raise BadValue("数据无法解码") from None

    def _remote(self, handle: int, type_name: str) -> RemoteFunction:
        return RemoteFunction(self, handle, type_name)

    def close(self, *, wait: float = 10.0) -> None:
        """Say goodbye, then make sure the child and its descendants are gone: the
        zygote's fork that reaped them exits only once they are."""
        if self.alive:
            with contextlib.suppress(OSError, wire.WireError):
                wire.send(self.sock, {"op": "bye"})
        self.kill("评分已结束。")
        if wait <= 0:  # the caller confirms the reaper's exit (ZygoteLink.retire)
            return
        deadline = time.monotonic() + wait
        while self.reaper and _alive(self.reaper):
            if time.monotonic() >= deadline:
                log.warning("the reaper of child %d did not exit within %g s", self.pid, wait)
                return
            time.sleep(0.005)


def _gone_reason(err: wire.WireError) -> str:
    if isinstance(err, wire.PeerClosed):
        return "进程已经退出（例如调用了 os._exit、exit()，或内存耗尽被终止）。"
    return f"进程发来的数据不合规（{err}），已被终止。"


class RemoteFunction:
    """A student's function in the child; calling it is a request with a deadline."""

    remote = True  # checks tell it from an in-process function by this

    def __init__(self, child: Child, handle: int, type_name: str) -> None:
        self._child, self._handle, self.type_name = child, handle, type_name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        deadline = _deadline.get()
        if deadline is None:
            deadline = time.monotonic() + 30.0
        return self._child.call(self._handle, args, kwargs, deadline=deadline)

    def __repr__(self) -> str:
        return f"<学生的函数（{self.type_name}）>"
