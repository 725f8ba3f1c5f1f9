"""Values on the wire: what crosses between the grader (host) and the child is data only.

Values are encoded as JSON with tagged objects (``{"$": kind, ...}``), arrays as ``.npy``
blobs of the message (:mod:`.wire` frames them):

- ``None``, bools, ints, floats, strings, lists: as JSON;
- tuples, dicts, complex numbers, big ints: tagged;
- ``ndarray`` and numpy scalars: ``.npy`` bytes (``allow_pickle=False`` both ways);
- SymPy objects: ``srepr`` text (:mod:`.sympy_writer`), rebuilt in the host by an
  allowlist reader (:mod:`autograder.engine.host.sympy_reader`; never ``eval``,
  ``pickle`` or ``sympify``);
- host -> child only: ``np.random.Generator`` (its bit generator's state) and
  :class:`~.testfn.TestFunction` (source text and data);
- child -> host only: a function becomes a *handle* the host can call; anything else that
  is not data becomes an *opaque* marker naming its type (:class:`Opaque` in the host).

This module holds the child's side (:func:`encode_for_host`, which never raises:
whatever the student's objects do, the host receives data or an opaque marker) and the
host's encoder of trusted arguments. The host's strict reading of what the child sends,
with size, depth and time budgets, is :mod:`autograder.engine.host.decode`.
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib import format as npy_format

from .sympy_writer import fast_srepr
from .testfn import TestFunction, define
from .wire import WireError

__all__ = ["NpyVersionError", "Opaque", "ARRAY_KINDS", "MAX_DEPTH", "NPY_HEADER_BYTES",
           "encode_for_child", "decode_from_host", "encode_for_host", "HandleTable",
           "npy_header"]

#: Deepest nesting of lists/tuples/dicts accepted either way.
MAX_DEPTH = 32
#: Array kinds that cross as ``.npy``: booleans, integers, floats, complex, strings.
ARRAY_KINDS = "biufcUS"


class Opaque:
    """A student's value that is not data (an object of type ``type_name``), as the host
    decodes the child's ``opaque`` marker."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name} 对象>"


# ------------------------------------------------------------------ arrays


class NpyVersionError(ValueError):
    """An ``.npy`` blob of a version other than 1.0 and 2.0 (what ``np.save`` writes)."""


#: The longest ``.npy`` header read (numpy's own default limit).
NPY_HEADER_BYTES = 10_000
_NPY_MAGIC = b"\x93NUMPY"


def _npy(arr: np.ndarray) -> bytes:
    """``np.save``'s bytes for ``arr``, with each distinct header written once."""
    dtype = arr.dtype
    if dtype.kind not in ARRAY_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        buf = io.BytesIO()  # np.save decides (and refuses objects without pickle)
        np.save(buf, arr, allow_pickle=False)
        return buf.getvalue()
    fortran = arr.flags.f_contiguous and not arr.flags.c_contiguous
    head = _npy_head(dtype, fortran, arr.shape)
    return head + arr.tobytes(order="F" if fortran else "C")


@functools.lru_cache(maxsize=256)
def _npy_head(dtype: np.dtype, fortran: bool, shape: tuple[int, ...]) -> bytes:
    buf = io.BytesIO()
    header = {"descr": npy_format.dtype_to_descr(dtype), "fortran_order": fortran,
              "shape": shape}
    npy_format.write_array_header_1_0(buf, header)
    return buf.getvalue()


def npy_header(blob: bytes) -> tuple[tuple, bool, np.dtype, int]:
    """``(shape, fortran_order, dtype, data_offset)`` of an ``.npy`` blob (version 1.0 or
    2.0), read by numpy's literal-only header reader; ``ValueError`` if it is not one.

    The arrays of one check share a few headers, and reading one (``ast.literal_eval``) is
    most of ``np.load``'s time for a small array (a 4x8 float array: 23 us with
    ``np.load``, 4 us with its header read before): each distinct header is read once.
    """
    if blob[:6] != _NPY_MAGIC or len(blob) < 12:
        raise ValueError("not an .npy blob")
    if tuple(blob[6:8]) not in ((1, 0), (2, 0)):
        raise NpyVersionError(f".npy version {tuple(blob[6:8])} is not read")
    size = 2 if blob[6] == 1 else 4
    length = 8 + size + int.from_bytes(blob[8:8 + size], "little")
    if length > NPY_HEADER_BYTES + 12:
        raise ValueError(".npy header too long")
    return _read_header(bytes(blob[:length]))


@functools.lru_cache(maxsize=256)
def _read_header(head: bytes) -> tuple[tuple, bool, np.dtype, int]:
    buf = io.BytesIO(head)
    read = npy_format.read_array_header_1_0 if head[6] == 1 else \
        npy_format.read_array_header_2_0
    buf.seek(8)
    shape, fortran, dtype = read(buf, max_header_size=NPY_HEADER_BYTES)
    if buf.tell() != len(head):
        raise ValueError(".npy header length")
    return shape, fortran, dtype, len(head)


def _from_npy(blob: bytes) -> np.ndarray:
    """The array in a trusted ``.npy`` blob (the host's): a writable copy, as np.load's."""
    shape, fortran, dtype, offset = npy_header(blob)
    count = math.prod(shape)
    flat = np.frombuffer(blob, dtype=dtype, count=count, offset=offset)
    return flat.reshape(shape, order="F" if fortran else "C").copy(order="K")


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
        arr = _from_npy(blobs[obj["blob"]])
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
    if isinstance(value, np.generic) and value.dtype.kind in ARRAY_KINDS:
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
    if arr.dtype.kind in ARRAY_KINDS and not arr.dtype.fields:
        blobs.append(_npy(arr))
        return {"$": "ndarray", "blob": len(blobs) - 1}
    if arr.dtype.kind == "O" and arr.size <= 100_000:
        return {"$": "objarray", "shape": list(arr.shape),
                "items": [encode_for_host(v, blobs, handles, depth + 1) for v in arr.ravel()]}
    return {"$": "opaque", "type": f"ndarray[{arr.dtype}]"}
