"""A fair share of the CPU (issue 29): one CPU hog beside honest students changes no
honest score.

The hog forks as many busy processes as it may (each in a session of its own, so the
kernel's per-session autogroups do not share the CPU fairly either) for longer than the
cell timeout. Each honest student is q1's perfect answer whose ``softmax`` cell first
spends half a second of CPU time (honest, slow code): with its fair share that cell takes
a few seconds even at a load of 10; without one, beside ~60 busy processes on 2 cores, it
gets about 1/30 of a core (15 s for that half second) and is interrupted at the cell
timeout, and every check after it fails (``CELL_TIMEOUT`` below).

Sized for 2 cores (``jobs=2``); the hog's notebook is the largest, so it is graded first
and busy while the others run.
"""

from __future__ import annotations

import copy

import nbformat
import pytest
from pipeline_helpers import ROOT, without_plots

from autograder.authoring import cells as nbs
from autograder.engine.host import memcg
from autograder.engine.host.cpushare import PERIOD, CpuPlan, plan
from autograder.engine.host.manifest import load, release_notebook
from autograder.engine.host.memcg import ChildCgroup, MemoryPlan
from autograder.integrations.nbgrader.grade import grade
from autograder.samples import PERFECT
from autograder.samples.submission import make_submission
from autograder.settings import DEFAULTS, GradeSettings

pytestmark = pytest.mark.e2e

A = "q1_value_scaling"
HONEST = ("honest-1", "honest-2", "honest-3")
HOG = '''
import os, time
end = time.monotonic() + SPIN
for _ in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        try:
            os.setsid()
        except OSError:
            pass
        while time.monotonic() < end:
            pass
        os._exit(0)
while time.monotonic() < end:
    pass
'''
SLOW = '''import time as _time
_start = _time.process_time()
while _time.process_time() - _start < WORK:
    pass
'''


def _class(spin: float) -> dict[str, nbformat.NotebookNode]:
    source = nbs.read(ROOT / "source" / A / f"{A}.ipynb")
    perfect = without_plots(make_submission(source, release_notebook(load(A)), PERFECT))
    honest = copy.deepcopy(perfect)
    cell = next(c for c in honest.cells if nbs.grade_id(c) == "softmax_impl")
    cell.source = SLOW.replace("WORK", f"{WORK:g}") + cell.source
    hog = copy.deepcopy(perfect)
    at = next(i for i, c in enumerate(hog.cells) if nbs.grade_id(c) == "imports")
    hog.cells.insert(at + 1, nbformat.v4.new_code_cell(HOG.replace("SPIN", f"{spin:g}")))
    hog.cells.append(nbformat.v4.new_markdown_cell("x " * 200_000))  # the largest: first
    return {"hog": hog, **{s: honest for s in HONEST}}


#: The cell timeout, the honest cell's CPU work and how long the hog spins (past the
#: timeout: it is interrupted then). An eighth of the default timeout keeps the hog's core
#: busy for seconds, not a minute of the suite's two cores; the share it tests does not
#: depend on the timeout (cpushare.plan sizes it from the workers alone). What decides
#: the run is the timeout over the honest work: 15, as when both were twice as long
#: (15 s for 1 s; 10 for 1, a sixth of the default, interrupted an honest cell in a whole
#: run beside two outside CPU hogs: the batch's cgroup shares the machine with them).
#: Without the share the honest half second gets ~1/30 of a core, 15 s, twice the
#: timeout (with ``GradeSettings(cgroups=False)`` an honest student keeps 4/18 points).
CELL_TIMEOUT = DEFAULTS.cell_timeout / 8
WORK = CELL_TIMEOUT / 15
SPIN = CELL_TIMEOUT + 2


def _no_cpu_cgroup() -> str:
    """Why this machine gives no child a cpu cgroup (empty: it does)."""
    memory = memcg.plan()
    try:
        share = plan(memory, workers=2)
        memory.cpu = share
        return "" if share.mechanism != "rlimits" else share.describe()
    finally:
        memory.close()


def test_one_cpu_hog_changes_no_honest_score(tmp_path):
    if why := _no_cpu_cgroup():
        pytest.skip(why)
    for student, nb in _class(SPIN).items():
        nbs.write(nb, tmp_path / "submitted" / student / A / f"{A}.ipynb")
    settings = GradeSettings(cell_timeout=CELL_TIMEOUT, salt="hostile-cpu")
    rows = {r.student: r for r in grade(submissions=tmp_path / "submitted",
                                         out=tmp_path / "out", settings=settings, jobs=2)}
    for student in HONEST:
        row = rows[student]
        assert (row.status, row.auto_score) == ("ok", row.auto_max), (student, row.reason)


def test_the_share_is_written_where_each_cgroup_version_reads_it(tmp_path):
    """v2: ``cpu.max`` in the child's own (memory) cgroup; without cgroups, no share and
    the log says so."""
    folder = tmp_path / "child"
    folder.mkdir()
    share = CpuPlan("cgroup2", cores=1.5)
    share.confine(12345, ChildCgroup(folder, 2))
    assert (folder / "cpu.max").read_text() == f"150000 {PERIOD}"
    off = plan(MemoryPlan("seccomp"), workers=2, cgroups=False)
    assert off.mechanism == "rlimits" and "NOT" in off.describe()
