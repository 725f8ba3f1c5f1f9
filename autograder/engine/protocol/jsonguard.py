"""A message header from the child, parsed as JSON only after its depth and size are known.

The C JSON parser recurses once per nesting level and allocates one object per value, so
the host measures both before parsing: strings are cut out (a linear regular expression
whose closing quote is optional, so no input makes it backtrack), and the brackets that
remain are counted in chunks with numpy. ``json.loads`` then runs on a text that is
known to be shallow and small; its own ``RecursionError`` and ``MemoryError`` are caught
as well, so a header that slips past the count still ends as a malformed message.
"""

from __future__ import annotations

import json
import re

import numpy as np

from .budgets import FrameBudget

__all__ = ["HeaderError", "measure", "loads"]

#: A JSON string, "unrolled": a run of plain bytes, then (escape, run) pairs. A backslash
#: can only start an escape and a plain byte only a run, so there is one way to match
#: and, the closing quote being optional, nothing to backtrack into: linear on every
#: input, without the possessive quantifiers Python 3.10 lacks. An unterminated string
#: runs to the end.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_CHUNK = 1 << 20
_OPEN = np.zeros(256, np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_CLOSE = np.zeros(256, np.int8)
_CLOSE[[ord("]"), ord("}")]] = 1
_COMMA = np.zeros(256, np.int8)
_COMMA[ord(",")] = 1


class HeaderError(ValueError):
    """The header is not JSON, or exceeds its budget (the message says which, in Chinese)."""


def measure(data: bytes) -> tuple[int, int]:
    """(deepest nesting, upper bound on the number of values) of JSON text ``data``."""
    rest = np.frombuffer(_STRING.sub(b"0", data), dtype=np.uint8)
    deepest, depth, items = 0, 0, 1
    for start in range(0, len(rest), _CHUNK):
        chunk = rest[start:start + _CHUNK]
        opens = _OPEN[chunk]
        running = depth + np.cumsum(opens.astype(np.int64) - _CLOSE[chunk])
        if len(running):
            deepest, depth = max(deepest, int(running.max())), int(running[-1])
        items += int(opens.sum()) + int(_COMMA[chunk].sum())
    return deepest, items


def loads(data: bytes, budget: FrameBudget) -> dict:
    """The header ``data`` as a dict, or :class:`HeaderError`."""
    if len(data) > budget.json_bytes:
        raise HeaderError(f"消息头有 {len(data)} 字节，超过上限 {budget.json_bytes}")
    opens = data.count(b"[") + data.count(b"{")
    if opens <= budget.json_depth and opens + data.count(b",") < budget.json_items:
        depth, items = opens, 0  # bytes.count bounds both (strings can only add to it)
    else:
        depth, items = measure(data)
    if depth > budget.json_depth:
        raise HeaderError(f"消息头嵌套 {depth} 层，超过上限 {budget.json_depth}")
    if items > budget.json_items:
        raise HeaderError(f"消息头约有 {items} 个值，超过上限 {budget.json_items}")
    try:
        header = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise HeaderError("消息头不是有效的 JSON") from None
    except (RecursionError, MemoryError):
        raise HeaderError("消息头嵌套太深或太大") from None
    if not isinstance(header, dict):
        raise HeaderError("消息头不是 JSON 对象")
    return header
