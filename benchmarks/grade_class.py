"""Plain nbgrader against ``autograder grade`` on the same class, side by side in one run.

The class: every sample student of every assignment (the source's solution, the blank
release, each correct alternative and each named mistake), written into one nbgrader
course made by ``nbgrader generate_assignment`` (not timed). Then, timed:

1. plain nbgrader: ``nbgrader autograde "*"`` and ``nbgrader generate_feedback "*"``
   (one process each, as an instructor runs them; Jupyter kernels, in-kernel checks);
2. ``autograder grade`` on a copy of the same submissions (sandboxed children, checks in
   the host, ``--jobs`` workers; zygote start-up, gradebook and feedback included),
   ``--repeat`` times; the ratio is taken against the fastest of these runs.

Both draw the same hidden inputs (one salt), so every cell must score the same; the
script exits 1 if any differs. It writes what it measured to ``--results`` (JSON) and
draws it to ``--chart`` (PNG; default: beside the results), both meant to be committed
(docs/benchmarks.md shows them); ``--draw-only`` redraws the chart from the results
already written, grading nothing. Usage::

    python benchmarks/grade_class.py [--jobs 2] [--repeat 2] [--dir FOLDER]
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

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6),
                                      gridspec_kw={"width_ratios": [1.5, 1]})
    fig.subplots_adjust(left=0.22, right=0.97, bottom=0.17, top=0.85, wspace=0.3)
    jobs = record["jobs"]
    labels = ["plain nbgrader\n(autograde + generate_feedback)"]
    labels += [f"autograder grade --jobs {jobs}\n(run {i})"
               for i in range(1, len(record["engine_seconds"]) + 1)]
    seconds = [record["nbgrader_seconds"], *record["engine_seconds"]]
    bars = left.barh(range(len(seconds)), seconds,
                     color=["#9e9e9e"] + ["#1f77b4"] * len(record["engine_seconds"]))
    left.set_yticks(range(len(seconds)), labels, fontsize=8)
    left.invert_yaxis()
    left.set_xlabel("wall-clock seconds, whole class")
    left.set_xlim(0, max(seconds) * 1.3)
    for bar, s in zip(bars, seconds):
        ratio = record["nbgrader_seconds"] / s
        text = f"{s:.1f} s" if bar is bars[0] else f"{s:.1f} s ({ratio:.1f}x faster)"
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
    fig.suptitle(f"{record['date']}, {record['cpus']} cores, load {record['load_before']:.1f} "
                 f"before, commit {record['commit'] or '?'}", fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2, help="engine runs (the best is kept)")
    parser.add_argument("--dir", type=Path, default=None, help="keep the course here")
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
    course, pairs = build_class(folder)
    copy = folder / "engine-submitted"
    shutil.copytree(course / "submitted", copy)
    print(f"class: {len(pairs)} notebooks over {len(ASSIGNMENTS)} assignments in {folder}")
    plain = run_nbgrader(course)
    print(f"plain nbgrader (autograde + generate_feedback): {plain:7.1f} s "
          f"({plain / len(pairs):.2f} s per notebook)")
    times, runs = [], []
    for i in range(args.repeat):
        seconds, results = run_engine(copy, folder / f"engine-out-{i}", args.jobs)
        times.append(seconds)
        runs.append(results)
        print(f"autograder grade --jobs {args.jobs}:               {seconds:7.1f} s "
              f"({seconds / len(pairs):.2f} s per notebook)")
    print(f"ratio (nbgrader / autograder grade): {plain / min(times):.1f}x")
    best = runs[times.index(min(times))]
    differ, cells = compare(course, pairs, {(r.student, r.assignment): r.cells for r in best})
    for line in differ:
        print("DIFFERS", line)
    print(f"scores agree on every cell ({cells} cells)" if not differ
          else f"{len(differ)} notebook(s) differ")
    record = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "commit": _commit(),
              "cpus": os.cpu_count(), "python": platform.python_version(),
              "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
              "notebooks": len(pairs), "cells": cells, "jobs": args.jobs,
              "nbgrader_seconds": round(plain, 1),
              "engine_seconds": [round(t, 1) for t in times],
              "ratios": [round(plain / t, 2) for t in times],
              "per_assignment": per_assignment(best), "scores_agree": not differ}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    draw(record, chart)
    print(f"wrote {args.results} and {chart}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
