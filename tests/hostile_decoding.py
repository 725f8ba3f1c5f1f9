"""A second hostile corpus: what a student can make the *host* decode.

``tests/hostile.py`` attacks the sandbox; this one attacks what the grader does with the
data that comes back. Four kinds of trick:

- :data:`VALUES`: Python values a student's variable (or function) can hold; they reach
  the checks through the wire format exactly as from the sandbox;
- :data:`SREPR`: SymPy text a patched child can send in place of an honest ``srepr``;
- :data:`REPLIES`: whole replies (header and attachments) a patched child can write to
  its socket in answer to ``get`` or ``call``, bytes included;
- :func:`child_tricks`: cells that patch the child's own encoder or sender, for the
  batch through the real sandbox.

Every trick here must end as the student's failure of the check it reaches (never a
grader error, never points), quickly.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

C = sp.Symbol("c")


class _Liar(sp.Expr):
    """Behaves like 0.670 in the child, prints as ``nan`` on the wire (issue 20)."""

    is_number = True

    def _sympyrepr(self, printer):  # what srepr (and so the wire) shows
        return "nan"

    def __float__(self):
        return 0.670


#: The file a value would create if the host ever ran it as code.
CODE_MARK = "/tmp/autograder-hostile-decoding-ran-code"
_CODE = f"__import__('pathlib').Path({CODE_MARK!r}).write_text('host')"

#: name -> factory of the value (factories: some are costly, some mutable).
VALUES: dict[str, Callable[[], object]] = {
    "nan": lambda: float("nan"),
    "inf": lambda: float("inf"),
    "huge_int": lambda: 10**400,
    "plain_float": lambda: 0.670,
    "complex": lambda: 1 + 2j,
    "complex_array": lambda: np.array([[1 + 2j, 0.5], [0.5, 1 - 2j]]),
    "string": lambda: "0.670",
    "code_in_strings": lambda: [[_CODE, _CODE]],
    "none": lambda: None,
    "sympy_nan": lambda: sp.nan,
    "sympy_zoo": lambda: sp.zoo,
    "sympy_minus_oo": lambda: -sp.oo,
    "nan_pow_c": lambda: sp.nan**C,
    "liar": lambda: _Liar(),
    "sympy_true": lambda: sp.true,
    "relational": lambda: sp.Eq(C, 1),
    "interval": lambda: sp.Interval(0, 1),
    "poly": lambda: sp.Poly((C + 1) ** 20, C),
    "nan_matrix": lambda: sp.Matrix([[sp.nan, sp.nan]]),
    "boolean_matrix": lambda: sp.ImmutableMatrix([[C > 1, C < 1]]),
    "nan_array": lambda: np.full((2, 2), np.nan),
    "string_array": lambda: np.array([["0.5", "0.5"], ["0.5", "0.5"]]),
    "empty_array": lambda: np.zeros((0,)),
    "opaque_object": lambda: object(),
    "dict": lambda: {"weights": 0.5, (1, 2): [0.5]},
    "deep_list": lambda: _nested(30, 0.5),
    "nan_tuple": lambda: (float("nan"), float("nan")),
}


def spoiled(value: object, how: str) -> object | None:
    """An honest value made hostile in one place, so it passes every kind and shape test
    and reaches a check's deepest comparison: ``how`` is ``nan``, ``inf`` or
    ``imaginary``; ``None`` when it does not apply to such a value."""
    extra = {"nan": sp.nan, "inf": sp.oo, "imaginary": sp.I / 2}[how]
    number = {"nan": float("nan"), "inf": float("inf")}.get(how)
    if isinstance(value, tuple) and value:
        first = spoiled(value[0], how)
        return None if first is None else (first, *value[1:])
    if isinstance(value, np.ndarray) and value.dtype.kind in "iufc" and value.size:
        if how == "imaginary":
            return value + 0.5j
        out = value.astype(np.float64 if value.dtype.kind in "iu" else value.dtype)
        out.flat[0] = number
        return out
    if isinstance(value, sp.MatrixBase) and len(value):
        out = value.as_mutable()
        out[0] = sp.Add(out[0], extra, evaluate=False)
        return out
    if isinstance(value, sp.Expr):
        return sp.Add(value, extra, evaluate=False)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return complex(value, 0.5) if how == "imaginary" else number
    return None


#: How :func:`spoiled` spoils an honest value.
SPOILERS = ("nan", "inf", "imaginary")


def _nested(depth: int, leaf: object) -> object:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


#: SymPy text the host's reader must refuse (name -> text).
SREPR: dict[str, str] = {
    "poly": "Poly(Pow(Add(Symbol('c'), Integer(1)), Integer(200)), Symbol('c'))",
    "huge_power": "Pow(Integer(10), Integer(10000000000))",
    "power_tower": "Pow(Integer(2), Pow(Integer(10), Integer(10)))",
    "exp_log_collapse": "exp(Mul(Integer(1000000), log(Integer(10))))",
    "exp_tower": "exp(exp(exp(Integer(10))))",
    "expand_bomb": "Pow(Add(Symbol('c'), Integer(1)), Integer(1000000))",
    # small exponents, numbers past what Python prints (4300 digits) or expands quickly
    "big_base_power": "Pow(Integer(" + "9" * 99 + "), Integer(5000))",
    "binomial_bomb": "Pow(Add(Symbol('c'), Integer(1)), Integer(9000))",
    "zero_times_bomb": "Mul(Integer(0), Pow(Integer(10), Integer(1000000000)))",
    "reciprocal_in_exponent": "Pow(Integer(2), Pow(Rational(1, 10000000000), Integer(-1)))",
    "float_precision": "Float('0.5', precision=10000000)",
    "float_exponent": "Float('1e100000', precision=53)",
    "long_integer": "Integer(" + "9" * 500 + ")",
    "sum": "Sum(Symbol('c'), Tuple(Symbol('c'), Integer(1), Integer(100000000)))",
    "derivative": "Derivative(exp(Symbol('c')), Tuple(Symbol('c'), Integer(100000)))",
    "factorial": "factorial(Integer(100000000))",
    "interval": "Interval(Integer(0), Integer(1), false, false)",
    "code": "__import__('os').system('true')",
    "attribute": "Symbol('c').__class__",
    "keyword_call": "Symbol('c', evaluate=print)",
    "deep": "Add(" * 150 + "Integer(1)" + ", Integer(1))" * 150,
    "too_many_nodes": "Add(" + ", ".join(f"Symbol('x{i}')" for i in range(30_000)) + ")",
    "too_long": "Symbol('" + "c" * 300_000 + "')",
    "ragged_matrix": "MutableDenseMatrix([[Integer(1)], [Integer(1), Integer(2)]])",
    "empty_giant_matrix": "MutableDenseMatrix(100000000, 100000000, [])",
    "not_text": 12345,  # type: ignore[dict-item]
}

#: A large SymPy value the reader accepts (near its exact-bits budget, 20 times the
#: honest students' largest scalar): the checks must still answer quickly.
HUGE_LEGAL = sp.Add(*[sp.exp(sp.Rational(i, 7)) * sp.Rational(1, i + 2) for i in range(450)],
                    evaluate=False)


def npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def lying_npy(shape: tuple[int, ...], dtype: str = "<f8", data: bytes = b"\0" * 8) -> bytes:
    """An ``.npy`` whose header claims ``shape`` over ``data``."""
    header = repr({"descr": dtype, "fortran_order": False, "shape": shape}).encode("latin1")
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + data


def _pickled_object_array() -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.array([object()], dtype=object), allow_pickle=True)
    return buf.getvalue()


@dataclass(frozen=True)
class Reply:
    """A reply the fake child sends: ``fields`` merged into ``{"id": <request id>}``, or
    ``header``: JSON text of its own (``ID`` stands for the request's id), framed with
    ``blobs``; or ``raw``: bytes sent as they are, framing included."""

    name: str
    fields: dict = field(default_factory=dict)
    blobs: tuple[bytes, ...] = ()
    header: bytes | None = None
    raw: bytes | None = None


def frame(header_bytes: bytes, blobs: tuple[bytes, ...] = (), *, length: int | None = None) -> bytes:
    """A message on the wire, with a header length that may lie."""
    parts = [struct.pack("!I", len(header_bytes) if length is None else length), header_bytes,
             struct.pack("!I", len(blobs))]
    for blob in blobs:
        parts += [struct.pack("!Q", len(blob)), blob]
    return b"".join(parts)


def _dict_json(keys: int) -> bytes:
    return (b'{"id": ID, "value": {"$": "dict", "items": ['
            + b",".join(b"[%d, 0]" % i for i in range(keys)) + b"]}}")


def _deep_json(depth: int) -> bytes:
    return b'{"id": ID, "value": ' + b"[" * depth + b"]" * depth + b"}"


#: Replies to a ``get`` (also used as answers to a ``call``).
REPLIES: tuple[Reply, ...] = (
    Reply("deep_lists", header=_deep_json(2000)),
    Reply("deep_lists_100k", header=_deep_json(100_000)),
    Reply("header_claims_4gb", raw=struct.pack("!I", 0xFFFFFFF0) + b"{}"),
    Reply("not_json", header=b'{"id": ID, "value": [1, 2,,]}'),
    Reply("not_utf8", header=b'{"id": ID, "value": "\xff\xfe"}'),
    Reply("json_not_an_object", header=b"[1, 2, 3]"),
    Reply("id_is_a_list", {"id": [1], "value": 1}),
    Reply("no_id", header=b'{"value": 1}'),
    Reply("dict_with_a_million_keys", header=_dict_json(1_000_000)),  # past 8 MB
    Reply("dict_of_400k_keys", header=_dict_json(400_000)),  # 4 MB, 1.2 M values
    Reply("npy_lies_about_shape", {"value": {"$": "ndarray", "blob": 0}},
          (lying_npy((10**12,)),)),
    Reply("npy_zero_size_strings", {"value": {"$": "ndarray", "blob": 0}},
          (lying_npy((10**18,), "<U0", b""),)),
    Reply("npy_object_pickle", {"value": {"$": "ndarray", "blob": 0}}, (_pickled_object_array(),)),
    Reply("npy_structured", {"value": {"$": "ndarray", "blob": 0}},
          (npy(np.zeros(2, dtype=[("a", "<f8")])),)),
    Reply("npy_too_many_items", {"value": {"$": "ndarray", "blob": 0}},
          (lying_npy((10**7,), "|b1", b"\0" * 10**7),)),
    Reply("missing_blob", {"value": {"$": "ndarray", "blob": 3}}),
    Reply("npscalar_not_0d", {"value": {"$": "npscalar", "blob": 0}}, (npy(np.zeros(3)),)),
    Reply("objarray_shape_lies", {"value": {"$": "objarray", "shape": [10**6, 10**6],
                                            "items": [1]}}),
    Reply("int_of_5000_digits", {"value": {"$": "int", "v": "9" * 5000}}),
    Reply("int_not_digits", {"value": {"$": "int", "v": "--5"}}),
    Reply("float_tag_lies", {"value": {"$": "float", "v": "0.670"}}),
    Reply("complex_huge_int", {"value": {"$": "complex", "re": 10**400, "im": 0}}),
    Reply("unknown_tag", {"value": {"$": "pickle", "data": "gASVAAAA"}}),
    Reply("unhashable_key", {"value": {"$": "dict", "items": [[[1], 2]]}}),
    Reply("handle_is_bool", {"value": {"$": "function", "handle": True}}),
    Reply("string_of_2m_chars", {"value": "x" * 2_000_000}),
    Reply("srepr_poly", {"value": {"$": "sympy", "srepr": SREPR["poly"]}}),
    Reply("srepr_huge_power", {"value": {"$": "sympy", "srepr": SREPR["huge_power"]}}),
    Reply("srepr_not_text", {"value": {"$": "sympy", "srepr": ["Integer(1)"]}}),
    Reply("no_value", {}),
    Reply("missing_is_a_string", {"missing": "yes"}),
    Reply("raised_is_a_list", {"raised": ["ValueError"]}),
    Reply("raised_bases_not_a_list", {"raised": {"type": "ValueError", "bases": 5}}),
    Reply("raised_type_not_text", {"raised": {"type": {"$": "x"}, "message": 1}}),
    Reply("forged_bad_request", {"bad_request": "the grader's fault, honest"}),
    Reply("interrupted_not_bool", {"interrupted": "yes"}),
    Reply("too_many_attachments", header=b'{"id": ID, "value": 1}', blobs=(b"",) * 5000),
    Reply("attachment_too_large", raw=frame(b'{"id": 0, "value": 1}')[:-4]
          + struct.pack("!I", 1) + struct.pack("!Q", 1 << 40)),
    Reply("silence", raw=b""),
)


def encoded(reply: Reply, ident: int) -> bytes:
    """The bytes the fake child writes for ``reply`` to request ``ident``."""
    if reply.raw is not None:
        return reply.raw
    if reply.header is not None:
        return frame(reply.header.replace(b"ID", str(ident).encode()), reply.blobs)
    header = {"id": ident, **reply.fields}
    return frame(json.dumps(header).encode(), reply.blobs)


# ------------------------------------------------------------------ tricks in the child

_PATCH = '''
import sys as _sys
_wire = _sys.modules["autograder.engine.protocol.codec"]
_NAMES = {names!r}
'''

#: Cell code patching the child (``{names}``: the variables the manifest's checks read).
CHILD_TRICKS: dict[str, str] = {
    # the trick: every checked SymPy value says nan on the wire
    "encoder_says_nan": _PATCH + '''
_honest = _wire.encode_for_host
def _lie(value, blobs, handles, depth=0):
    out = _honest(value, blobs, handles, depth)
    if isinstance(out, dict) and out.get("$") == "sympy":
        return {"$": "sympy", "srepr": "Pow(nan, Symbol('c'))"}
    if isinstance(out, dict) and out.get("$") == "ndarray":
        import numpy as np
        blobs[out["blob"]] = _wire._npy(np.full(np.shape(value), np.nan))
    return out
_wire.encode_for_host = _lie
''',
    "encoder_sends_poly": _PATCH + '''
_wire.encode_for_host = lambda value, blobs, handles, depth=0: {"$": "sympy", "srepr":
    "Poly(Pow(Add(Symbol('c'), Integer(1)), Integer(200)), Symbol('c'))"}
''',
    "encoder_sends_huge_values": _PATCH + '''
_honest = _wire.encode_for_host
_kinds = [{"$": "int", "v": "1" + "0" * 400}, {"$": "sympy", "srepr": "true"},
          {"$": "sympy", "srepr": "Interval(Integer(0), Integer(1), false, false)"}, 0.670]
_count = [0]
def _huge(value, blobs, handles, depth=0):
    out = _honest(value, blobs, handles, depth)
    if depth == 0 and not (isinstance(out, dict) and out.get("$") == "function"):
        _count[0] += 1
        return _kinds[_count[0] % len(_kinds)]
    return out
_wire.encode_for_host = _huge
''',
    # answers to get/call written as raw bytes: deep lists, a lying header, a bad 'raised'
    "sender_writes_raw_bytes": _PATCH + '''
import json as _json, struct as _struct
_frame = _sys.modules["autograder.engine.protocol.wire"]
_honest_send = _frame.send
_count = [0]
def _send(sock, header, blobs=()):
    if "value" not in header and "raised" not in header:
        return _honest_send(sock, header, blobs)
    _count[0] += 1
    ident = header.get("id")
    tricks = [
        b'{"id": %d, "value": ' % ident + b"[" * 2000 + b"]" * 2000 + b"}",
        _json.dumps({"id": ident, "raised": {"type": "ValueError", "bases": 5}}).encode(),
        _json.dumps({"id": ident, "bad_request": "grader fault"}).encode(),
        _json.dumps({"id": ident, "value": {"$": "ndarray", "blob": 0}}).encode(),
    ]
    text = tricks[_count[0] % len(tricks)]
    blob = b"\\x93NUMPY\\x01\\x00" + _struct.pack("<H", 118) + (
        repr({"descr": "<f8", "fortran_order": False, "shape": (10**12,)}).encode().ljust(117)
        + b"\\n") + b"\\0" * 8
    extra = [blob] if b"ndarray" in text else []
    parts = [_struct.pack("!I", len(text)), text, _struct.pack("!I", len(extra))]
    for b in extra:
        parts += [_struct.pack("!Q", len(b)), b]
    sock.sendall(b"".join(parts))
_frame.send = _send
''',
}


def child_tricks(names: list[str]) -> dict[str, str]:
    """:data:`CHILD_TRICKS` with the checked variables' names filled in."""
    return {name: code.replace("{names!r}", repr(sorted(names))) for name, code in
            CHILD_TRICKS.items()}
