"""The host's side of one sandboxed child: requests with deadlines, and the functions in it.

A :class:`Child` is one submission's process (PID 1 of its namespace; spawned through
:mod:`.zygote_link`). Every request to it has a deadline; when it passes, the child is
sent ``SIGINT`` (IPython turns it into ``KeyboardInterrupt``, as a notebook's interrupt
button would) and, if it does not answer within a grace period, killed. Killing the
child's PID 1 ends its PID namespace, so every process it started dies with it. Every
reply is the student's data: its fields are checked (:mod:`.replies`) and its values
decoded strictly (:mod:`.decode`).

A :class:`RemoteFunction` is what a check receives for a student's function: calling
it sends the arguments as data and brings the result back as data, by the call deadline
the check runs under (:mod:`autograder.engine.protocol.deadline`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import time
from dataclasses import replace
from typing import Any

from ..protocol import codec, wire
from ..protocol.budgets import RUN_FRAME, SMALL_FRAME, VALUE_FRAME, FrameBudget
from ..protocol.deadline import current_deadline
from ..protocol.faults import BadValue, ChildGone, Interrupted, Missing, StudentFault
from . import replies
from .decode import decode_from_child

__all__ = ["Child", "RemoteFunction", "alive", "GRACE", "RUN_REPLY_SLACK"]

log = logging.getLogger("autograder.engine")

#: Seconds a child gets to answer after SIGINT before it is killed.
GRACE = 2.0
#: Bytes a ``run`` answer may take besides the outputs the host has room for (its own
#: fields, and the one short output a child that left some out may add).
RUN_REPLY_SLACK = 64 << 10


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one of another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
                  "args": codec.encode_for_child(list(args), blobs),
                  "kwargs": codec.encode_for_child(dict(kwargs), blobs)}
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
        while self.reaper and alive(self.reaper):
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
        when = current_deadline()
        if when is None:
            when = time.monotonic() + 30.0
        return self._child.call(self._handle, args, kwargs, deadline=when)

    def __repr__(self) -> str:
        return f"<学生的函数（{self.type_name}）>"
