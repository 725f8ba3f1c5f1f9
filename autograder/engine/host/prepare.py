"""The pipeline's first steps: the submission's notebook found, read and put back in shape.

Each step takes the :class:`~.job.Job` and either changes it or raises
:class:`~.stop.Stop` with the reason the submission cannot be graded further; see
:mod:`.pipeline` for the order.
"""

from __future__ import annotations

import copy
import logging
import os
import uuid

import nbformat
from nbformat import NotebookNode

from ...settings import MAX_DATA_BYTES, MAX_DATA_FILES, MAX_NOTEBOOK_BYTES
from .files import find_notebooks, read_at_most
from .job import Job
from .job import nbgrader_meta as _meta
from .manifest import CellSpec
from .screening import read_notebook
from .stop import Stop

__all__ = ["FindNotebook", "ReadNotebook", "RestoreMetadata", "PutBackTests", "OverwriteLocked",
           "ClearSubmittedOutputs", "CollectFiles", "KEPT_METADATA"]

log = logging.getLogger("autograder.engine")


class FindNotebook:
    name = "find notebook"

    def __call__(self, job: Job) -> None:
        a = job.assignment
        expected = job.folder / f"{a}.ipynb"
        found = find_notebooks(job.folder)
        if expected in found:
            job.notebook_path = expected
        elif len(found) == 1:
            job.notebook_path = found[0]
            job.note(f"文件名应为 {a}.ipynb，实际为 {found[0].name}，已按此文件评分",
                     f"notebook should be named {a}.ipynb, graded {found[0].name} instead")
        else:
            names = ", ".join(p.name for p in found) or "none"
            raise Stop(f"没有找到 {a}.ipynb（文件夹中的 notebook：{names}）",
                       f"no {a}.ipynb in the submission (notebooks found: {names})")


class ReadNotebook:
    name = "read notebook"

    def __call__(self, job: Job) -> None:
        path = job.notebook_path
        try:
            raw = read_at_most(path, MAX_NOTEBOOK_BYTES)
        except OSError as err:
            raise Stop("无法读取 notebook 文件", f"cannot read the notebook ({err})") from None
        if len(raw) > MAX_NOTEBOOK_BYTES:
            raise Stop(f"notebook 超过 {MAX_NOTEBOOK_BYTES >> 20} MB，无法评分",
                       f"the notebook exceeds {MAX_NOTEBOOK_BYTES >> 20} MB")
        job.nb, notes = read_notebook(raw)
        for zh, en in notes:
            job.note(zh, en)


class RestoreMetadata:
    """Cells whose nbgrader metadata was stripped or changed get it back."""

    name = "restore metadata"

    def __call__(self, job: Job) -> None:
        ref = [s for s in job.manifest.cells if s.grade_id]
        by_id = {s.id: s for s in ref if s.id}
        by_text: dict[str, CellSpec] = {}
        for s in ref:
            if s.locked:
                by_text.setdefault(s.release, s)
        known = {s.grade_id: s for s in ref}
        restored, seen = [], set()
        for cell in job.nb.cells:
            gid = _meta(cell).get("grade_id")
            if gid in known and gid not in seen and cell.cell_type == known[gid].cell_type:
                seen.add(gid)
                continue
            match = by_id.get(cell.get("id")) or by_text.get(cell.get("source"))
            if match and match.grade_id not in seen and match.cell_type == cell.cell_type:
                cell.setdefault("metadata", {})["nbgrader"] = copy.deepcopy(match.nbgrader)
                seen.add(match.grade_id)
                restored.append(match.grade_id)
            elif "nbgrader" in cell.get("metadata", {}):
                del cell.metadata["nbgrader"]
        if restored:
            which = ", ".join(restored) if len(restored) <= 4 else f"{len(restored)} cells"
            job.note(f"nbgrader 元数据被删除或改动，已按发放版恢复（{which}）",
                     f"nbgrader metadata stripped or changed, restored ({which})")


class PutBackTests:
    """Deleted test cells come back after the nearest preceding nbgrader cell."""

    name = "put back tests"

    def __call__(self, job: Job) -> None:
        inserted, last = [], -1
        for spec in job.manifest.cells:
            if not spec.grade_id:
                continue
            where = next((i for i, c in enumerate(job.nb.cells)
                          if _meta(c).get("grade_id") == spec.grade_id), None)
            if where is None and spec.is_test:
                cell = nbformat.v4.new_code_cell(spec.release)
                cell.metadata = copy.deepcopy(spec.metadata)
                job.nb.cells.insert(last + 1, cell)
                inserted.append(spec.grade_id)
                where = last + 1
            if where is not None:
                last = max(last, where)
        if inserted:
            job.note(f"测试单元格被删除，已由评分程序放回：{', '.join(inserted)}",
                     f"test cells deleted, put back by the grader: {', '.join(inserted)}")


class OverwriteLocked:
    """Locked cells get the manifest's text and metadata; every cell gets a unique id."""

    name = "overwrite locked cells"

    def __call__(self, job: Job) -> None:
        seen_ids: set[str] = set()
        for cell in job.nb.cells:
            spec = job.manifest.by_grade_id(_meta(cell).get("grade_id"))
            if spec is not None:
                cell.metadata["nbgrader"] = copy.deepcopy(spec.nbgrader)
                if spec.locked:
                    cell.source = spec.source
            if cell.cell_type == "code":
                cell.setdefault("outputs", [])
                cell.setdefault("execution_count", None)
            cid = cell.get("id")
            if not isinstance(cid, str) or cid in seen_ids or not cid:
                cid = uuid.uuid4().hex[:8]
                cell["id"] = cid
            seen_ids.add(cid)
        job.nb.nbformat, job.nb.nbformat_minor = 4, max(job.nb.get("nbformat_minor", 5), 5)


class ClearSubmittedOutputs:
    """Nothing the submission brought with it is shown as if it had run: outputs and
    execution counts go (only the child's, from this run, come back), and so do
    attachments and cell metadata other than :data:`KEPT_METADATA` (HTML renderers read
    some of it; none of it is the student's answer). Notebook metadata keeps only the
    kernel, the language and the build's own note (a ``widgets`` entry, for one, makes
    nbconvert load widget scripts)."""

    name = "clear submitted outputs"

    def __call__(self, job: Job) -> None:
        cleared = 0
        for cell in job.nb.cells:
            if cell.cell_type == "code":
                cleared += bool(cell.get("outputs")) or cell.get("execution_count") is not None
                cell.outputs, cell.execution_count = [], None
            cell.pop("attachments", None)
            meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
            cell["metadata"] = NotebookNode({k: v for k, v in meta.items()
                                             if k in KEPT_METADATA and _plain(k, v)})
        job.nb.metadata = NotebookNode({k: v for k, v in job.nb.get("metadata", {}).items()
                                        if k in ("kernelspec", "language_info", "autograder")})
        if cleared:
            log.info("%s/%s: %d code cells came with outputs; cleared", job.student,
                     job.assignment, cleared)


#: Cell metadata kept from a submission (nbgrader's, checked by the steps before).
KEPT_METADATA = ("nbgrader", "deletable", "editable")


def _plain(key: str, value: object) -> bool:
    return key == "nbgrader" or isinstance(value, bool)


def _utf8(name: str) -> bool:
    """Whether ``name`` (as the OS gave it: undecodable bytes as surrogates) is UTF-8."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class CollectFiles:
    """Data files next to the notebook, which the student's code may read."""

    name = "collect files"

    def __call__(self, job: Job) -> None:
        total = 0
        for path in sorted(job.folder.rglob("*")):
            rel = path.relative_to(job.folder)
            if path.is_symlink() or not path.is_file() or path.suffix == ".ipynb" \
                    or any(part.startswith(".") for part in rel.parts):
                continue
            if not _utf8(str(rel)):  # the wire's JSON header cannot carry it
                shown = os.fsencode(rel).decode("utf-8", "replace")
                job.note(f"数据文件名不是有效的 UTF-8，未随 notebook 一起运行：{shown}",
                         f"a data file name is not valid UTF-8, left out: {shown}")
                continue
            total += path.stat().st_size
            if len(job.files) >= MAX_DATA_FILES or total > MAX_DATA_BYTES:
                job.note("数据文件过多或过大，超出部分未随 notebook 一起运行",
                         "too many or too large data files; the rest were left out")
                return
            job.files[str(rel)] = path.read_bytes()
