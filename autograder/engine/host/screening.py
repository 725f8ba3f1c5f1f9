"""A submission's own text, screened before anything of it runs, and scanned after.

Everything here reads what the student sent, so it is bounded and never raises on it
except :class:`.stop.Stop` (the submission cannot be graded; the note says why):

- :func:`read_notebook`: UTF-8, JSON no deeper than :data:`MAX_DEPTH`, at most
  :data:`MAX_CELLS` cells of at most :data:`MAX_SOURCE` characters each; then
  :func:`fix_types`: every field a student can edit gets the type nbformat and nbgrader
  give it, before nbformat reads it (a cell's metadata that is a list makes nbformat
  raise): a field of the wrong type is dropped, and a cell whose nbgrader metadata has
  one loses it (restored from the release by the next step, as for metadata deleted by
  hand);
- :class:`ReadTimestamp`: nbgrader's ``timestamp.txt``, read as a date or ignored with a
  note; a time zone is a name or an offset, never a path (``dateutil`` opens a path);
- :class:`Review`: the review scan of the student's code (:mod:`autograder.engine.host.integrity`),
  in the worker, so its cost is that submission's alone.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import stat
import warnings

import nbformat
import nbformat.reader
from nbformat import NotebookNode

from .stop import Stop

log = logging.getLogger("autograder.engine")

__all__ = ["read_notebook", "json_depth", "fix_types", "ReadTimestamp", "Review",
           "fixed_note", "parse_timestamp", "MAX_CELLS", "MAX_SOURCE", "MAX_DEPTH"]

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


#: A JSON escape of a UTF-16 surrogate (a lone one decodes to text UTF-8 cannot write).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _replace_surrogates(value: object) -> object:
    """``value`` with every lone surrogate in its strings (and keys) replaced by U+FFFD."""
    def fix(text: str) -> str:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")

    if isinstance(value, str):
        return fix(value)
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {fix(k): _replace_surrogates(v) for k, v in value.items()}
    return value


def read_notebook(raw: bytes, *, max_cells: int = MAX_CELLS
                  ) -> tuple[NotebookNode, list[tuple[str, str]]]:
    """The notebook in ``raw``, within the bounds above, and the notes on what was
    repaired (fields of the wrong type, invalid Unicode); :class:`Stop` when it cannot
    be read. ``max_cells``: more, for a notebook grading wrote (deleted test cells put
    back, see :func:`.graded_record.read_back`)."""
    try:
        text = raw.decode("utf-8")
        data = json.loads(text)
    except RecursionError:
        raise Stop(f"notebook 的 JSON 嵌套过深（超过 {MAX_DEPTH} 层），无法评分",
                   f"the notebook's JSON nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as err:  # UnicodeDecodeError and JSONDecodeError among them
        raise _invalid(type(err).__name__) from None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        raise _invalid("no list of cells")
    if len(cells) > max_cells:
        raise Stop(f"notebook 有 {len(cells)} 个单元格，超过上限 {max_cells}，无法评分",
                   f"the notebook has {len(cells)} cells, more than {max_cells}")
    if json_depth(data) > MAX_DEPTH:
        raise Stop(f"notebook 的 JSON 嵌套过深（超过 {MAX_DEPTH} 层），无法评分",
                   f"the notebook's JSON nests deeper than {MAX_DEPTH} levels")
    notes = []
    if _SURROGATE_ESCAPE.search(text):  # rare: only then is every string walked (depth <= 64)
        repaired = _replace_surrogates(data)
        if repaired != data:
            data, cells = repaired, repaired["cells"]
            notes.append(("notebook 中有无效的 Unicode 字符（孤立的代理项），已替换为 �",
                          "invalid Unicode in the notebook (lone surrogates), replaced by U+FFFD"))
    for i, cell in enumerate(cells):
        if cell.get("cell_type") not in ("code", "markdown", "raw"):
            raise _invalid("unknown cell type")
        if _source_length(cell.get("source", "")) > MAX_SOURCE:
            raise Stop(f"第 {i + 1} 个单元格超过 {MAX_SOURCE:,} 个字符，无法评分",
                       f"cell {i + 1} holds more than {MAX_SOURCE:,} characters")
    fixed = fix_types(data)
    if fixed:
        notes.append(fixed_note(fixed))
    try:  # nbformat.reads, from the parsed and fixed JSON
        major, minor = nbformat.reader.get_version(data)
        nb = nbformat.convert(nbformat.versions[major].to_notebook_json(data, minor=minor), 4)
    except Exception as err:  # nbformat raises several kinds for a broken file
        raise _invalid(type(err).__name__) from None
    try:
        with warnings.catch_warnings():  # nbformat's own "missing id" notice: ids come later
            warnings.simplefilter("ignore")
            nbformat.validate(nb)
    except nbformat.ValidationError as err:  # as nbformat.reads: logged, not fatal
        log.info("the notebook's JSON is not valid nbformat: %s", str(err)[:300])
    return nb, notes


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


def fix_types(data: dict) -> list[int]:
    """Drop every field of ``data`` (a parsed notebook) whose type nbformat or nbgrader
    would trip on: metadata that is not an object, an nbgrader block with a field of
    the wrong type, a cell id that is not text, outputs that are not a list, an
    execution count that is not a number. Returns the cells changed (from 1)."""
    if not isinstance(data.get("metadata", {}), dict):
        data["metadata"] = {}
    fixed = []
    for i, cell in enumerate(data["cells"]):
        bad = False
        if not isinstance(cell.get("metadata", {}), dict):
            cell["metadata"], bad = {}, True
        elif "nbgrader" in cell.get("metadata", {}) and \
                not _valid_nbgrader(cell["metadata"]["nbgrader"]):
            del cell["metadata"]["nbgrader"]
            bad = True
        if "id" in cell and not isinstance(cell["id"], str):
            del cell["id"]
        if not isinstance(cell.get("attachments", {}), dict):
            del cell["attachments"]
        tags = cell["metadata"].get("tags", [])
        if not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
            del cell["metadata"]["tags"]
            bad = True
        if cell["cell_type"] == "code":
            if not isinstance(cell.get("outputs", []), list):
                cell["outputs"], bad = [], True
            count = cell.get("execution_count")
            if count is not None and (not isinstance(count, int) or isinstance(count, bool)):
                cell["execution_count"] = None
        if bad:
            fixed.append(i + 1)
    return fixed


def fixed_note(fixed: list[int]) -> tuple[str, str]:
    """The row's note for the cells :func:`fix_types` changed."""
    which = ", ".join(map(str, fixed[:8])) + ("…" if len(fixed) > 8 else "")
    return (f"第 {which} 个单元格的元数据类型不对，已删除（评分元数据按发放版恢复）",
            f"metadata of the wrong type in cell(s) {which}: dropped (nbgrader's restored "
            "from the release)")


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
            # getattr: Windows has neither flag (a student's own check runs there)
            fd = os.open(job.folder / "timestamp.txt", os.O_RDONLY
                         | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
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
        from .integrity import scan_cells

        job.review = scan_cells(
            cell.source for cell in job.nb.cells if cell.cell_type == "code"
            and not (cell.get("metadata", {}).get("nbgrader", {}) or {}).get("locked"))
