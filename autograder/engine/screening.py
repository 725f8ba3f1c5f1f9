"""A submission's own text, screened before anything of it runs, and scanned after.

Everything here reads what the student sent, so it is bounded and never raises on it
except :class:`.stop.Stop` (the submission cannot be graded; the note says why):

- :func:`read_notebook`: UTF-8, JSON no deeper than :data:`MAX_DEPTH`, at most
  :data:`MAX_CELLS` cells of at most :data:`MAX_SOURCE` characters each, then nbformat;
- :class:`CheckMetadata`: every field a student can edit has the type nbformat and
  nbgrader give it; a cell whose nbgrader metadata does not is stripped of it (the next
  step restores it from the release, as for metadata deleted by hand);
- :class:`ReadTimestamp`: nbgrader's ``timestamp.txt``, read as a date or ignored with a
  note; a time zone is a name or an offset, never a path (``dateutil`` opens a path);
- :class:`Review`: the review scan of the student's code (:mod:`autograder.integrity`),
  in the worker, so its cost is that submission's alone.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat

import nbformat
from nbformat import NotebookNode

from .stop import Stop

__all__ = ["read_notebook", "json_depth", "CheckMetadata", "ReadTimestamp", "Review",
           "parse_timestamp", "MAX_CELLS", "MAX_SOURCE", "MAX_DEPTH"]

#: Cells of one notebook; characters of one cell's source; nesting of its JSON.
MAX_CELLS, MAX_SOURCE, MAX_DEPTH = 2000, 1 << 20, 64
#: Bytes of ``timestamp.txt`` read.
MAX_TIMESTAMP = 256
#: The type of every nbgrader field (what nbgrader's own preprocessors write).
NBGRADER_FIELDS: dict[str, tuple[type, ...]] = {
    "grade": (bool,), "solution": (bool,), "locked": (bool,), "task": (bool,),
    "grade_id": (str,), "points": (int, float), "schema_version": (int,),
    "checksum": (str,), "cell_type": (str,)}
_INVALID = ("文件不是有效的 notebook（JSON 无法解析），无法评分", "not a valid notebook ({}), "
            "cannot be graded")


def _invalid(why: str) -> Stop:
    return Stop(_INVALID[0], _INVALID[1].format(why))


def json_depth(value: object) -> int:
    """How deeply ``value`` (parsed JSON) nests lists and objects, counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict)
                                                  else item))
    return deepest


def _source_length(source: object) -> int:
    if isinstance(source, str):
        return len(source)
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return sum(map(len, source))
    raise _invalid("cell source is not text")


def read_notebook(raw: bytes) -> NotebookNode:
    """The notebook in ``raw``, within the bounds above; :class:`Stop` otherwise."""
    try:
        text = raw.decode("utf-8")
        data = json.loads(text)
    except RecursionError:
        raise Stop(f"notebook 的 JSON 嵌套过深（超过 {MAX_DEPTH} 层），无法评分",
                   f"the notebook's JSON nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as err:  # UnicodeDecodeError and JSONDecodeError among them
        raise _invalid(type(err).__name__) from None
    if json_depth(data) > MAX_DEPTH:
        raise Stop(f"notebook 的 JSON 嵌套过深（超过 {MAX_DEPTH} 层），无法评分",
                   f"the notebook's JSON nests deeper than {MAX_DEPTH} levels")
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        raise _invalid("no list of cells")
    if len(cells) > MAX_CELLS:
        raise Stop(f"notebook 有 {len(cells)} 个单元格，超过上限 {MAX_CELLS}，无法评分",
                   f"the notebook has {len(cells)} cells, more than {MAX_CELLS}")
    for i, cell in enumerate(cells):
        if cell.get("cell_type") not in ("code", "markdown", "raw"):
            raise _invalid("unknown cell type")
        if _source_length(cell.get("source", "")) > MAX_SOURCE:
            raise Stop(f"第 {i + 1} 个单元格超过 {MAX_SOURCE >> 20} MB 字符，无法评分",
                       f"cell {i + 1} holds more than {MAX_SOURCE >> 20} M characters")
    try:
        return nbformat.reads(text, as_version=4)
    except Exception as err:  # nbformat raises several kinds for a broken file
        raise _invalid(type(err).__name__) from None


# ------------------------------------------------------------------ metadata


def _valid_nbgrader(meta: object) -> bool:
    if not isinstance(meta, dict):
        return False
    for key, types in NBGRADER_FIELDS.items():
        if key not in meta:
            continue
        value = meta[key]
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            return False
        if key == "points" and not (math.isfinite(value) and 0 <= value <= 1e6):
            return False
        if isinstance(value, str) and len(value) > 500:
            return False
    return True


class CheckMetadata:
    """Fields of the wrong type are dropped, so no later step meets them: a cell's
    metadata that is not an object, an nbgrader block with a field of the wrong type
    (restored from the release by the next step), a cell id that is not text, outputs
    that are not a list, an execution count that is not a number."""

    name = "check metadata"

    def __call__(self, job) -> None:
        nb, fixed = job.nb, []
        if not isinstance(nb.get("metadata"), dict):
            nb["metadata"] = NotebookNode()
        for i, cell in enumerate(nb.cells):
            bad = not isinstance(cell.get("metadata", {}), dict)
            if bad:
                cell["metadata"] = NotebookNode()
            elif "nbgrader" in cell.metadata and not _valid_nbgrader(cell.metadata.nbgrader):
                del cell.metadata["nbgrader"]
                bad = True
            if "id" in cell and not isinstance(cell["id"], str):
                del cell["id"]
            if cell.cell_type == "code":
                if not isinstance(cell.get("outputs", []), list):
                    cell["outputs"], bad = [], True
                count = cell.get("execution_count")
                if count is not None and (not isinstance(count, int) or isinstance(count, bool)):
                    cell["execution_count"] = None
            if bad:
                fixed.append(str(i + 1))
        if fixed:
            which = ", ".join(fixed[:8]) + ("…" if len(fixed) > 8 else "")
            job.note(f"第 {which} 个单元格的元数据类型不对，已删除（评分元数据按发放版恢复）",
                     f"metadata of the wrong type in cell(s) {which}: dropped (nbgrader's "
                     "restored from the release)")


# ------------------------------------------------------------------ timestamp

#: A time zone named as nbgrader writes one: a name (``UTC``, ``Asia/Shanghai``) or an offset.
_ZONE = re.compile(r"^(?:[A-Za-z]{1,10}(?:[/_+-][A-Za-z0-9]{1,20}){0,3}|[+-]?\d{1,5})$")


def parse_timestamp(text: str):
    """nbgrader's ``parse_utc`` (a naive UTC datetime), except that a time zone which is
    not a plain name or offset is refused (``ValueError``) instead of opened as a file."""
    import dateutil.parser
    import dateutil.tz

    parts = text.split(" ")
    if len(parts) == 3:
        zone = parts[2]
        if not _ZONE.match(zone) or ".." in zone:
            raise ValueError(f"time zone {zone!r} is not a name")
        tz = int(zone) if zone.lstrip("+-").isdigit() else dateutil.tz.gettz(zone)
        stamp = dateutil.parser.parse(" ".join(parts[:2] + ["TZ"]), tzinfos={"TZ": tz})
    else:
        stamp = dateutil.parser.parse(text)
    if stamp.tzinfo is not None:
        stamp = (stamp - stamp.utcoffset()).replace(tzinfo=None)
    return stamp


class ReadTimestamp:
    """nbgrader's ``timestamp.txt`` beside the notebook (no link, at most 256 bytes):
    kept as an ISO date for the gradebook, or ignored with a note."""

    name = "read timestamp"
    optional = True

    def __call__(self, job) -> None:
        try:
            fd = os.open(job.folder / "timestamp.txt", os.O_RDONLY | os.O_NOFOLLOW |
                         os.O_NONBLOCK)
        except OSError:
            return  # none (or a link, or not readable): nbgrader's own default applies
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or a device: never read
                return
            text = fh.read(MAX_TIMESTAMP).decode("utf-8", "replace").strip()
        if not text:
            return
        try:
            job.timestamp = parse_timestamp(text[:64]).isoformat()
        except (ValueError, OverflowError, TypeError, LookupError) as err:
            job.note("timestamp.txt 的内容不是日期，已忽略",
                     f"timestamp.txt is not a date ({type(err).__name__}): ignored")


# ------------------------------------------------------------------ review


class Review:
    """Code that tries to reach the grader, for the row's ``review`` column."""

    name = "review"
    optional = True

    def __call__(self, job) -> None:
        from ..integrity import scan_cells

        job.review = scan_cells(
            cell.source for cell in job.nb.cells if cell.cell_type == "code"
            and not (cell.get("metadata", {}).get("nbgrader", {}) or {}).get("locked"))
