"""The child's replies, checked field by field before the host uses any of them.

A reply is the student's data like any value: each field the host reads has a declared
type, and a reply whose fields do not match is the student's failure (:class:`BadReply`,
a :class:`~.errors.StudentFault`), never a ``TypeError`` in the grader.

============  ===================================================================
request       fields the host reads
============  ===================================================================
``run``       ``ok`` (bool), ``outputs`` (list), ``count`` (int or null)
``get``       ``missing`` (true) or ``value``
``call``      ``value``, or ``raised`` ({``type``: str, ``message``: str, ``bases``:
              [str]}), or ``interrupted`` (true), or ``bad_request`` (str)
every reply   ``id`` (int), ``interrupted`` (bool, when present)
============  ===================================================================
"""

from __future__ import annotations

from typing import Any

from ..protocol.faults import Raised, StudentFault

__all__ = ["BadReply", "check_common", "check_run", "raised_from", "TYPE_CHARS",
           "MESSAGE_CHARS", "BASES"]

#: Longest exception type name, message and class hierarchy kept from a ``raised`` reply.
TYPE_CHARS, MESSAGE_CHARS, BASES = 80, 2000, 20


class BadReply(StudentFault):
    """The child's reply does not have the fields its request calls for."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(f"进程的回答格式不对（{detail}）。")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_common(reply: dict) -> None:
    """Fields every reply may carry."""
    if not _is_int(reply.get("id")):
        raise BadReply("id 应是整数")
    if "interrupted" in reply and not isinstance(reply["interrupted"], bool):
        raise BadReply("interrupted 应是布尔值")


def check_run(reply: dict) -> None:
    """A cell's reply."""
    if not isinstance(reply.get("ok"), bool):
        raise BadReply("ok 应是布尔值")
    if not isinstance(reply.get("outputs"), list):
        raise BadReply("outputs 应是列表")
    if reply.get("count") is not None and not _is_int(reply.get("count")):
        raise BadReply("count 应是整数")


def raised_from(info: Any) -> Raised:
    """The exception a ``call`` reply reports, or :class:`BadReply`."""
    if not isinstance(info, dict):
        raise BadReply("raised 应是对象")
    kind, message, bases = info.get("type"), info.get("message", ""), info.get("bases", [])
    if not isinstance(kind, str) or not isinstance(message, str) or not isinstance(bases, list) \
            or not all(isinstance(b, str) for b in bases[:BASES]):
        raise BadReply("raised 的字段类型不对")
    return Raised(kind[:TYPE_CHARS], message[:MESSAGE_CHARS],
                  tuple(b[:TYPE_CHARS] for b in bases[:BASES]))
