"""Plain nbgrader against ``autograder grade`` on the same class, side by side in one run.

The class: every sample student of every assignment (the source's solution, the blank
release, each correct alternative and each named mistake), written into one nbgrader
course made by ``nbgrader generate_assignment`` (not timed). Then, timed:

1. plain nbgrader: ``nbgrader autograde "*"`` and ``nbgrader generate_feedback "*"``
   (one process each, as an instructor runs them; Jupyter kernels, in-kernel checks);
2. ``autograder grade`` on a copy of the same submissions (sandboxed children, checks in
   the host, ``--jobs`` workers; zygote start-up, gradebook and feedback included).

Both draw the same hidden inputs (one salt), so every cell must score the same; the
script exits 1 if any differs. Usage::

    python benchmarks/grade_class.py [--jobs 2] [--repeat 1] [--dir FOLDER]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.modules.setdefault("rfc3987_syntax", None)  # see autograder/cli.py

from autograder.authoring import cells as nbs  # noqa: E402
from autograder.authoring.course import nbgrader, new_course, read_scores  # noqa: E402
from autograder.integrations.nbgrader.grade import grade  # noqa: E402
from autograder.samples import sample_class  # noqa: E402
from autograder.settings import ASSIGNMENTS, GradeSettings  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SALT = "benchmark"


def build_class(folder: Path) -> tuple[Path, list[tuple[str, str]]]:
    """An nbgrader course holding every sample student; returns it and (student, a) pairs."""
    course = new_course(folder / "course", ROOT, list(ASSIGNMENTS))
    pairs = []
    for a in ASSIGNMENTS:
        source = nbs.read(ROOT / "source" / a / f"{a}.ipynb")
        release = nbs.read(course / "release" / a / f"{a}.ipynb")
        for student, variant in sample_class(a).items():
            nbs.write(nbs.make_submission(source, release, variant),
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


def run_engine(submissions: Path, out: Path, jobs: int) -> tuple[float, dict]:
    started = time.monotonic()
    results = grade(submissions=submissions, out=out, jobs=jobs, settings=GradeSettings(salt=SALT))
    return time.monotonic() - started, {(r.student, r.assignment): r.cells for r in results}


def compare(course: Path, pairs: list[tuple[str, str]], ours: dict) -> list[str]:
    differ = []
    for student, a in pairs:
        plain = {c.cell: c.score for c in read_scores(course, a, student)}
        if plain != ours[(student, a)]:
            differ.append(f"{student}/{a}: nbgrader {plain} engine {ours[(student, a)]}")
    return differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1, help="engine runs (the best is kept)")
    parser.add_argument("--dir", type=Path, default=None, help="keep the course here")
    args = parser.parse_args()
    folder = args.dir or Path(tempfile.mkdtemp(prefix="autograder-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    course, pairs = build_class(folder)
    copy = folder / "engine-submitted"
    shutil.copytree(course / "submitted", copy)
    print(f"class: {len(pairs)} notebooks over {len(ASSIGNMENTS)} assignments in {folder}")
    plain = run_nbgrader(course)
    print(f"plain nbgrader (autograde + generate_feedback): {plain:7.1f} s "
          f"({plain / len(pairs):.2f} s per notebook)")
    times = []
    for i in range(args.repeat):
        seconds, ours = run_engine(copy, folder / f"engine-out-{i}", args.jobs)
        times.append(seconds)
        print(f"autograder grade --jobs {args.jobs}:               {seconds:7.1f} s "
              f"({seconds / len(pairs):.2f} s per notebook)")
    print(f"ratio (nbgrader / autograder grade): {plain / min(times):.1f}x")
    differ = compare(course, pairs, ours)
    for line in differ:
        print("DIFFERS", line)
    print("scores agree on every cell" if not differ else f"{len(differ)} notebook(s) differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
