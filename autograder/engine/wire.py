"""What crosses the socket between the grader (host) and the sandboxed child: data only.

A message is a JSON header plus binary blobs (``.npy`` bytes of arrays)::

    !I json length | json | !I blob count | (!Q length | bytes) per blob

Values are encoded as JSON with tagged objects (``{"$": kind, ...}``):

- ``None``, bools, ints, floats, strings, lists: as JSON;
- tuples, dicts, complex numbers, big ints: tagged;
- ``ndarray`` and numpy scalars: ``.npy`` bytes (``allow_pickle=False`` both ways);
- SymPy objects: ``srepr`` text, rebuilt in the host by :mod:`.srepr` (a whitelist
  reader, never ``eval``, ``pickle`` or ``sympify``);
- host -> child only: ``np.random.Generator`` (its bit generator's state) and
  :class:`~autograder.testfn.TestFunction` (source text and data);
- child -> host only: a function becomes a *handle* the host can call
  (:class:`~autograder.engine.proxy.RemoteFunction`); anything else that is not data
  becomes an *opaque* marker naming its type.

The host reads a message within a :class:`~.budgets.FrameBudget` (:func:`recv`) and
decodes a value with :func:`.hostdecode.decode_from_child`, which checks every tag, size,
count and dtype against :mod:`.budgets` and raises :class:`WireError` (in Chinese: it
becomes the student's failure) on anything else. The child's side
(:func:`encode_for_host`) never raises: whatever the student's objects do, the host
receives data or an opaque marker.
"""

from __future__ import annotations

import io
import json
import math
import socket
import struct
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..testfn import TestFunction, define
from . import jsonguard
from .budgets import HOST_FRAME, FrameBudget
from .npyread import ARRAY_KINDS as _ARRAY_KINDS
from .sreprfast import fast_srepr

__all__ = ["WireError", "PeerClosed", "Deadline", "Limits", "send", "recv", "encode_for_child",
           "decode_from_host", "encode_for_host", "HandleTable"]

_LEN = struct.Struct("!I")
_BLOB = struct.Struct("!Q")
#: Deepest nesting of lists/tuples/dicts accepted either way.
MAX_DEPTH = 32
#: Largest int sent as itself (bigger ones travel as decimal text, up to 4000 digits).
_MAX_DIGITS = 4000


#: The bounds on one message read (the name callers know; defined in :mod:`.budgets`).
Limits = FrameBudget


class WireError(Exception):
    """A message or value that does not follow the format (or exceeds a limit)."""


class PeerClosed(WireError):
    """The other end closed the socket (the child exited or was killed)."""


class Deadline(WireError):
    """No whole message arrived before the deadline."""


# ------------------------------------------------------------------ framing


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


# ------------------------------------------------------------------ arrays


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


# ------------------------------------------------------------------ host -> child


def encode_for_child(value: Any, blobs: list[bytes], depth: int = 0) -> Any:
    """Encode an argument the grader passes to a student function (trusted data)."""
    if depth > MAX_DEPTH:
        raise WireError("argument nested too deeply")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and not isinstance(value, np.integer):
        return value if abs(value) < 2**63 else {"$": "int", "v": str(value)}
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$": "float", "v": repr(value)}
    if isinstance(value, complex):
        return {"$": "complex", "re": value.real, "im": value.imag}
    if isinstance(value, (np.ndarray, np.generic)):
        blobs.append(_npy(np.asarray(value)))
        return {"$": "ndarray" if isinstance(value, np.ndarray) else "npscalar",
                "blob": len(blobs) - 1}
    if isinstance(value, (list, tuple)):
        items = [encode_for_child(v, blobs, depth + 1) for v in value]
        return items if isinstance(value, list) else {"$": "tuple", "items": items}
    if isinstance(value, dict):
        return {"$": "dict", "items": [[encode_for_child(k, blobs, depth + 1),
                                        encode_for_child(v, blobs, depth + 1)]
                                       for k, v in value.items()]}
    if isinstance(value, np.random.Generator):
        return {"$": "rng", "state": value.bit_generator.state}
    if isinstance(value, TestFunction):
        return {"$": "testfn", "source": value.source, "name": value.name,
                "data": encode_for_child(value.data, blobs, depth + 1)}
    if _is_sympy(value):
        import sympy

        return {"$": "sympy", "srepr": sympy.srepr(value)}
    raise WireError(f"cannot send a {type(value).__name__} to student code")


def _is_sympy(value: Any) -> bool:
    module = type(value).__module__ or ""
    return module.startswith("sympy.")


def decode_from_host(obj: Any, blobs: list[bytes]) -> Any:
    """The child's reading of :func:`encode_for_child` (the host is trusted)."""
    if isinstance(obj, list):
        return [decode_from_host(v, blobs) for v in obj]
    if not isinstance(obj, dict):
        return obj
    kind = obj["$"]
    if kind in ("ndarray", "npscalar"):
        arr = np.load(io.BytesIO(blobs[obj["blob"]]), allow_pickle=False)
        return arr if kind == "ndarray" else arr[()]
    if kind == "tuple":
        return tuple(decode_from_host(v, blobs) for v in obj["items"])
    if kind == "dict":
        return {decode_from_host(k, blobs): decode_from_host(v, blobs) for k, v in obj["items"]}
    if kind == "int":
        return int(obj["v"])
    if kind == "float":
        return float(obj["v"])
    if kind == "complex":
        return complex(obj["re"], obj["im"])
    if kind == "rng":
        bit_generator = getattr(np.random, obj["state"]["bit_generator"])()
        bit_generator.state = obj["state"]
        return np.random.Generator(bit_generator)
    if kind == "testfn":
        return define(obj["source"], obj["name"], decode_from_host(obj["data"], blobs))
    if kind == "sympy":
        import sympy

        return eval(obj["srepr"], vars(sympy).copy())  # noqa: S307 - the host's own srepr
    raise ValueError(f"unknown kind {kind!r}")


# ------------------------------------------------------------------ child -> host


class HandleTable:
    """The child's register of functions it handed to the host, by number."""

    def __init__(self) -> None:
        self.objects: list[Callable] = []

    def add(self, func: Callable) -> int:
        self.objects.append(func)
        return len(self.objects) - 1

    def get(self, handle: object) -> Callable:
        if not isinstance(handle, int) or not 0 <= handle < len(self.objects):
            raise KeyError(handle)
        return self.objects[handle]


def _type_name(value: Any) -> str:
    try:
        return str(type(value).__name__)[:80]
    except Exception:  # a hostile metaclass
        return "object"


def encode_for_host(value: Any, blobs: list[bytes], handles: HandleTable, depth: int = 0) -> Any:
    """Encode a student's value; never raises (what is not data becomes opaque)."""
    try:
        return _encode_for_host(value, blobs, handles, depth)
    except Exception:  # a student object misbehaving while being read
        return {"$": "opaque", "type": _type_name(value)}


def _encode_for_host(value: Any, blobs: list[bytes], handles: HandleTable, depth: int) -> Any:
    if depth > MAX_DEPTH:
        return {"$": "opaque", "type": "nested too deeply"}
    kind = type(value)
    if value is None or kind in (bool, str):
        return value
    if kind is int:
        if abs(value) < 2**63:
            return value
        return {"$": "int", "v": str(value)} if value.bit_length() < 13000 else \
            {"$": "opaque", "type": "int (too large)"}
    if kind is float:
        return value if math.isfinite(value) else {"$": "float", "v": repr(value)}
    if kind is complex:
        return {"$": "complex", "re": value.real, "im": value.imag}
    if isinstance(value, np.generic) and value.dtype.kind in _ARRAY_KINDS:
        blobs.append(_npy(np.asarray(value)))
        return {"$": "npscalar", "blob": len(blobs) - 1}
    if isinstance(value, np.ndarray):
        return _encode_array(np.asarray(value), blobs, handles, depth)
    if kind in (list, tuple):
        items = [encode_for_host(v, blobs, handles, depth + 1) for v in value]
        return items if kind is list else {"$": "tuple", "items": items}
    if kind is dict:
        return {"$": "dict", "items": [[encode_for_host(k, blobs, handles, depth + 1),
                                        encode_for_host(v, blobs, handles, depth + 1)]
                                       for k, v in value.items()]}
    if _is_sympy(value):
        import sympy

        if isinstance(value, (sympy.Basic, sympy.MatrixBase)):
            return {"$": "sympy", "srepr": fast_srepr(value)}
    if callable(value):
        return {"$": "function", "handle": handles.add(value), "type": _type_name(value)}
    if hasattr(value, "__array__") or hasattr(value, "__array_interface__"):
        return _encode_array(np.asarray(value), blobs, handles, depth)
    if isinstance(value, (int, float, str, list, tuple)):  # subclasses: their plain value
        plain = {int: int, float: float, str: str, list: list, tuple: tuple}
        base = next(b for b in plain if isinstance(value, b))
        return _encode_for_host(plain[base](value), blobs, handles, depth)
    return {"$": "opaque", "type": _type_name(value)}


def _encode_array(arr: np.ndarray, blobs: list[bytes], handles: HandleTable, depth: int) -> Any:
    if arr.dtype.kind in _ARRAY_KINDS and not arr.dtype.fields:
        blobs.append(_npy(arr))
        return {"$": "ndarray", "blob": len(blobs) - 1}
    if arr.dtype.kind == "O" and arr.size <= 100_000:
        return {"$": "objarray", "shape": list(arr.shape),
                "items": [encode_for_host(v, blobs, handles, depth + 1) for v in arr.ravel()]}
    return {"$": "opaque", "type": f"ndarray[{arr.dtype}]"}


def __getattr__(name: str) -> Any:
    """The host's reader lives in :mod:`.hostdecode` (not imported by the child); its two
    names stay reachable here."""
    if name in ("Opaque", "decode_from_child"):
        from . import hostdecode

        return getattr(hostdecode, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
