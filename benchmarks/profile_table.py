"""Where a grading run's time goes, from a py-spy profile of it: a markdown table.

Record a small class at ``--jobs 1`` (every process: the host, its workers, the zygote and
the students' children), then read the raw samples::

    py-spy record --subprocesses --format raw -r 200 -o profile.txt -- \
        python -c "from autograder.integrations.nbgrader.grade import grade; ..."
    python benchmarks/profile_table.py profile.txt CPU_SECONDS NOTEBOOKS

Samples where the process waits (a socket, a pipe, a lock) are left out; each category's
share of the rest is turned into CPU-seconds per notebook with the run's measured CPU
time (``benchmarks/cpu_per_notebook.py``). py-spy samples a process that is ready to run
as well as one that runs, so under load the shares are what carries weight, not the
sample counts. The categories are the first rule that matches, in :data:`RULES`' order.
"""

from __future__ import annotations

import collections
import sys
from collections.abc import Callable

#: The innermost frames of a process that waits rather than works.
IDLE = {"_read", "select", "wait", "poll", "recv", "waitpid", "sleep", "accept", "recv_into",
        "send", "sendall", "read", "readinto", "_PollLikeSelector.select", "Condition.wait", "Event.wait",
        "Connection._recv", "Connection._recv_bytes", "Connection._poll", "Connection.poll",
        "Thread._wait_for_tstate_lock", "Thread.join", "Queue.get"}
_STEPS = ("FindNotebook.__call__", "ReadNotebook.__call__", "ReadTimestamp.__call__",
          "RestoreMetadata.__call__", "PutBackTests.__call__", "OverwriteLocked.__call__",
          "ClearSubmittedOutputs.__call__", "CollectFiles.__call__", "Review.__call__",
          "Score.__call__")
Rule = tuple[str, bool, str, Callable[[list[str]], bool]]
#: (process, once per batch?, label, test on the sample's function names)
RULES: list[Rule] = [
    ("host", True, "host: start-up imports",
     lambda f: "grade" not in f and "GradebookWriter._run" not in f),
    ("host", True, "host: warming checks, SymPy, page cells (`_preload`)", lambda f: "_preload" in f),
    ("host", True, "host: gradebook open (nbgrader's import, schema)",
     lambda f: "open_gradebook" in f or "check_gradebook" in f),
    ("host", True, "host: gradebook rows of the release (`agree`)",
     lambda f: "agree" in f or "plan" in f),
    ("host", False, "host: gradebook rows per submission", lambda f: "GradebookWriter._run" in f),
    ("host", False, "host: staging pages and notebooks, scores files", lambda f: True),
    ("zygote", True, "zygote: start-up (imports, warm-up)", lambda f: True),
    ("worker", False, "worker: checks (host side)", lambda f: "Execute._checks" in f),
    ("worker", False, "worker: feedback page", lambda f: "render_feedback" in f),
    ("worker", False, "worker: autograded notebook JSON", lambda f: "written" in f or "stamp" in f),
    ("worker", False, "worker: reading, screening, restoring the notebook",
     lambda f: any(s in f for s in _STEPS)),
    ("worker", False, "worker: spawning and confining the child, cell exchange",
     lambda f: "Execute.__call__" in f),
    ("worker", False, "worker: other", lambda f: True),
    ("child", False, "child: figures (draw and PNG)", lambda f: "print_figure" in f),
    ("child", False, "child: checks calling the student's functions", lambda f: "Kernel.call" in f),
    ("child", False, "child: student cells (their own code)",
     lambda f: "InteractiveShell.run_code" in f),
    ("child", False, "child: IPython per cell (transform, parse), replies, fork, isolation",
     lambda f: True),
]


def _role(processes: list[str]) -> str:
    """host, worker (a fork of the host), zygote, or child (a fork of the zygote)."""
    zygotes = sum("child.zygote" in p for p in processes)
    if zygotes:
        return "zygote" if zygotes == 1 else "child"
    return "host" if len(processes) == 1 else "worker"


def shares(path: str) -> tuple[collections.Counter, int]:
    counts: collections.Counter = collections.Counter()
    total = 0
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            if not n.isdigit():  # a frame's text that spans lines (py-spy prints it raw)
                continue
            frames = stack.split(";")
            processes = [f for f in frames if f.startswith("process ")]
            funcs = [f.split(" (")[0] for f in frames if not f.startswith("process ")]
            if not funcs or funcs[-1] in IDLE:
                continue
            role = _role(processes)
            rule = next(r for r in RULES if r[0] == role and r[3](funcs))
            counts[(rule[1], rule[2])] += int(n)
            total += int(n)
    return counts, total


def main() -> int:
    path, cpu, notebooks = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    counts, total = shares(path)
    print("| where | when | share | CPU-s per notebook |\n|---|---|---|---|")
    for (batch, label), n in sorted(counts.items(), key=lambda kv: (not kv[0][0], -kv[1])):
        print(f"| {label} | {'once per batch' if batch else 'per notebook'} | "
              f"{100 * n / total:.1f} % | {cpu * n / total / notebooks:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
