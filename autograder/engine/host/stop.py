"""What a pipeline step says about a submission: a :class:`Note` for the scores table,
or :class:`Stop` when it cannot be graded further (see :mod:`.pipeline`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Note", "Stop", "printable", "TIMEOUT"]

#: Characters of one note (a note may quote a file name or a value the student chose).
MAX_NOTE = 500

#: A note's kind when the notebook or one of its cells ran out of time (the class report
#: lists these submissions as timed out).
TIMEOUT = "timeout"


def printable(text: str, limit: int = MAX_NOTE) -> str:
    """``text`` cut to ``limit`` characters, with what UTF-8 cannot write (a lone
    surrogate from a file name of undecodable bytes) replaced, so every table and page
    that shows it can be written."""
    text = str(text)
    if len(text) > limit:
        text = text[:limit] + "…"
    return text.encode("utf-8", "replace").decode("utf-8")


@dataclass(frozen=True)
class Note:
    """A reason shown in the scores table, in Chinese and English; ``kind`` types the few
    that a report counts (:data:`TIMEOUT`), "" for the others."""

    zh: str
    en: str
    kind: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "zh", printable(self.zh))
        object.__setattr__(self, "en", printable(self.en))


class Stop(Exception):
    """The submission cannot be graded further; the note says why."""

    def __init__(self, zh: str, en: str) -> None:
        super().__init__(en)
        self.note = Note(zh, en)
