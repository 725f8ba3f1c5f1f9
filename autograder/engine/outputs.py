"""Cell outputs: the child's, validated into nbformat outputs, and the grader's verdicts.

The child's outputs are the student's data: every output is rebuilt from the fields
nbformat allows, with types checked. Scores and the feedback's verdicts come from the
host's own records, never from reading outputs back, so an output the student forges
cannot pose as a verdict.
"""

from __future__ import annotations

import base64
import binascii

import nbformat
from nbformat import NotebookNode

__all__ = ["clean_outputs", "verdict_output"]

_KINDS = {"stream", "display_data", "execute_result", "error"}


def _text(value: object, limit: int) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _bundle(data: object) -> dict[str, str]:
    if not isinstance(data, dict):
        return {}
    clean = {}
    for mime, value in data.items():
        if not isinstance(mime, str) or not isinstance(value, str) or len(mime) > 100:
            continue
        if mime.startswith("image/") and mime != "image/svg+xml":
            try:
                base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                continue
        clean[mime] = value
    return clean


def _one(raw: object) -> NotebookNode | None:
    if not isinstance(raw, dict) or raw.get("output_type") not in _KINDS:
        return None
    kind = raw["output_type"]
    if kind == "stream":
        name = raw.get("name") if raw.get("name") in ("stdout", "stderr") else "stdout"
        return nbformat.v4.new_output("stream", name=name, text=_text(raw.get("text"), 2_000_000))
    if kind == "error":
        trace = raw.get("traceback") if isinstance(raw.get("traceback"), list) else []
        return nbformat.v4.new_output("error", ename=_text(raw.get("ename"), 200) or "Error",
                                      evalue=_text(raw.get("evalue"), 10_000),
                                      traceback=[_text(t, 20_000) for t in trace[:200]])
    data = _bundle(raw.get("data"))
    if not data:
        return None
    out = nbformat.v4.new_output(kind, data=data)
    if kind == "execute_result":
        count = raw.get("execution_count")
        out.execution_count = count if isinstance(count, int) and not isinstance(count, bool) else None
    return out


def clean_outputs(raw: object) -> list[NotebookNode]:
    """The child's outputs of one cell, as valid nbformat outputs (anything else dropped)."""
    if not isinstance(raw, list):
        return []
    return [out for out in (_one(item) for item in raw[:1000]) if out is not None]


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
