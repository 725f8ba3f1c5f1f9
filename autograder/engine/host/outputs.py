"""Cell outputs: the child's, validated into nbformat outputs, and the grader's verdicts.

The child's outputs are the student's data: every output is rebuilt from the fields
nbformat allows, with types checked, and keeps only what no browser runs as code
(:data:`SAFE_MIME`): text, PNG/JPEG pictures (valid base64 of a real PNG/JPEG, bounded
size), and LaTeX/Markdown, which every page renders escaped or sanitised. HTML,
JavaScript, SVG, widget views and any other type are dropped. :class:`OutputBudget`
bounds what one notebook keeps in all its cells together. Scores and the feedback's
verdicts come from the host's own records, never from reading outputs back, so an output
the student forges cannot pose as a verdict.
"""

from __future__ import annotations

import base64
import binascii
import json

import nbformat
from nbformat import NotebookNode

__all__ = ["clean_outputs", "verdict_output", "safe_bundle", "OutputBudget", "output_size",
           "SAFE_MIME", "MAX_IMAGE", "budget_notice"]

_KINDS = {"stream", "display_data", "execute_result", "error"}
#: The only MIME types kept from student code (the rest can run script in a browser).
SAFE_MIME = ("text/plain", "image/png", "image/jpeg", "text/latex", "text/markdown")
#: Largest picture kept (characters of base64), and largest text of one MIME type.
MAX_IMAGE = 8 << 20
MAX_TEXT = 2_000_000
_MAGIC = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff"}


def _text(value: object, limit: int) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _picture(mime: str, value: str) -> str | None:
    """``value`` if it is base64 of a real ``mime`` picture within :data:`MAX_IMAGE`."""
    value = "".join(value.split())  # nbformat may wrap base64 over lines
    if len(value) > MAX_IMAGE:
        return None
    try:
        head = base64.b64decode(value[:64], validate=True)
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return value if head.startswith(_MAGIC[mime]) else None


def safe_bundle(data: object) -> dict[str, str]:
    """A MIME bundle with only the :data:`SAFE_MIME` types, each checked."""
    if not isinstance(data, dict):
        return {}
    clean = {}
    for mime in SAFE_MIME:
        value = data.get(mime)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = "".join(value)  # nbformat's multiline strings, in a notebook file
        if not isinstance(value, str):
            continue
        if mime in _MAGIC:
            value = _picture(mime, value)
        elif len(value) > MAX_TEXT:
            value = value[:MAX_TEXT]
        if value is not None:
            clean[mime] = value
    return clean


def _one(raw: object) -> NotebookNode | None:
    if not isinstance(raw, dict) or raw.get("output_type") not in _KINDS:
        return None
    kind = raw["output_type"]
    if kind == "stream":
        name = raw.get("name") if raw.get("name") in ("stdout", "stderr") else "stdout"
        return nbformat.v4.new_output("stream", name=name, text=_text(raw.get("text"), MAX_TEXT))
    if kind == "error":
        trace = raw.get("traceback") if isinstance(raw.get("traceback"), list) else []
        return nbformat.v4.new_output("error", ename=_text(raw.get("ename"), 200) or "Error",
                                      evalue=_text(raw.get("evalue"), 10_000),
                                      traceback=[_text(t, 20_000) for t in trace[:200]])
    data = safe_bundle(raw.get("data"))
    if not data:
        return None
    out = nbformat.v4.new_output(kind, data=data)
    if kind == "execute_result":
        count = raw.get("execution_count")
        out.execution_count = count if isinstance(count, int) and not isinstance(count, bool) else None
    return out


def clean_outputs(raw: object) -> list[NotebookNode]:
    """The child's outputs of one cell, as valid nbformat outputs of safe types only
    (anything else dropped)."""
    if not isinstance(raw, list):
        return []
    return [out for out in (_one(item) for item in raw[:1000]) if out is not None]


def output_size(out: dict) -> int:
    """Bytes ``out`` takes in a notebook file (its UTF-8 JSON)."""
    return len(json.dumps(out, ensure_ascii=False).encode("utf-8"))


def budget_notice(total: int) -> NotebookNode:
    return nbformat.v4.new_output(
        "stream", name="stderr",
        text=f"…（本 notebook 的输出超过 {total / (1 << 20):g} MB 的上限，此后的输出已省略）\n")


class OutputBudget:
    """Bytes of output one notebook keeps, across all its cells (the host's own count).

    Outputs are kept in order while they fit; the first that does not is replaced by one
    short notice, and every later output of the notebook is dropped.
    """

    def __init__(self, total: int) -> None:
        self.total, self.used, self.exhausted = total, 0, False

    @property
    def left(self) -> int:
        return 0 if self.exhausted else max(0, self.total - self.used)

    def take(self, outputs: list[NotebookNode], *, cut: bool = False) -> list[NotebookNode]:
        """What of ``outputs`` (one cell's) the notebook keeps; ``cut``: the child says
        it left some out to stay within :attr:`left`, so the budget is spent."""
        kept = []
        for out in outputs:
            size = output_size(out)
            if self.exhausted or size > self.left:
                cut = True
                break
            self.used += size
            kept.append(out)
        if cut and not self.exhausted:
            self.exhausted = True
            kept.append(budget_notice(self.total))
        return kept


def verdict_output(ename: str, message: str, kind: str) -> NotebookNode:
    """The grader's verdict on a test cell, as an error output nbgrader scores as 0.

    The traceback is the message itself (red title), as ``CheckFailed`` renders in a
    kernel: never the grader's frames or inputs.
    """
    lines = message.splitlines() or [""]
    colour = "0;31" if kind == "failed" else "0;33"
    label = "未通过" if kind == "failed" else "评分程序错误"
    traceback = [f"\x1b[{colour}m{label}\x1b[0m: {lines[0]}", *lines[1:]]
    return nbformat.v4.new_output("error", ename=ename, evalue=message, traceback=traceback)
