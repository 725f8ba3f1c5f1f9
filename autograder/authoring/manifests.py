"""The manifests: what grading needs of each assignment, written by ``autograder build``.

A manifest (``autograder/manifests/<a>.json``, read by :mod:`autograder.engine.host.manifest`)
holds, per cell of the release: its id and nbgrader metadata, the text the student
received, the text nbgrader keeps for it (hidden tests included, solutions already
replaced by stubs), the checks its hidden region calls and their titles; and the rows
``nbgrader generate_assignment`` saved in its gradebook. It never holds a solution.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from nbformat import NotebookNode

from ..bank import get_check
from ..bank.answers import answers_for
from ..engine.host.hidden import check_calls
from ..engine.host.manifest import FORMAT
from ..errors import CourseError, HiddenTestError
from .cells import grade_id
from .parts import sections

__all__ = ["build_manifest", "manifest_text", "gradebook_rows", "normalise"]


def build_manifest(*, assignment: str, source_nb, release_nb, gradebook_rows: dict,
                   digest: str, titles: dict[str, str], mode: str) -> dict:
    """The manifest (JSON-ready) of one assignment.

    ``release_nb`` is nbgrader's release; ``gradebook_rows`` the rows nbgrader saved
    (``source_cells`` by name give the kept text of every nbgrader cell); ``titles``
    maps check names to their Chinese titles; ``mode`` is the extension mode the release
    was made with.
    """
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
            "gradebook": gradebook_rows, "cells": cells, "extensions": mode, "parts": parts,
            "answers": answers_for(assignment)}  # what no visible text may state before it is asked


def gradebook_rows(course: Path, assignment: str) -> dict:
    """The cells nbgrader saved for ``assignment`` (what autograde overwrites and scores)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        nb = gb.find_notebook(assignment, assignment)
        return {
            "grade_cells": [{"name": c.name, "max_score": float(c.max_score),
                             "cell_type": c.cell_type} for c in nb.grade_cells],
            "solution_cells": [{"name": c.name} for c in nb.solution_cells],
            "task_cells": [{"name": c.name, "max_score": float(c.max_score),
                            "cell_type": c.cell_type} for c in nb.task_cells],
            "source_cells": [{"name": c.name, "cell_type": c.cell_type, "locked": bool(c.locked),
                              "source": c.source, "checksum": c.checksum}
                             for c in nb.source_cells],
        }


def manifest_text(assignment: str, source_nb: NotebookNode, release_nb: NotebookNode,
                  course: Path, *, mode: str) -> str:
    """The JSON manifest of one assignment (its markers checked by :func:`.build.check_source`)."""
    titles = {}
    for cell in source_nb.cells:
        try:
            calls = check_calls(cell.source) if cell.cell_type == "code" else []
        except HiddenTestError as err:
            raise CourseError(f"{assignment}, cell {grade_id(cell)}: {err}; a hidden region "
                              "may only call run_check(name, keyword=variable)") from None
        for call in calls:
            try:
                titles[call.name] = get_check(call.name).title
            except KeyError:
                raise CourseError(f"{assignment}, cell {grade_id(cell)}: unknown check "
                                  f"{call.name!r}; register it in autograder/bank") from None
    digest = hashlib.sha256(json.dumps(normalise(source_nb), ensure_ascii=False)
                            .encode()).hexdigest()
    data = build_manifest(assignment=assignment, source_nb=source_nb, release_nb=release_nb,
                          gradebook_rows=gradebook_rows(course, assignment), digest=digest,
                          titles=titles, mode=mode)
    return json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


_VOLATILE_NBGRADER = ("checksum", "cell_type")


def normalise(nb: NotebookNode | dict) -> list:
    """What ``--check`` compares: cell types, sources, nbgrader metadata and tags per cell
    (tags decide behaviour: ``raises-exception`` lets Run All go on in exercises/).

    Cell ids, outputs, execution counts and other metadata are volatile and ignored.
    """
    cells = []
    for cell in nb.get("cells", []):
        meta = dict(cell.get("metadata", {}).get("nbgrader", {}) or {})
        for key in _VOLATILE_NBGRADER:
            meta.pop(key, None)
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(source)
        tags = sorted(cell.get("metadata", {}).get("tags", []) or [])
        cells.append([cell.get("cell_type"), source, meta, tags])
    return cells
