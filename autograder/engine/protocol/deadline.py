"""Time on the host's side of the boundary: the host's own alarm and the call deadline.

:func:`time_limit` interrupts host code (a check, the decoding of a reply) after a number
of seconds with :class:`TimeLimit`, a ``BaseException`` that code under the limit cannot
swallow. :func:`call_deadline` sets the moment by which every call of a student's
function in the child must answer (:func:`current_deadline` reads it; the host's proxy sends it
with each call). The checks use both through this module alone: they never see the
host's proxy or the sandbox.
"""

from __future__ import annotations

import contextlib
import contextvars
import signal
import threading
import time
from collections.abc import Iterator

__all__ = ["TimeLimit", "time_limit", "call_deadline", "current_deadline"]

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("deadline", default=None)


class TimeLimit(BaseException):
    """Raised inside :func:`time_limit` when the time is up.

    A ``BaseException``, like ``KeyboardInterrupt``: code under the limit that catches
    ``Exception`` (a student's function, a check) cannot swallow it.
    """


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block after ``seconds`` (main thread on Unix only; elsewhere no limit).

    Limits nest: an inner limit never outlives an outer one, and on leaving it the outer
    limit is re-armed with the time it had left.
    """
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable or seconds <= 0:
        yield
        return

    def on_alarm(signum: int, frame: object) -> None:
        raise TimeLimit()

    outer_left = signal.getitimer(signal.ITIMER_REAL)[0]
    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, min(seconds, outer_left) if outer_left else seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_left:
            left = outer_left - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3))


@contextlib.contextmanager
def call_deadline(when: float) -> Iterator[None]:
    """Calls of student functions inside the block must answer by ``when`` (monotonic)."""
    token = _deadline.set(when)
    try:
        yield
    finally:
        _deadline.reset(token)


def current_deadline() -> float | None:
    """The deadline :func:`call_deadline` set for this context, if any."""
    return _deadline.get()
