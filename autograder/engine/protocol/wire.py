"""Messages on the socket between the grader (host) and the sandboxed child: framing only.

A message is a JSON header plus binary blobs (``.npy`` bytes of arrays)::

    !I json length | json | !I blob count | (!Q length | bytes) per blob

:func:`recv` reads one within a :class:`~.budgets.FrameBudget`: the header's size, depth
and value count are checked before it is parsed (:mod:`.jsonguard`), every blob's size
before it is read, and a ``deadline`` bounds the whole read. What the header's values
mean is :mod:`.codec`'s. Both sides import this module; it holds nothing of the grader.
"""

from __future__ import annotations

import json
import socket
import struct
import time

from . import jsonguard
from .budgets import HOST_FRAME, FrameBudget

__all__ = ["WireError", "PeerClosed", "Deadline", "send", "recv"]

_LEN = struct.Struct("!I")
_BLOB = struct.Struct("!Q")


class WireError(Exception):
    """A message or value that does not follow the format (or exceeds a limit)."""


class PeerClosed(WireError):
    """The other end closed the socket (the child exited or was killed)."""


class Deadline(WireError):
    """No whole message arrived before the deadline."""


def send(sock: socket.socket, header: dict, blobs: list[bytes] | tuple[bytes, ...] = ()) -> None:
    """Write one message (blocking)."""
    text = json.dumps(header, ensure_ascii=False, allow_nan=True).encode("utf-8")
    parts = [_LEN.pack(len(text)), text, _LEN.pack(len(blobs))]
    for blob in blobs:
        parts += [_BLOB.pack(len(blob)), blob]
    sock.sendall(b"".join(parts))


def _read(sock: socket.socket, size: int, deadline: float | None) -> bytes:
    buf = bytearray(size)
    view, got = memoryview(buf), 0
    while got < size:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Deadline("no answer before the deadline")
            sock.settimeout(left)
        try:
            n = sock.recv_into(view[got:], size - got)
        except TimeoutError:
            raise Deadline("no answer before the deadline") from None
        except (ConnectionResetError, BrokenPipeError) as err:
            raise PeerClosed(str(err)) from None
        if n == 0:
            raise PeerClosed("the other end closed the connection")
        got += n
    return bytes(buf)


def recv(sock: socket.socket, *, deadline: float | None = None,
         limits: FrameBudget = HOST_FRAME) -> tuple[dict, list[bytes]]:
    """Read one message within ``limits`` (:mod:`.budgets`); ``deadline`` is a
    ``time.monotonic()`` value or ``None``. The header's size, depth and value count are
    checked before it is parsed (:mod:`.jsonguard`)."""
    (length,) = _LEN.unpack(_read(sock, _LEN.size, deadline))
    if length > limits.json_bytes:
        raise WireError(f"消息头有 {length} 字节，超过上限 {limits.json_bytes}")
    try:
        header = jsonguard.loads(_read(sock, length, deadline), limits)
    except jsonguard.HeaderError as err:
        raise WireError(str(err)) from None
    (count,) = _LEN.unpack(_read(sock, _LEN.size, deadline))
    if count > limits.blobs:
        raise WireError(f"{count} 个附件，超过上限 {limits.blobs}")
    blobs, total = [], length
    for _ in range(count):
        (size,) = _BLOB.unpack(_read(sock, _BLOB.size, deadline))
        total += size
        if total > limits.total_bytes:
            raise WireError(f"消息超过 {limits.total_bytes} 字节")
        blobs.append(_read(sock, size, deadline))
    return header, blobs
