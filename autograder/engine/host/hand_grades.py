"""The instructor's hand grading, read back from nbgrader's ``gradebook.db``.

formgrader keeps, per submission, a manual score on any grade cell (the written
answers, and an override of an automatic score) and a comment on any answer cell. The
feedback page shows both (:mod:`.feedback_page`); this module reads them through
nbgrader's own API and puts them on a :class:`~.job.Job` restored from the autograded
notebook (:mod:`.graded_record`). The comments are the instructor's, but the page
escapes them all the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .job import Job

__all__ = ["HandGrades", "read_hand_grades", "apply_hand_grades"]

#: Characters of one comment kept (formgrader's text box has no limit).
MAX_COMMENT = 20_000


@dataclass
class HandGrades:
    """One submission's hand grading: grade id -> score, answer cell -> comment."""

    scores: dict[str, float] = field(default_factory=dict)
    comments: dict[str, str] = field(default_factory=dict)


def _score(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def read_hand_grades(gb, *, student: str, assignment: str) -> HandGrades | None:
    """The hand grading of ``student``'s ``assignment`` in the open gradebook ``gb``
    (nbgrader's ``Gradebook``); ``None`` when the gradebook has no such submission."""
    from nbgrader.api import MissingEntry

    try:
        notebook = gb.find_submission_notebook(assignment, assignment, student)
    except MissingEntry:
        return None
    hand = HandGrades()
    for grade in notebook.grades:
        score = _score(grade.manual_score)
        if score is not None:
            hand.scores[grade.name] = score
    for comment in notebook.comments:
        text = comment.manual_comment
        if isinstance(text, str) and text.strip():
            hand.comments[comment.name] = text.strip()[:MAX_COMMENT]
    return hand


def apply_hand_grades(job: Job, hand: HandGrades) -> Job:
    """``job`` with the instructor's scores on its grade cells (as the gradebook holds
    them: the page's totals are formgrader's) and comments."""
    for gid, score in hand.scores.items():
        result = job.cells.get(gid)
        if result is not None:
            result.hand_score = score
    job.comments = dict(hand.comments)
    return job
