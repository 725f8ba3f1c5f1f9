"""The boundary without the process: values cross the wire format in-process.

Tests grade thousands of sample answers in-process; passing every value and every call
through :mod:`.wire` exactly as the sandbox would (data only, functions as handles,
exceptions by type name) proves the checks behave the same on both sides of it.
"""

from __future__ import annotations

from typing import Any

from ..protocol import codec, wire
from ..protocol.faults import BadValue, Raised
from .decode import decode_from_child

__all__ = ["LoopbackFunction", "crossing"]


class LoopbackFunction:
    """A function called as the host calls a student's function in the child."""

    remote = True

    def __init__(self, func: Any) -> None:
        self.func = func

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        blobs: list[bytes] = []
        sent = codec.encode_for_child([list(args), dict(kwargs)], blobs)
        args, kwargs = codec.decode_from_host(sent, blobs)
        try:
            value = self.func(*args, **kwargs)
        except (Exception, SystemExit) as err:  # TimeLimit and KeyboardInterrupt pass
            bases = tuple(c.__name__ for c in type(err).__mro__)
            raise Raised(type(err).__name__, str(err), bases) from None
        return crossing(value)


def crossing(value: Any) -> Any:
    """``value`` as the host would receive it from the child; :class:`BadValue` (the
    student's failure) for what the host would refuse, as :meth:`.proxy.Child.get` does."""
    blobs: list[bytes] = []
    handles = codec.HandleTable()
    encoded = codec.encode_for_host(value, blobs, handles)
    try:
        return decode_from_child(encoded, blobs,
                                 remote=lambda handle, _type: LoopbackFunction(handles.get(handle)))
    except wire.WireError as err:
        raise BadValue(str(err)) from None
