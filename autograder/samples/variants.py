"""Sample-submission variants: what a bank module declares about its sample students.

Kept free of heavy imports: bank modules import it inside the student's kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Edit", "Variant"]


@dataclass(frozen=True)
class Edit:
    """Replace ``old`` (which must occur exactly once) by ``new`` in solution cell ``cell``."""

    cell: str
    old: str
    new: str


@dataclass(frozen=True)
class Variant:
    """A sample submission: the source's solution with ``edits`` applied.

    ``loses`` names the grade cells that must score less than full marks (empty for
    a correct alternative); ``feedback`` is text the feedback must contain (the
    misconception's Chinese label); ``visible`` says whether a visible assert sees it.
    """

    name: str
    description: str
    edits: tuple[Edit, ...] = ()
    loses: frozenset[str] = field(default_factory=frozenset)
    feedback: tuple[str, ...] = ()
    #: False for a mistake no visible assert may see without stating a graded answer
    #: (a hard-coded conclusion, a coincidence of the lecture's example): the student
    #: learns of it from the grade only.
    visible: bool = True

    @property
    def is_mistake(self) -> bool:
        return bool(self.loses)
