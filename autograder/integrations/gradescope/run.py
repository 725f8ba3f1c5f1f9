"""Inside Gradescope: grade the one submission in ``/autograder`` and write ``results.json``.

The bundle's ``run_autograder`` runs ``python -m autograder.integrations.gradescope.run``. It reads
the bundle's ``source/config.json`` (assignment, limits) and ``source/salt``, picks the
submitted notebook by name, grades it with the same engine as ``autograder grade``
(:func:`autograder.grading.batch.grade_submissions`: student code in a sandboxed child, checks
here), and writes ``results/results.json`` in Gradescope's format: one test per grade
cell with its Chinese diagnosis, the written answers listed for grading by hand, the
total and a Chinese summary. Every way a submission can fail (no notebook, several,
invalid JSON, a loop, a crash) still ends in a results.json with the reason and 0 points.
``GRADESCOPE_ROOT`` (default ``/autograder``) replaces the root, so it runs anywhere.

Protection: the student's code runs in Linux namespaces where the container allows them,
else (Gradescope runs this as root) as a separate unprivileged user, with ``source/``
closed to it. Where neither is possible, or the installed package is open to every
user, it refuses to grade (:data:`REFUSED`: every test 0, the reason in English for the
instructor) rather than run student code beside the salt. ``run_autograder`` passes a
private ``OUT`` path and a ``--digest-fd``: the results go there, their SHA-256 on that
descriptor, and ``run_autograder`` installs them only if both agree.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import stat
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

sys.modules.setdefault("rfc3987_syntax", None)  # see autograder/cli.py: ~0.8 s per submission

from ...engine.host.files import find_notebooks, read_at_most  # noqa: E402
from ...engine.host.manifest import load  # noqa: E402
from ...engine.host.pool import Submission  # noqa: E402
from ...engine.host.protection import Verdict, decide  # noqa: E402
from ...errors import SandboxUnavailable, Unprotected  # noqa: E402
from ...grading.batch import grade_submissions  # noqa: E402
from ...grading.salt import read_salt  # noqa: E402
from ...settings import (  # noqa: E402
    DEFAULT_VISIBILITY,
    DEFAULTS,
    MAX_NOTEBOOK_BYTES,
    PACKAGE_DIR,
    GradeSettings,
    Status,
)

__all__ = ["BundleConfig", "Picked", "pick_notebook", "student_id", "results_for", "run", "main",
           "prepare", "Refused", "REFUSED"]

log = logging.getLogger("autograder")

CONFIG, SALT = "config.json", "salt"
CRASHED = "评分程序内部出错（不是你的错误），本次暂记 0 分；教师会查看并重新评分。"
REFUSED = ("评分环境无法保证安全地运行你的代码（不是你的错误），因此本次没有评分，暂记 0 分；"
           "教师会修复评分环境后重新评分。")


@dataclass(frozen=True)
class BundleConfig:
    """What ``autograder gradescope`` fixed when it made the bundle."""

    assignment: str
    timeout: float = DEFAULTS.timeout
    cell_timeout: float = DEFAULTS.cell_timeout
    memory_mb: int = DEFAULTS.memory_mb
    visibility: str = DEFAULT_VISIBILITY

    @classmethod
    def read(cls, source: Path) -> BundleConfig:
        data = json.loads((source / CONFIG).read_text(encoding="utf-8"))
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


class Refused(Exception):
    """Student code could not run protected here; ``reason`` is for the instructor."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Picked:
    """The notebook to grade, or ``None`` and the Chinese reason there is none."""

    path: Path | None
    reason: str = ""


# ------------------------------------------------------------------ the submission


def pick_notebook(folder: Path, assignment: str) -> Picked:
    """``<assignment>.ipynb``, else the only notebook, else the only one named like it."""
    found = find_notebooks(folder, recursive=True)
    prefix = assignment.split("_")[0]
    for group in ([p for p in found if p.name == f"{assignment}.ipynb"], found,
                  [p for p in found if p.stem.startswith(assignment)],
                  [p for p in found if re.match(rf"{prefix}(\b|_|-)", p.stem)]):
        if len(group) == 1:
            return Picked(group[0])
    if not found:
        others = sorted(p.name for p in folder.rglob("*") if p.is_file())[:10] if \
            folder.is_dir() else []
        seen = f"（提交中的文件：{', '.join(others)}）" if others else "（提交是空的）"
        return Picked(None, f"没有找到 notebook（.ipynb 文件）{seen}。请提交 {assignment}.ipynb。")
    names = ", ".join(str(p.relative_to(folder)) for p in found[:10])
    return Picked(None, f"提交了 {len(found)} 个 notebook（{names}），无法确定评哪一个。"
                        f"请只提交 {assignment}.ipynb 一个文件。")


def student_id(root: Path) -> str:
    """The submitters' Gradescope ids (from ``submission_metadata.json``), else ``student``."""
    try:
        meta = json.loads((root / "submission_metadata.json").read_text(encoding="utf-8"))
        ids = sorted(str(u["id"]) for u in meta.get("users", []) if u.get("id") is not None)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        ids = []
    text = "+".join(ids) or "student"
    return re.sub(r"[^A-Za-z0-9._@+-]", "_", text)[:100]


def _copy(notebook: Path, folder: Path) -> None:
    """Copy the notebook's bytes (never following a link; the engine refuses one that is
    too large) into the grading folder."""
    data = read_at_most(notebook, MAX_NOTEBOOK_BYTES)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / notebook.name).write_bytes(data)


# ------------------------------------------------------------------ results.json


def _output(spec, cell) -> str:
    """A test's Chinese output: the diagnosis, or why the cell has no automatic score."""
    if spec.is_manual:
        blank = cell is not None and cell.blank  # the page's "没有作答", 0 points
        return ("书面回答：没有作答，记 0 分。" if blank else
                "书面回答，由教师人工评分；自动评分在这里暂记 0 分。")
    if cell is None:
        return "未评分（见上方的总体说明）。"
    if cell.status == Status.PASSED:
        return "通过。"
    if cell.status == Status.ERROR:
        return "评分程序在检查这一项时出错（不是你的错误），教师会复查；此项暂记 0 分。"
    return "\n".join(cell.messages) or "未通过。"


def _test(number: int, spec, cell, visibility: str) -> dict:
    """One Gradescope test; tagged with its kind (auto, manual, practice) and its part."""
    title = "书面回答（人工评分）" if spec.is_manual else spec.title
    if spec.is_practice:
        title += "（拓展练习，不计分）"
    kind = "manual" if spec.is_manual else "practice" if spec.is_practice else "auto"
    entry = {"name": f"{spec.grade_id}：{title}", "number": str(number),
             "score": float(cell.score or 0.0) if cell is not None else 0.0,
             "max_score": float(spec.points), "output": _output(spec, cell),
             "output_format": "text", "visibility": visibility, "tags": [kind, spec.part]}
    if not spec.is_manual:
        entry["status"] = Status.PASSED if cell is not None and cell.status == Status.PASSED \
            else Status.FAILED
    return entry


def _summary(assignment: str, manifest, result, reason: str) -> str:
    """The top-level Chinese output."""
    manual = [s for s in manifest.graded if s.is_manual]
    lines = []
    if reason:
        lines.append(f"作业 {assignment}：无法评分，本次自动评分记 0 分。")
        lines.append(f"原因：{reason}")
    else:
        lines.append(f"作业 {assignment}：自动评分 {result.auto_score:g}/{manifest.auto_max:g} 分。")
        lost = [s for s in manifest.graded if s.grade_id in result.lost]
        if lost:
            lines.append("未通过：" + "；".join(f"{s.grade_id}（{s.title}）" for s in lost)
                         + "。诊断见下方各项。")
        if result.grader_errors:
            lines.append("评分程序在 " + ", ".join(result.grader_errors) +
                         " 出错（不是你的错误），教师会复查后重新评分。")
    if manual:
        lines.append(f"书面回答 {len(manual)} 题（共 {sum(s.points for s in manual):g} 分）"
                     "由教师人工评分，不含在上面的分数里。")
    return "\n".join(lines)


def results_for(config: BundleConfig, manifest, result=None, graded=None,
                reason: str = "") -> dict:
    """results.json for one graded submission (``result``/``graded`` from the engine), or
    for one that could not be graded (``reason`` in Chinese, every test 0)."""
    notes = [n.zh for n in (graded.notes if graded is not None else [])]
    if graded is not None and graded.crashed:
        reason = reason or CRASHED
    elif graded is not None and graded.stopped:
        reason = reason or "；".join(notes)
    cells = {c.grade_id: c for c in (*graded.cells, *graded.practice)} \
        if graded is not None and not reason else {}
    tests = [_test(i, spec, cells.get(spec.grade_id), config.visibility)
             for i, spec in enumerate((*manifest.graded, *manifest.practice), 1)]
    output = _summary(config.assignment, manifest, result, reason)
    if notes and not reason:
        output += "\n评分说明：" + "；".join(notes)
    score = 0.0 if reason or result is None else float(result.auto_score)
    extra = {"assignment": config.assignment, "auto_max": manifest.auto_max}
    if result is not None:
        extra.update(student=result.student, status=result.status, reason=result.reason,
                     grader_errors=result.grader_errors, review=result.review,
                     parts=result.parts, practice=result.practice,
                     protection=result.protection)
    return {"score": score, "output": output, "output_format": "text",
            "test_output_format": "text", "visibility": config.visibility,
            "stdout_visibility": "hidden", "extra_data": extra, "tests": tests}


# ------------------------------------------------------------------ the run


def _protected(*, isolate: bool, private: list[Path]) -> Verdict:
    """The one protection decision (:mod:`autograder.engine.host.protection`); raises
    :class:`Refused` where student code would run unprotected (never allowed here)."""
    verdict = decide(isolate=isolate, private=private)
    refusal = verdict.refusal(allow_unprotected=False)
    if refusal:
        raise Refused(f"student code would run unprotected here: {refusal} (setup.sh closes "
                      "the package: `python -m autograder.integrations.gradescope.run --prepare`)")
    print(verdict.line())
    return verdict


def _engine(submission, settings, verdict: Verdict | None = None,
            private: list[Path] = ()) -> tuple:
    """The engine on one submission; should the sandbox not start at all here, once
    more without namespaces (decided again). Raises :class:`Refused` where student code
    could only run unprotected."""
    from dataclasses import replace

    try:
        try:
            return grade_submissions([submission], settings=settings, jobs=1, verdict=verdict)
        except Unprotected:
            raise
        except SandboxUnavailable as err:
            print(f"{err}: grading again without namespaces (limits and a separate user)")
            again = _protected(isolate=False, private=list(private)) if verdict else None
            return grade_submissions([submission], settings=replace(settings, isolate=False),
                                     jobs=1, verdict=again)
    except Unprotected as err:
        raise Refused(f"student code would run unprotected here ({err.reason})") from None


def _guard(root: Path) -> Verdict:
    """As root (Gradescope's way): close ``source/`` (salt, config, wheel) and the root to
    every other user; then decide the protection once (refused: :class:`Refused`; a
    package open to the student uid is refused there: setup.sh closes it, :func:`prepare`)."""
    if os.geteuid() == 0:
        source = root / "source"
        os.chown(source, 0, 0)
        os.chmod(source, 0o700)
        os.chown(root, 0, 0)
        os.chmod(root, stat.S_IMODE(root.stat().st_mode) & ~0o022)
    return _protected(isolate=True, private=[root / "source"])


def prepare(source: Path) -> list[Path]:
    """setup.sh's last step, as root: close the installed package (its checks and the
    reference) and the bundle's folder to every other user; returns what it closed."""
    package = PACKAGE_DIR
    closed = []
    for path, mode in ((package, 0o700), (source, 0o700), (source / SALT, 0o600)):
        if path.exists():
            os.chown(path, 0, 0)
            os.chmod(path, mode)
            closed.append(path)
    return closed


def _grade(root: Path, config: BundleConfig, manifest) -> dict:
    picked = pick_notebook(root / "submission", config.assignment)
    if picked.path is None:
        return results_for(config, manifest, reason=picked.reason)
    verdict = _guard(root)  # before the salt is read or any student code runs
    salt = read_salt(root / "source" / SALT, missing="the bundle has no salt: make it again "
                     "with `autograder gradescope`")
    settings = GradeSettings(timeout=config.timeout, cell_timeout=config.cell_timeout,
                             memory_mb=config.memory_mb, salt=salt, allow_unprotected=False)
    student = student_id(root)
    with tempfile.TemporaryDirectory(prefix="gradescope-") as work:
        folder = Path(work) / student / config.assignment
        _copy(picked.path, folder)
        results, records = _engine(Submission(student, config.assignment, folder), settings,
                                   verdict, [root / "source"])
    row = results[0]
    print(f"graded {picked.path.name} as {student}: {row.status}, "
          f"{row.auto_score:g}/{row.auto_max:g}; {row.reason}")
    if row.review or (records[0] is not None and records[0].crashed):
        print(f"review: {'; '.join(row.review)}\n{records[0].crashed if records[0] else ''}")
    return results_for(config, manifest, row, records[0])


def _refused(config: BundleConfig, manifest, reason: str) -> dict:
    print(f"REFUSED TO GRADE: {reason}. Every test scores 0; fix the container and "
          "regrade.")  # stdout: shown to instructors only
    data = results_for(config, manifest, reason=REFUSED)
    data["extra_data"]["refused"] = reason
    return data


def _crashed(config: BundleConfig | None, manifest) -> dict:
    print(traceback.format_exc())  # stdout: shown to instructors only
    if config is None or manifest is None:
        return {"score": 0.0, "output": CRASHED, "output_format": "text", "tests": []}
    return results_for(config, manifest, reason=CRASHED)


def _run(root: Path, out: Path) -> tuple[dict, bytes]:
    started = time.monotonic()
    config = manifest = None
    try:
        config = BundleConfig.read(root / "source")
        manifest = load(config.assignment)
        data = _grade(root, config, manifest)
    except Refused as err:
        data = _refused(config, manifest, err.reason)
    except Exception:  # anything at all still ends in a results.json
        data = _crashed(config, manifest)
    data["execution_time"] = round(time.monotonic() - started, 1)
    text = (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".json.partial")
    partial.write_bytes(text)
    partial.replace(out)
    return data, text


def run(root: Path | None = None, out: Path | None = None) -> dict:
    """Grade ``<root>/submission`` and write ``out`` (default ``<root>/results/results.json``)."""
    root = Path(root or os.environ.get("GRADESCOPE_ROOT") or "/autograder")
    return _run(root, Path(out) if out else root / "results" / "results.json")[0]


def main(argv: list[str] | None = None) -> int:
    """``python -m autograder.integrations.gradescope.run [ROOT [OUT]] [--digest-fd N]``: always exits 0
    once results exist, their SHA-256 then written to descriptor N; ``--prepare [SOURCE]``
    is setup.sh's last step (:func:`prepare`)."""
    logging.basicConfig(stream=sys.stdout, level=logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    parser = argparse.ArgumentParser(prog="python -m autograder.integrations.gradescope.run")
    parser.add_argument("root", nargs="?", type=Path)
    parser.add_argument("out", nargs="?", type=Path)
    parser.add_argument("--digest-fd", type=int)
    parser.add_argument("--prepare", action="store_true")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.prepare:
        closed = prepare(args.root or Path("/autograder/source"))
        print("closed to other users: " + ", ".join(map(str, closed)))
        return 0
    root = args.root or Path(os.environ.get("GRADESCOPE_ROOT") or "/autograder")
    data, text = _run(root, args.out or root / "results" / "results.json")
    if args.digest_fd is not None:  # after the file is complete: run_autograder checks both
        os.write(args.digest_fd, hashlib.sha256(text).hexdigest().encode() + b"\n")
        os.close(args.digest_fd)
    print(f"score {data['score']:g}; results.json written in {data['execution_time']} s")
    return 0


if __name__ == "__main__":  # pragma: no cover - run by the bundle's run_autograder
    sys.exit(main())
