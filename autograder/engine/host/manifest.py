"""What grading needs to know of an assignment, shipped inside the package.

``autograder build`` writes ``autograder/manifests/<assignment>.json`` from the source
notebook and the gradebook rows ``nbgrader generate_assignment`` made for it;
``autograder build --check`` fails when a manifest is stale. Grading and
``autograder check`` then need only the installed package and a student's notebook,
never ``source/``. A manifest holds, per cell: its id and nbgrader metadata, the text
the student received, the text nbgrader keeps for it (hidden tests included, solutions
already replaced by stubs), the checks its hidden region calls and their titles. It
never holds a solution.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ...errors import CourseError, ManifestError
from ...settings import ASSIGNMENTS, PACKAGE_DIR
from .hidden import CheckCall, strip_region

__all__ = ["CellSpec", "Part", "Manifest", "MANIFEST_DIR", "FORMAT", "load", "parse",
           "manifest_path", "release_notebook", "detect_assignment"]

MANIFEST_DIR = PACKAGE_DIR / "manifests"
FORMAT = 2


@dataclass(frozen=True)
class CellSpec:
    """One cell of the released notebook, as the grader knows it."""

    index: int
    id: str | None
    cell_type: str
    metadata: dict
    release: str
    source: str
    checks: tuple[CheckCall, ...] = ()
    titles: tuple[str, ...] = ()

    @property
    def nbgrader(self) -> dict:
        return self.metadata.get("nbgrader", {})

    @property
    def grade_id(self) -> str | None:
        return self.nbgrader.get("grade_id")

    @property
    def points(self) -> float:
        return float(self.nbgrader.get("points", 0.0) or 0.0)

    @property
    def is_test(self) -> bool:
        """An autograder-tests cell: locked, graded, its hidden region run by the host."""
        return self.cell_type == "code" and bool(self.nbgrader.get("grade")) \
            and not self.nbgrader.get("solution")

    @property
    def is_manual(self) -> bool:
        """A manually graded answer (the written 'why')."""
        return bool(self.nbgrader.get("grade")) and self.cell_type == "markdown"

    @property
    def locked(self) -> bool:
        return bool(self.nbgrader.get("locked"))

    @property
    def part(self) -> str:
        """``core`` or the id of the 拓展 section the cell belongs to."""
        part = self.metadata.get("autograder", {}).get("part", "core")
        return part if isinstance(part, str) else "core"

    @property
    def is_practice(self) -> bool:
        """A test cell of a practice extension: its checks run and are reported, never scored."""
        return self.cell_type == "code" and bool(self.checks) and not self.nbgrader.get("grade")

    @property
    def practice_points(self) -> float:
        """What the cell would be worth were its extension graded."""
        return float(self.metadata.get("autograder", {}).get("points", 0.0) or 0.0)

    @property
    def visible(self) -> str:
        """What runs in the child: the cell without its hidden regions."""
        return strip_region(self.source)

    @property
    def title(self) -> str:
        if self.titles:
            return "；".join(self.titles)
        if self.is_manual:
            return f"文字回答（{self.grade_id}，人工评分）"
        return self.grade_id or ""


@dataclass(frozen=True)
class Part:
    """A 拓展 section of the release: id, Chinese title, estimated minutes."""

    id: str
    title: str
    minutes: int


@dataclass(frozen=True)
class Manifest:
    assignment: str
    cells: tuple[CellSpec, ...]
    gradebook: dict
    notebook_metadata: dict
    digest: str
    #: What the release does with its 拓展 sections (see :mod:`autograder.authoring.parts`).
    extensions: str = "graded"
    parts: tuple[Part, ...] = ()

    @property
    def practice(self) -> list[CellSpec]:
        return [c for c in self.cells if c.is_practice]

    @property
    def graded(self) -> list[CellSpec]:
        return [c for c in self.cells if c.nbgrader.get("grade")]

    @property
    def auto_max(self) -> float:
        return float(sum(c.points for c in self.graded if not c.is_manual))

    def by_grade_id(self, grade_id: str | None) -> CellSpec | None:
        return next((c for c in self.cells if grade_id and c.grade_id == grade_id), None)


def release_notebook(manifest: Manifest):
    """The notebook students received (nbgrader's release), rebuilt from the manifest."""
    import nbformat

    cells = []
    for spec in manifest.cells:
        make = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell,
                "raw": nbformat.v4.new_raw_cell}[spec.cell_type]
        cell = make(spec.release)
        cell.metadata = json.loads(json.dumps(spec.metadata))
        if spec.id:
            cell.id = spec.id
        cells.append(cell)
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = json.loads(json.dumps(manifest.notebook_metadata))
    return nb


def manifest_path(assignment: str, folder: Path = MANIFEST_DIR) -> Path:
    return folder / f"{assignment}.json"


def parse(data: dict) -> Manifest:
    if data.get("format") != FORMAT:
        raise ManifestError(f"manifest format {data.get('format')!r} is not {FORMAT}: "
                            "run `autograder build` with this version of the package")
    cells = tuple(CellSpec(c["index"], c.get("id"), c["cell_type"], c["metadata"], c["release"],
                           c["source"], tuple(CheckCall(k["name"], k["values"]) for k in c["checks"]),
                           tuple(c["titles"])) for c in data["cells"])
    parts = tuple(Part(p["id"], p["title"], int(p["minutes"])) for p in data["parts"])
    return Manifest(data["assignment"], cells, data["gradebook"], data["notebook_metadata"],
                    data["digest"], data["extensions"], parts)


@cache
def load(assignment: str, folder: Path = MANIFEST_DIR) -> Manifest:
    """The installed manifest of ``assignment``."""
    path = manifest_path(assignment, folder)
    try:
        return parse(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise ManifestError(f"no manifest for {assignment} at {path}: reinstall the package, "
                            "or run `autograder build` in the course repository") from None
    except (ValueError, KeyError) as err:
        raise ManifestError(f"manifest {path} is unreadable ({err}): run `autograder build`") from None


def assignment_named(path: Path) -> str | None:
    """The assignment the file name of ``path`` names (``q1_value_scaling.ipynb``,
    ``q1_value_scaling-alice.ipynb``, ``q1.ipynb``...), or None."""
    stem = path.stem
    for a in ASSIGNMENTS:
        if stem == a or stem.startswith(a):
            return a
    prefix = re.match(r"(q\d)", stem)
    if prefix:
        for a in ASSIGNMENTS:
            if a.startswith(prefix.group(1) + "_"):
                return a
    return None


def detect_assignment(path: Path, nb) -> str:
    """Which assignment the notebook at ``path`` is: from the file name
    (:func:`assignment_named`), else the notebook's metadata, else the grade ids its cells
    share with an installed manifest."""
    named = assignment_named(path)
    if named is not None:
        return named
    meta = nb.get("metadata", {}).get("autograder", {})
    source = str(meta.get("source", ""))
    for a in ASSIGNMENTS:
        if f"/{a}/" in source:
            return a
    ids = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id") for c in nb.cells} - {None}
    best, overlap = None, 0
    for a in ASSIGNMENTS:
        try:
            common = len(ids & {c.grade_id for c in load(a).cells})
        except ManifestError:
            continue
        if common > overlap:
            best, overlap = a, common
    if best is None:
        raise CourseError(f"cannot tell which assignment {path.name} is: name it "
                          "<assignment>.ipynb or pass --assignment")
    return best
