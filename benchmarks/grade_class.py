"""Plain nbgrader against ``autograder grade`` on the same class, side by side in one run.

The class: every sample student of every assignment (the source's solution, the blank
release, each correct alternative and each named mistake), written into one nbgrader
course made by ``nbgrader generate_assignment`` (not timed). Then, timed:

1. plain nbgrader: ``nbgrader autograde "*"`` and ``nbgrader generate_feedback "*"``
   (one process each, as an instructor runs them; Jupyter kernels, in-kernel checks);
2. ``autograder grade`` on a copy of the same submissions (sandboxed children, checks in
   the host, ``--jobs`` workers; zygote start-up, gradebook and feedback included).

That is one run, on a course of its own; ``--runs`` of them (default 3) give the ratio's
minimum, median and maximum. ``--reserve-cpu SHARES`` runs both sides in a cpu cgroup of
that weight, so that the shared machine's other work weighs on neither.

Both draw the same hidden inputs (one salt), so every cell must score the same; the
script exits 1 if any differs. It writes what it measured to ``--results`` (JSON) and
draws it to ``--chart`` (PNG; default: beside the results), both meant to be committed
(docs/benchmarks.md shows them); ``--draw-only`` redraws the chart from the results
already written, grading nothing. Usage::

    python benchmarks/grade_class.py [--jobs 2] [--runs 3] [--reserve-cpu 102400] [--dir FOLDER]
        [--results benchmarks/latest.json] [--chart benchmarks/latest.png] [--draw-only]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.modules.setdefault("rfc3987_syntax", None)  # see autograder/cli.py

from reserve import release_cpu, reserve_cpu  # noqa: E402  (beside this script)

from autograder.authoring import cells as nbs  # noqa: E402
from autograder.authoring.course import nbgrader, new_course, read_scores  # noqa: E402
from autograder.integrations.nbgrader.grade import grade  # noqa: E402
from autograder.samples import sample_class  # noqa: E402
from autograder.samples.submission import make_submission  # noqa: E402
from autograder.settings import ASSIGNMENTS, GradeSettings  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SALT = "benchmark"
RESULTS = ROOT / "benchmarks" / "latest.json"


def build_class(folder: Path) -> tuple[Path, list[tuple[str, str]]]:
    """An nbgrader course holding every sample student; returns it and (student, a) pairs."""
    course = new_course(folder / "course", ROOT, list(ASSIGNMENTS))
    pairs = []
    for a in ASSIGNMENTS:
        source = nbs.read(ROOT / "source" / a / f"{a}.ipynb")
        release = nbs.read(course / "release" / a / f"{a}.ipynb")
        for student, variant in sample_class(a).items():
            nbs.write(make_submission(source, release, variant),
                      course / "submitted" / student / a / f"{a}.ipynb")
            pairs.append((student, a))
    return course, pairs


def run_nbgrader(course: Path) -> float:
    started = time.monotonic()
    for step in (["autograde", "*"], ["generate_feedback", "*"]):
        done = nbgrader(step, course, timeout=7200, env={"AUTOGRADER_SALT": SALT})
        if done.returncode != 0:
            raise SystemExit(f"nbgrader {step[0]} failed:\n{done.stderr[-3000:]}")
    return time.monotonic() - started


def run_engine(submissions: Path, out: Path, jobs: int) -> tuple[float, list]:
    started = time.monotonic()
    results = grade(submissions=submissions, out=out, jobs=jobs, settings=GradeSettings(salt=SALT))
    return time.monotonic() - started, results


def compare(course: Path, pairs: list[tuple[str, str]], ours: dict) -> tuple[list[str], int]:
    """The notebooks whose cells score differently, and how many cells were compared."""
    differ, cells = [], 0
    for student, a in pairs:
        plain = {c.cell: c.score for c in read_scores(course, a, student)}
        cells += len(plain)
        if plain != ours[(student, a)]:
            differ.append(f"{student}/{a}: nbgrader {plain} engine {ours[(student, a)]}")
    return differ, cells


def _commit() -> str:
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip()


def per_assignment(results: list) -> dict[str, dict[str, float]]:
    """Per assignment: notebooks, and the engine's mean seconds per notebook inside a
    worker (reading, running and checking it; not the zygote's start or the writing)."""
    rows: dict[str, dict[str, float]] = {}
    for r in results:
        row = rows.setdefault(r.assignment, {"notebooks": 0, "seconds": 0.0})
        row["notebooks"] += 1
        row["seconds"] += r.seconds
    return {a: {"notebooks": int(rows[a]["notebooks"]),
                "seconds_per_notebook": round(rows[a]["seconds"] / rows[a]["notebooks"], 3)}
            for a in ASSIGNMENTS if a in rows}


def draw(record: dict, path: Path) -> None:
    """The chart docs/benchmarks.md shows: the wall times side by side, and where the
    engine's time goes per assignment."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.6),
                                      gridspec_kw={"width_ratios": [1.5, 1]})
    fig.subplots_adjust(left=0.22, right=0.97, bottom=0.17, top=0.85, wspace=0.3)
    jobs, runs = record["jobs"], record.get("runs") or [
        {"nbgrader_seconds": record["nbgrader_seconds"], "engine_seconds": e}
        for e in record["engine_seconds"]]
    labels, seconds, colours = [], [], []
    for i, run in enumerate(runs, 1):
        labels += [f"run {i}: plain nbgrader", f"run {i}: autograder grade --jobs {jobs}"]
        seconds += [run["nbgrader_seconds"], run["engine_seconds"]]
        colours += ["#9e9e9e", "#1f77b4"]
    bars = left.barh(range(len(seconds)), seconds, color=colours)
    left.set_yticks(range(len(seconds)), labels, fontsize=8)
    left.invert_yaxis()
    left.set_xlabel("wall-clock seconds, whole class")
    left.set_xlim(0, max(seconds) * 1.3)
    for k, (bar, s) in enumerate(zip(bars, seconds)):
        text = f"{s:.1f} s" if k % 2 == 0 else f"{s:.1f} s ({seconds[k - 1] / s:.1f}x faster)"
        left.text(bar.get_width() + max(seconds) * 0.02, bar.get_y() + bar.get_height() / 2,
                  text, va="center", fontsize=8)
    left.set_title(f"{record['notebooks']} notebooks, same scores on every cell"
                   if record["scores_agree"] else "SCORES DIFFER", fontsize=9)
    names = [a for a in ASSIGNMENTS if a in record["per_assignment"]]  # the lecture's order
    per = [record["per_assignment"][a]["seconds_per_notebook"] for a in names]
    right.barh(range(len(names)), per, color="#1f77b4")
    right.set_yticks(range(len(names)), [a.split("_")[0] for a in names], fontsize=8)
    right.invert_yaxis()
    right.set_xlabel("engine seconds per notebook (in a worker)")
    right.set_title("where the engine's time goes", fontsize=9)
    reserved = ", cpu reserved for both sides" if record.get("cpu_reserved") else ""
    fig.suptitle(f"{record['date']}, {record['cpus']} cores, load {record['load_before']:.1f} "
                 f"before{reserved}, commit {record['commit'] or '?'}", fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def one_run(folder: Path, jobs: int) -> dict:
    """One side-by-side run on a course of its own: plain nbgrader, then the engine."""
    course, pairs = build_class(folder)
    copy = folder / "engine-submitted"
    shutil.copytree(course / "submitted", copy)
    load = os.getloadavg()[0]
    plain = run_nbgrader(course)
    seconds, results = run_engine(copy, folder / "engine-out", jobs)
    differ, cells = compare(course, pairs, {(r.student, r.assignment): r.cells for r in results})
    for line in differ:
        print("DIFFERS", line)
    print(f"{len(pairs)} notebooks, load {load:.1f}: plain nbgrader {plain:6.1f} s, "
          f"autograder grade --jobs {jobs} {seconds:5.1f} s: {plain / seconds:.1f}x; "
          + ("scores agree on every cell" if not differ else f"{len(differ)} notebook(s) differ"))
    return {"notebooks": len(pairs), "cells": cells, "load": round(load, 2),
            "nbgrader_seconds": round(plain, 1), "engine_seconds": round(seconds, 1),
            "ratio": round(plain / seconds, 2), "differ": len(differ),
            "per_assignment": per_assignment(results)}


def summary(runs: list[dict], jobs: int, reserved: bool, load_before: float) -> dict:
    ratios = sorted(r["ratio"] for r in runs)
    return {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "commit": _commit(),
            "cpus": os.cpu_count(), "python": platform.python_version(),
            "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
            "cpu_reserved": reserved, "notebooks": runs[0]["notebooks"],
            "cells": runs[0]["cells"], "jobs": jobs,
            "nbgrader_seconds": runs[0]["nbgrader_seconds"],
            "engine_seconds": [r["engine_seconds"] for r in runs],
            "ratios": [r["ratio"] for r in runs],
            "ratio_min_median_max": [ratios[0], ratios[len(ratios) // 2], ratios[-1]],
            "runs": runs, "per_assignment": runs[-1]["per_assignment"],
            "scores_agree": not any(r["differ"] for r in runs)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3, help="side-by-side runs")
    parser.add_argument("--reserve-cpu", type=int, default=0, metavar="SHARES",
                        help="run both sides in a cpu cgroup of this weight (root, cgroup v1)")
    parser.add_argument("--dir", type=Path, default=None, help="keep the courses here")
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="JSON file for what was measured (default: %(default)s)")
    parser.add_argument("--chart", type=Path, default=None,
                        help="PNG chart of the results (default: beside --results)")
    parser.add_argument("--draw-only", action="store_true",
                        help="grade nothing: draw the chart of the --results already written")
    args = parser.parse_args()
    chart = args.chart or args.results.with_suffix(".png")
    if args.draw_only:
        draw(json.loads(args.results.read_text(encoding="utf-8")), chart)
        print(f"wrote {chart}")
        return 0
    folder = args.dir or Path(tempfile.mkdtemp(prefix="autograder-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()[0]
    group = reserve_cpu(args.reserve_cpu) if args.reserve_cpu else None
    try:
        runs = [one_run(folder / f"run-{i + 1}", args.jobs) for i in range(args.runs)]
    finally:
        release_cpu(group)
    record = summary(runs, args.jobs, group is not None, load_before)
    low, median, high = record["ratio_min_median_max"]
    print(f"ratio over {len(runs)} runs: min {low}x, median {median}x, max {high}x")
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    draw(record, chart)
    print(f"wrote {args.results} and {chart}")
    return 0 if record["scores_agree"] else 1


if __name__ == "__main__":
    sys.exit(main())
