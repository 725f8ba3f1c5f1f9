"""CPU-seconds per notebook of ``autograder grade`` on a small class, for two source trees
side by side in one run, with the same scores on every cell.

Wall time on a shared machine moves with everyone else's load; the CPU time a grading
run spends (its process, the workers, the zygote and the students' children) moves much
less. The students' children are reaped by the kernel (the zygote ignores SIGCHLD), so
their time never reaches the grading process's rusage: each run is put in its own cgroup
v1 ``cpuacct`` group where one can be made (root, cgroup v1), which counts every
descendant; elsewhere the script says so and counts the rusage only (children left out). This script:

1. writes a small class (not timed): the first ``--per`` sample students of every
   assignment (``autograder/samples/``), from the installed manifests' releases;
2. grades a copy of it with each ``--tree`` (a checkout of this project; default: this
   one), ``--repeat`` times each, interleaved, in a fresh ``python`` process each
   (``autograder.integrations.nbgrader.grade.grade``, ``--jobs`` workers: zygote,
   gradebook, feedback pages and autograded notebooks included), and reports the CPU
   seconds per notebook of each run;
3. with ``--nbgrader``, runs plain ``nbgrader autograde`` and ``generate_feedback`` once
   on the same class (a course made by ``generate_assignment``) and reports its CPU
   seconds too: a ratio that the machine's load moves far less than wall time's;
4. exits 1 if any run scored any cell differently from the first.

Usage::

    python benchmarks/cpu_per_notebook.py [--per 4] [--jobs 1] [--repeat 2]
        [--tree OLD_CHECKOUT --tree .] [--dir FOLDER] [--nbgrader]

To compare against an earlier commit: ``git worktree add /tmp/before <commit>`` and pass
``--tree /tmp/before --tree .``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SALT = "benchmark"
CPUACCT = Path("/sys/fs/cgroup/cpuacct")

#: Run in a fresh interpreter with the tree under test first on sys.path.
GRADE = """
import json, sys
sys.modules.setdefault("rfc3987_syntax", None)
from autograder.integrations.nbgrader.grade import grade
from autograder.settings import GradeSettings
rows = grade(submissions=sys.argv[1], out=sys.argv[2], jobs=int(sys.argv[3]),
             settings=GradeSettings(salt=sys.argv[4]))
json.dump({f"{r.student}/{r.assignment}": r.cells for r in rows}, open(sys.argv[5], "w"),
          sort_keys=True)
"""


def build_class(folder: Path, per: int) -> int:
    """The first ``per`` sample students of every assignment under ``folder/submitted``."""
    from autograder.samples import sample_class, write_class
    from autograder.settings import ASSIGNMENTS

    count = 0
    for a in ASSIGNMENTS:
        students = dict(list(sample_class(a).items())[:per])
        write_class(folder, ROOT / "source" / a / f"{a}.ipynb", a, students)
        count += len(students)
    return count


def _group() -> Path | None:
    """A fresh cpuacct cgroup (None where none can be made)."""
    group = CPUACCT / f"autograder-bench-{os.getpid()}-{time.monotonic_ns()}"
    try:
        group.mkdir()
    except OSError:
        return None
    return group


def grade_once(tree: Path, submitted: Path, run: Path, jobs: int) -> tuple[float, float, dict]:
    """(CPU seconds, wall seconds, scores) of one grading run with ``tree``'s code."""
    course = run / "course"
    shutil.copytree(submitted, course / "submitted")
    scores = run / "scores.json"
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    seconds, wall = measured([sys.executable, "-c", GRADE, str(course / "submitted"),
                              str(run / "out"), str(jobs), SALT, str(scores)], tree, env)
    return seconds, wall, json.loads(scores.read_text())


def plain_nbgrader(submitted: Path, run: Path) -> tuple[float, float, dict]:
    """(CPU seconds, wall seconds, scores) of ``nbgrader autograde`` and
    ``generate_feedback`` on the same class, in a course made by ``generate_assignment``."""
    from autograder.authoring.course import new_course, read_scores
    from autograder.settings import ASSIGNMENTS

    course = new_course(run / "course", ROOT, list(ASSIGNMENTS))
    shutil.copytree(submitted, course / "submitted")
    env = {**os.environ, "AUTOGRADER_SALT": SALT}
    code = ("import sys\nfrom autograder.authoring.course import nbgrader\n"
            "for step in (['autograde', '*'], ['generate_feedback', '*']):\n"
            "    done = nbgrader(step, sys.argv[1], timeout=3600)\n"
            "    sys.exit(done.stderr[-3000:]) if done.returncode else None\n")
    seconds, wall = measured([sys.executable, "-c", code, str(course)], ROOT, env)
    scores = {}
    for key in sorted(p.relative_to(submitted).as_posix() for p in submitted.glob("*/*")):
        student, a = key.split("/")
        scores[key] = {c.cell: c.score for c in read_scores(course, a, student)}
    return seconds, wall, scores


def measured(command: list[str], cwd: Path, env: dict) -> tuple[float, float]:
    """(CPU seconds of ``command`` and every process under it, wall seconds)."""
    group = _group()

    def enter() -> None:  # in the child, before it runs anything
        if group is not None:
            (group / "cgroup.procs").write_text(str(os.getpid()))

    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            preexec_fn=enter)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    seconds = usage.ru_utime + usage.ru_stime
    if group is not None:
        seconds = int((group / "cpuacct.usage").read_text()) / 1e9
        group.rmdir()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{command[:2]} in {cwd} failed (exit status {status})")
    return seconds, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per", type=int, default=4, help="students per assignment")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--tree", type=Path, action="append", default=None,
                        help="a checkout to grade with (repeatable; default: this one)")
    parser.add_argument("--dir", type=Path, default=None, help="keep the runs here")
    parser.add_argument("--nbgrader", action="store_true",
                        help="also plain nbgrader (autograde + generate_feedback), once")
    args = parser.parse_args()
    trees = args.tree or [ROOT]
    folder = args.dir or Path(tempfile.mkdtemp(prefix="autograder-cpu-"))
    notebooks = build_class(folder / "class", args.per)
    print(f"class: {notebooks} notebooks in {folder / 'class'}; load {os.getloadavg()[0]:.1f}")
    if not os.access(CPUACCT, os.W_OK):
        print("no cpuacct cgroup: the students' children's CPU time is not counted")
    first, differ = None, 0
    cpu: dict[Path, list[float]] = {t: [] for t in trees}
    for i in range(args.repeat):
        for k, tree in enumerate(trees):
            seconds, wall, scores = grade_once(tree, folder / "class" / "submitted",
                                               folder / f"run-{i}-{k}", args.jobs)
            cpu[tree].append(seconds)
            first = first or scores
            differ += scores != first
            print(f"{tree}: {seconds:6.1f} CPU-s ({seconds / notebooks:.3f} per notebook), "
                  f"{wall:6.1f} s wall{'' if scores == first else '  SCORES DIFFER'}")
    if args.nbgrader:
        seconds, wall, scores = plain_nbgrader(folder / "class" / "submitted", folder / "nbgrader")
        differ += scores != first
        print(f"plain nbgrader: {seconds:6.1f} CPU-s ({seconds / notebooks:.3f} per notebook), "
              f"{wall:6.1f} s wall{'' if scores == first else '  SCORES DIFFER'}; CPU ratio "
              f"{seconds / min(cpu[trees[-1]]):.1f}x against the best run of {trees[-1]}")
    for tree in trees:
        best = min(cpu[tree])
        print(f"best {tree}: {best / notebooks:.3f} CPU-s per notebook")
    print("scores identical in every run" if not differ else f"{differ} run(s) scored differently")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
