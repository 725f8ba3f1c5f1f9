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
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..notebooks import HIDDEN_BEGIN, HIDDEN_END, strip_region
from .hidden import CheckCall, check_calls

__all__ = ["CellSpec", "Part", "Manifest", "ManifestError", "MANIFEST_DIR", "build_manifest", "load",
           "manifest_path", "release_notebook"]

MANIFEST_DIR = Path(__file__).resolve().parent.parent / "manifests"
FORMAT = 2


class ManifestError(Exception):
    """A missing or unreadable manifest (the installed package is incomplete)."""


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
        return strip_region(self.source, HIDDEN_BEGIN, HIDDEN_END)

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
    #: What the release does with its 拓展 sections (see :mod:`autograder.parts`).
    extensions: str = "graded"
    parts: tuple[Part, ...] = ()

    @property
    def practice(self) -> list[CellSpec]:
        return [c for c in self.cells if c.is_practice]

    @property
    def graded(self) -> list[CellSpec]:
        return [c for c in self.cells if c.nbgrader.get("grade")]

    @property
    def tests(self) -> list[CellSpec]:
        return [c for c in self.cells if c.is_test]

    @property
    def auto_max(self) -> float:
        return float(sum(c.points for c in self.graded if not c.is_manual))

    def by_grade_id(self, grade_id: str | None) -> CellSpec | None:
        return next((c for c in self.cells if grade_id and c.grade_id == grade_id), None)


def build_manifest(*, assignment: str, source_nb, release_nb, gradebook_rows: dict,
                   digest: str, titles: dict[str, str], mode: str) -> dict:
    """The manifest (JSON-ready) of one assignment.

    ``release_nb`` is nbgrader's release; ``gradebook_rows`` the rows nbgrader saved
    (``source_cells`` by name give the kept text of every nbgrader cell); ``titles``
    maps check names to their Chinese titles; ``mode`` is the extension mode the release
    was made with.
    """
    from ..parts import sections

    kept = {row["name"]: row["source"] for row in gradebook_rows["source_cells"]}
    source_ids = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id"): c
                  for c in source_nb.cells}
    cells = []
    for index, cell in enumerate(release_nb.cells):
        meta = json.loads(json.dumps(dict(cell.get("metadata", {}))))
        gid = meta.get("nbgrader", {}).get("grade_id")
        source = kept.get(gid, cell.source) if gid else cell.source
        calls = check_calls(source_ids[gid].source) if gid in source_ids else []
        cells.append({"index": index, "id": cell.get("id"), "cell_type": cell.cell_type,
                      "metadata": meta, "release": cell.source, "source": source,
                      "checks": [c.as_dict() for c in calls],
                      "titles": [titles[c.name] for c in calls]})
    parts = [{"id": e.id, "title": e.title, "minutes": e.minutes}
             for e in sections(release_nb, f"release of {assignment}")]
    return {"format": FORMAT, "assignment": assignment, "digest": digest,
            "notebook_metadata": json.loads(json.dumps(dict(release_nb.metadata))),
            "gradebook": gradebook_rows, "cells": cells, "extensions": mode, "parts": parts}


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
