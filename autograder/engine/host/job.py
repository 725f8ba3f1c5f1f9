"""One submission and what the pipeline's steps learn about it (:class:`Job`), and the
record of each graded cell (:class:`CellResult`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from nbformat import NotebookNode

from ...settings import GradeSettings, Status
from .manifest import CellSpec, Manifest
from .memcg import MemoryPlan
from .stop import Note
from .zygote_link import ZygoteLink

__all__ = ["CellResult", "Job", "nbgrader_meta"]

log = logging.getLogger("autograder.engine")


@dataclass
class CellResult:
    """One graded cell: its :class:`~autograder.settings.Status` and the messages for it.

    ``part`` is ``core`` or the 拓展 section the cell belongs to; a ``practice`` cell (a
    test cell of an ungraded extension) is checked and reported, never scored.
    """

    grade_id: str
    title: str
    max_score: float
    manual: bool
    score: float | None = None
    status: Status = Status.NOT_RUN
    messages: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # grader tracebacks, instructor only
    part: str = "core"
    practice: bool = False
    #: (key, label) of each misconception the failed checks named, each once.
    misconceptions: list[tuple[str, str]] = field(default_factory=list)
    #: A written answer left blank (as released, or empty): 0 points, never "pending".
    blank: bool = False
    #: The instructor's score from ``gradebook.db`` (formgrader), once there is one.
    hand_score: float | None = None

    @property
    def points(self) -> float | None:
        """What the cell counts: the instructor's score if any, else the grader's."""
        return self.hand_score if self.hand_score is not None else self.score

    def add_misconceptions(self, found: tuple[tuple[str, str], ...]) -> None:
        self.misconceptions += [m for m in found if m not in self.misconceptions]


@dataclass
class Job:
    """One submission and everything the steps learn about it."""

    student: str
    assignment: str
    folder: Path
    manifest: Manifest
    settings: GradeSettings
    zygote: ZygoteLink | None = None
    memory: MemoryPlan | None = None  # the batch's memory bound (None: seccomp only)
    notebook_path: Path | None = None
    nb: NotebookNode | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)
    cells: dict[str, CellResult] = field(default_factory=dict)
    stopped: bool = False
    seconds: float = 0.0
    unanswered: set[str] = field(default_factory=set)
    timestamp: str | None = None  # from timestamp.txt, ISO, UTC
    review: list[str] = field(default_factory=list)
    memory_peak: int | None = None  # bytes, where a cgroup measured it
    protection: str = ""  # what walled the child off (protection.Verdict.marker)
    #: The verdict outputs the host added to the cells (by identity): pages show them as
    #: verdicts, never take an output the student's code produced for one.
    verdicts: set[int] = field(default_factory=set)

    def note(self, zh: str, en: str, kind: str = "") -> None:
        note = Note(zh, en, kind)
        self.notes.append(note)
        log.info("%s/%s: %s", self.student, self.assignment, note.en)

    #: Test cells of practice extensions: checked, reported, never scored.
    practice: dict[str, CellResult] = field(default_factory=dict)
    #: grade id -> the instructor's comment from ``gradebook.db`` (any answer cell).
    comments: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for spec in self.manifest.graded:
            self.cells[spec.grade_id] = CellResult(spec.grade_id, spec.title, spec.points,
                                                   spec.is_manual, part=spec.part)
        for spec in self.manifest.practice:
            self.practice[spec.grade_id] = CellResult(
                spec.grade_id, spec.title, spec.practice_points, False, part=spec.part,
                practice=True)

    def result_for(self, spec: CellSpec) -> CellResult:
        """The record a test cell's checks go to (scored or practice)."""
        return self.practice[spec.grade_id] if spec.is_practice else self.cells[spec.grade_id]


def nbgrader_meta(cell) -> dict:
    """A cell's nbgrader metadata ({} when it has none)."""
    return cell.get("metadata", {}).get("nbgrader", {}) or {}
