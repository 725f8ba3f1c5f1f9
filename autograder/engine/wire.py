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

The host decodes with :func:`decode_from_child`, which checks every tag, size and dtype
and raises :class:`WireError` on anything else. The child's side
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
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..testfn import TestFunction, define
from .sreprfast import fast_srepr

__all__ = ["WireError", "Limits", "send", "recv", "encode_for_child", "decode_from_host",
           "encode_for_host", "decode_from_child", "Opaque", "HandleTable"]

_LEN = struct.Struct("!I")
_BLOB = struct.Struct("!Q")
#: Array kinds the host accepts: booleans, integers, floats, complex, strings.
_ARRAY_KINDS = "biufcUS"
#: Deepest nesting of lists/tuples/dicts accepted either way.
MAX_DEPTH = 32
#: Largest int sent as itself (bigger ones travel as decimal text, up to 4000 digits).
_MAX_DIGITS = 4000


class WireError(Exception):
    """A message or value that does not follow the format (or exceeds a limit)."""


class PeerClosed(WireError):
    """The other end closed the socket (the child exited or was killed)."""


class Deadline(WireError):
    """No whole message arrived before the deadline."""


@dataclass(frozen=True)
class Limits:
    """Upper bounds on one message read from the other side."""

    json_bytes: int = 64 << 20
    blobs: int = 4096
    total_bytes: int = 512 << 20


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
         limits: Limits = Limits()) -> tuple[dict, list[bytes]]:
    """Read one message; ``deadline`` is a ``time.monotonic()`` value or ``None``."""
    (length,) = _LEN.unpack(_read(sock, _LEN.size, deadline))
    if length > limits.json_bytes:
        raise WireError(f"message header of {length} bytes exceeds {limits.json_bytes}")
    try:
        header = json.loads(_read(sock, length, deadline).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise WireError(f"message header is not JSON ({err})") from None
    if not isinstance(header, dict):
        raise WireError("message header is not a JSON object")
    (count,) = _LEN.unpack(_read(sock, _LEN.size, deadline))
    if count > limits.blobs:
        raise WireError(f"{count} attachments exceed {limits.blobs}")
    blobs, total = [], length
    for _ in range(count):
        (size,) = _BLOB.unpack(_read(sock, _BLOB.size, deadline))
        total += size
        if total > limits.total_bytes:
            raise WireError(f"message exceeds {limits.total_bytes} bytes")
        blobs.append(_read(sock, size, deadline))
    return header, blobs


# ------------------------------------------------------------------ arrays


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _load_npy(blob: bytes) -> np.ndarray:
    try:
        arr = np.load(io.BytesIO(blob), allow_pickle=False)
    except Exception as err:  # numpy raises several kinds for a malformed file
        raise WireError(f"attachment is not a valid .npy array ({type(err).__name__})") from None
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in _ARRAY_KINDS:
        raise WireError(f"array of dtype {getattr(arr, 'dtype', '?')} is not accepted")
    return arr


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


class Opaque:
    """A student's value that is not data (an object of type ``type_name``)."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name} 对象>"


def decode_from_child(obj: Any, blobs: list[bytes], *, remote: Callable[[int, str], Any],
                      depth: int = 0) -> Any:
    """Strictly decode a value sent by the child; ``remote(handle, type)`` makes a proxy."""
    if depth > MAX_DEPTH + 2:
        raise WireError("value nested too deeply")
    if obj is None or isinstance(obj, (bool, str, int, float)):
        return obj
    if isinstance(obj, list):
        return [decode_from_child(v, blobs, remote=remote, depth=depth + 1) for v in obj]
    if not isinstance(obj, dict) or not isinstance(obj.get("$"), str):
        raise WireError("malformed value")
    kind = obj["$"]
    decode = _DECODERS.get(kind)
    if decode is None:
        raise WireError(f"unknown value kind {kind!r}")
    return decode(obj, blobs, remote, depth)


def _blob(obj: dict, blobs: list[bytes]) -> bytes:
    index = obj.get("blob")
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(blobs):
        raise WireError("value refers to a missing attachment")
    return blobs[index]


def _items(obj: dict, key: str = "items") -> list:
    items = obj.get(key)
    if not isinstance(items, list):
        raise WireError("malformed container")
    return items


def _dec_ndarray(obj, blobs, remote, depth):
    return _load_npy(_blob(obj, blobs))


def _dec_npscalar(obj, blobs, remote, depth):
    arr = _load_npy(_blob(obj, blobs))
    if arr.ndim != 0:
        raise WireError("scalar attachment is not 0-dimensional")
    return arr[()]


def _dec_objarray(obj, blobs, remote, depth):
    shape = _items(obj, "shape")
    if not all(isinstance(s, int) and s >= 0 for s in shape) or len(shape) > 32:
        raise WireError("malformed array shape")
    items = [decode_from_child(v, blobs, remote=remote, depth=depth + 1) for v in _items(obj)]
    if math.prod(shape) != len(items):
        raise WireError("array shape does not match its items")
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out.reshape(shape)


def _dec_tuple(obj, blobs, remote, depth):
    return tuple(decode_from_child(v, blobs, remote=remote, depth=depth + 1) for v in _items(obj))


def _dec_dict(obj, blobs, remote, depth):
    out = {}
    for pair in _items(obj):
        if not isinstance(pair, list) or len(pair) != 2:
            raise WireError("malformed dict item")
        key = decode_from_child(pair[0], blobs, remote=remote, depth=depth + 1)
        if not isinstance(key, (str, int, float, bool, type(None), tuple)):
            raise WireError("dict key is not hashable data")
        out[key] = decode_from_child(pair[1], blobs, remote=remote, depth=depth + 1)
    return out


def _dec_int(obj, blobs, remote, depth):
    text = obj.get("v")
    if not isinstance(text, str) or len(text) > _MAX_DIGITS + 1:
        raise WireError("malformed integer")
    try:
        return int(text)
    except ValueError:
        raise WireError("malformed integer") from None


def _dec_float(obj, blobs, remote, depth):
    text = obj.get("v")
    if text not in ("nan", "inf", "-inf"):
        raise WireError("malformed float")
    return float(text)


def _dec_complex(obj, blobs, remote, depth):
    re, im = obj.get("re"), obj.get("im")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (re, im)):
        raise WireError("malformed complex number")
    return complex(re, im)


def _dec_sympy(obj, blobs, remote, depth):
    from .srepr import SreprError, from_srepr

    try:
        return from_srepr(obj.get("srepr"))
    except SreprError as err:
        raise WireError(f"SymPy value not accepted: {err}") from None


def _dec_function(obj, blobs, remote, depth):
    handle = obj.get("handle")
    if not isinstance(handle, int) or isinstance(handle, bool) or handle < 0:
        raise WireError("malformed function handle")
    return remote(handle, str(obj.get("type", "function"))[:80])


def _dec_opaque(obj, blobs, remote, depth):
    return Opaque(str(obj.get("type", "object"))[:80])


_DECODERS = {"ndarray": _dec_ndarray, "npscalar": _dec_npscalar, "objarray": _dec_objarray,
             "tuple": _dec_tuple, "dict": _dec_dict, "int": _dec_int, "float": _dec_float,
             "complex": _dec_complex, "sympy": _dec_sympy, "function": _dec_function,
             "opaque": _dec_opaque}
