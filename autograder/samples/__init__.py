"""Sample students: submissions built from the source solution and named variants of it.

Each module ``qN`` lists ``ALTERNATIVES`` (other correct implementations, which must
score full marks) and ``MISTAKES`` (each one named misconception, which must lose
exactly the cells in ``Variant.loses`` and be named in the feedback), as
:class:`~.variants.Variant` edits of the source's solution; :mod:`.submission` applies
them to the release. The demo (:mod:`.demo`) and the end-to-end tests both build their
classes from these.

Imports: the bank (each variant names the misconception it stands for), the engine's
manifests and marker grammar, the authoring cells; the demo also grades through the
nbgrader integration. Nothing but the tests and the CLI imports this package.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from ..authoring import cells as nbs
from ..engine.host.manifest import load, release_notebook
from .submission import make_submission
from .variants import Variant

__all__ = ["PERFECT", "alternatives", "mistakes", "sample_class", "write_class",
           "expected_losses"]

#: The source notebook's own solution, unchanged.
PERFECT = Variant("perfect", "参考答案本身")


def _module(assignment: str):
    return importlib.import_module(f".{assignment.split('_')[0]}", __name__)


def alternatives(assignment: str) -> list[Variant]:
    return list(getattr(_module(assignment), "ALTERNATIVES", []))


def mistakes(assignment: str) -> list[Variant]:
    return list(getattr(_module(assignment), "MISTAKES", []))


def sample_class(assignment: str, *, with_alternatives: bool = True) -> dict[str, Variant | None]:
    """Student id -> variant (``None`` is the blank, unanswered submission)."""
    students: dict[str, Variant | None] = {"perfect": PERFECT, "blank": None}
    if with_alternatives:
        students.update({f"alt-{v.name}": v for v in alternatives(assignment)})
    students.update({f"mistake-{v.name}": v for v in mistakes(assignment)})
    return students


def write_class(course: Path, source_nb: Path, assignment: str,
                students: dict[str, Variant | None]) -> None:
    """Write each student's notebook into ``course/submitted/<student>/<assignment>/``,
    starting from the release the installed manifest describes."""
    source = nbs.read(source_nb)
    release = release_notebook(load(assignment))
    for student, variant in students.items():
        target = course / "submitted" / student / assignment / f"{assignment}.ipynb"
        nbs.write(make_submission(source, release, variant), target)


def expected_losses(variant: Variant | None, manifest) -> tuple[frozenset[str], frozenset[str]]:
    """What ``variant`` must lose under the release ``manifest`` describes: the scored
    cells that score less than full marks, and the practice cells (ungraded 拓展) whose
    checks fail. ``None`` (the blank submission) loses every one of both; a cell of an
    extension the release leaves out is lost nowhere."""
    scored = frozenset(c.grade_id for c in manifest.graded if not c.is_manual)
    practice = frozenset(c.grade_id for c in manifest.practice)
    if variant is None:
        return scored, practice
    return frozenset(variant.loses) & scored, frozenset(variant.loses) & practice
