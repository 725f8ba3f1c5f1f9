"""How long a notebook's core takes a typical student: a model, calibrated, not measured.

Nobody has timed students on these notebooks. What exists are reviewers' estimates
(issue 30, read at commit 4b35bef with a stopwatch, counting the reading): a range of
minutes per core. Those estimates are, within 4 minutes each, proportional to one count:
the characters of Markdown a student reads in the core of the release (the tasks, hints
and written prompts; not the generated header, not the answer stubs). The count carries
the rest with it, because in these notebooks every task is introduced by prose.

So the model is one rate, :data:`CHARS_PER_MINUTE`, fitted by least squares through
the origin to the reviewers' midpoints (:data:`CALIBRATION`), and a core's estimate is
its prose count over that rate. ``tests/test_timing.py`` refits it, checks the fit, and
holds each core to 40 minutes and the five to 3 hours; the notebooks' time tables are
held to the same estimate. What it cannot see (a hard idea in few words) is why the
reviewers' ranges are wide; it is a yardstick for cuts, not a measurement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nbformat import NotebookNode

from ..settings import SELF_CHECK_ID
from .cells import grade_id
from .parts import CORE, part_of

__all__ = ["CALIBRATION", "CHARS_PER_MINUTE", "Section", "core_sections", "core_minutes",
           "prose_chars", "fitted_rate"]

#: Reviewers' estimates at commit 4b35bef: (core prose characters then, low, high minutes).
CALIBRATION: dict[str, tuple[int, int, int]] = {
    "q1_value_scaling": (5504, 55, 70),
    "q2_dk_growth": (5265, 55, 65),
    "q3_permutation": (4703, 45, 60),
    "q4_single_token": (4051, 45, 55),
    "q5_cost_scaling": (3282, 30, 40),
}
#: Characters of core prose per minute of a typical student's whole work on them.
CHARS_PER_MINUTE = 88
_HEADER = "generated-header"
_SECTION = re.compile(r"^## (\d+)\.", re.M)


@dataclass(frozen=True)
class Section:
    """One numbered section of a core (``0`` is the introduction before ``## 1.``)."""

    number: int
    chars: int

    @property
    def minutes(self) -> float:
        return self.chars / CHARS_PER_MINUTE


def fitted_rate() -> float:
    """The least-squares rate through the origin over the reviewers' midpoints."""
    pairs = [(chars, (low + high) / 2) for chars, low, high in CALIBRATION.values()]
    return sum(c * c for c, _ in pairs) / sum(c * m for c, m in pairs)


def _read(cell: NotebookNode) -> bool:
    """A cell whose text the student reads as prose in the core."""
    if cell.cell_type != "markdown" or part_of(cell) != CORE:
        return False
    if cell.get("id") == _HEADER or grade_id(cell) == SELF_CHECK_ID:
        return False
    return not cell.get("metadata", {}).get("nbgrader", {}).get("grade")  # an answer stub


def core_sections(release: NotebookNode) -> list[Section]:
    """The core's sections in order, each with the prose characters a student reads."""
    counts: dict[int, int] = {0: 0}
    current = 0
    for cell in release.cells:
        if not _read(cell):
            continue
        heading = _SECTION.search(cell.source)
        if heading:
            current = int(heading[1])
            counts.setdefault(current, 0)
        counts[current] += len(cell.source)
    return [Section(n, c) for n, c in counts.items()]


def prose_chars(release: NotebookNode) -> int:
    return sum(s.chars for s in core_sections(release))


def core_minutes(release: NotebookNode) -> float:
    """The model's estimate of the core, in minutes."""
    return prose_chars(release) / CHARS_PER_MINUTE
