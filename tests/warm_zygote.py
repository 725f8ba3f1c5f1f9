"""One warm zygote per test process for the batch fixtures that ask for it.

``grade()`` starts a zygote for each batch and stops it at the end: 2 s of one core
before the first child runs (Python, NumPy, SymPy, matplotlib and their warm-up), paid by
every module that grades a class. Inside :func:`shared`, ``grade()`` gets a link to a
zygote kept running between batches instead (one per isolation setting, started by the
first batch that needs it); everything else of the batch is its own, as in production:
its workers, their links and children, its cgroups and its log. Tests of the zygote's own
start (its log line, a zygote that cannot start, the protection it reports) stay outside
:func:`shared` and start their own. :func:`close_all` ends them (``conftest.py``, at the
session's end).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from autograder.engine.host import zygote_link

_REAL = zygote_link.Zygote
_RUNNING: dict[tuple, zygote_link.Zygote] = {}


class _Shared:
    """What ``pool.grade_tasks`` asks of its zygote: ``link()`` and ``close()``."""

    def __init__(self, **options) -> None:
        key = tuple(sorted(options.items()))
        zygote = _RUNNING.get(key)
        if zygote is None or zygote.proc.poll() is not None:  # none yet, or it died
            zygote = _RUNNING[key] = _REAL(**options)
        self._zygote = zygote

    def link(self, *, ahead: bool = False) -> zygote_link.ZygoteLink:
        return self._zygote.link(ahead=ahead)

    def close(self) -> None:
        """The batch is over; the zygote goes on for the next one."""


@contextlib.contextmanager
def shared() -> Iterator[None]:
    """``grade()`` calls inside use the test process's warm zygote."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(zygote_link, "Zygote", _Shared)
        yield


def close_all() -> None:
    while _RUNNING:
        _RUNNING.popitem()[1].close()
