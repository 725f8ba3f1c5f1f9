"""How much of the child's data the host agrees to read: every decoding budget, defined once.

Everything the sandboxed child sends back is hostile until decoded: a message, a value,
an ``.npy`` attachment or SymPy text that is malformed, too large, too deep or too slow to
read becomes the *student's* failure of that check (:class:`~.errors.BadValue`), never a
grader error and never a hang. The honest sample students of every assignment
(``autograder.samples``, measured with ``tests/test_hostile_checks.py``'s census) stay far
below each figure: the largest value they send is a header of a few kB (35 kB before
repeated SymPy subexpressions were written once) with about 20 JSON nodes, 5 levels
deep, three attachments of at most 40 kB, SymPy text of 2.6 kB that spells out 9407
syntax nodes (17 levels, integers of 8 digits, exponents of 2, 53-bit floats); the
SymPy budgets hold for the text spelled out.

Kept free of heavy imports: the host's reader and the tests import it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FrameBudget", "ValueBudget", "SympyBudget", "RUN_FRAME", "VALUE_FRAME",
           "SMALL_FRAME", "HOST_FRAME", "VALUE",
           "SYMPY", "FETCH_SECONDS", "GET_SECONDS"]


@dataclass(frozen=True)
class FrameBudget:
    """One message read from the socket: its JSON header and its attachments (the
    defaults bound any message that is not given a budget of its own)."""

    json_bytes: int = 64 << 20
    json_depth: int = 112
    json_items: int = 4_000_000
    blobs: int = 4096
    total_bytes: int = 512 << 20


#: A cell's reply (its outputs: up to 1 M characters of text and 16 MB of pictures).
RUN_FRAME = FrameBudget(json_bytes=64 << 20, json_depth=32, json_items=4_000_000, blobs=0,
                        total_bytes=64 << 20)
#: A value's reply (a variable, or what a student's function returned).
VALUE_FRAME = FrameBudget(json_bytes=8 << 20, json_depth=112, json_items=1_000_000,
                          blobs=4096, total_bytes=256 << 20)
#: Any other reply of the child (a spawned child's hello, files written).
SMALL_FRAME = FrameBudget(json_bytes=1 << 16, json_depth=4, json_items=1000, blobs=0,
                          total_bytes=1 << 16)
#: What the child accepts from the host (trusted: the bounds only catch a broken host).
HOST_FRAME = FrameBudget(json_bytes=64 << 20, json_depth=1000, json_items=50_000_000,
                         blobs=4096, total_bytes=512 << 20)


@dataclass(frozen=True)
class ValueBudget:
    """One decoded value: nesting, strings, arrays."""

    depth: int = 34            # lists/tuples/dicts inside one another (the child cuts at 32)
    string_chars: int = 1 << 20
    type_name_chars: int = 80
    int_digits: int = 4000     # Python ints beyond 2**63 travel as decimal text
    array_bytes: int = 64 << 20
    array_items: int = 8_000_000
    array_ndim: int = 32
    array_itemsize: int = 1 << 16  # one string element of an 'U'/'S' array, in bytes
    object_items: int = 100_000    # entries of an object array (each decoded as a value)


VALUE = ValueBudget()


@dataclass(frozen=True)
class SympyBudget:
    """SymPy text (``srepr``) and the expression it builds."""

    text_chars: int = 256 << 10  # parsed by ast in one call to C: kept short
    nodes: int = 50_000        # syntax nodes of the text
    depth: int = 100           # syntax nesting (the honest maximum is 17)
    digits: int = 100          # of one integer literal (numerator, denominator)
    name_chars: int = 100      # a symbol's or undefined function's name
    float_bits: int = 1000     # ``precision`` of a Float
    float_exponent: int = 999  # decimal exponent written in a Float's text
    #: Bound on the bits of any exact number the expression can produce when it is
    #: evaluated, expanded or simplified (see :mod:`.sreprbudget`): keeps a later
    #: ``simplify`` in a check out of uninterruptible big-integer arithmetic, and every
    #: integer printable (Python refuses to print more than 4300 digits).
    bits: int = 12_000
    #: Bound on |exponent| anywhere (of ``Pow``, or the argument of ``exp``/``sinh``/
    #: ``cosh``), every symbol at most 3: keeps ``N`` fast (``N(exp(10**3000))`` is not).
    exponent: int = 10_000


SYMPY = SympyBudget()

#: Seconds to receive one variable of the child for a check (the socket's deadline).
GET_SECONDS = 15.0
#: Seconds to fetch *and decode* all the values of one check, under the host's time limit.
FETCH_SECONDS = 20.0
