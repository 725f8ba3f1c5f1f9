"""The Gradescope bundle where the container refuses namespaces, under attack.

``tests/nonamespaces.py`` refuses ``unshare``, ``mount``, ``pivot_root`` and ``setns`` as
Docker's default seccomp profile does, and execs the bundle's own ``run_autograder`` (as
Gradescope does: as root, in a Gradescope-shaped root). The grader then runs the
student's code as a separate unprivileged user. Three submissions: q1's honest wrong
answer (no 1/√d_k), the same with every quiet trick of ``tests/hostile_gradescope.py``,
and the same with the issue's attack (read the salt, write full marks, kill the grader).
Each must keep the honest score, or end in the fallback; none may report what the
student wrote. Run as an unprivileged grader, the bundle refuses to grade.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import time
from pathlib import Path

import nbformat
import pytest
from gradescope_env import (
    NOBODY,
    finish,
    install,
    launch,
    make_root,
    readable_python,
    student_base,
)
from hostile_gradescope import KILL_GRADER, QUIET
from pipeline_helpers import ROOT as REPO

from autograder.authoring import cells as nbs
from autograder.engine.child.studentuser import WORLD_WRITABLE
from autograder.engine.host.manifest import load
from autograder.integrations.gradescope.bundle import FALLBACK, make_bundle
from autograder.integrations.gradescope.run import REFUSED
from autograder.samples import expected_losses, mistakes
from autograder.settings import STUDENT_SLOTS, STUDENT_UID, GradeSettings

pytestmark = pytest.mark.e2e

A = "q1_value_scaling"
SALT = "gradescope-hostile-salt-5f1c"
STUDENT_UIDS = range(STUDENT_UID, STUDENT_UID + STUDENT_SLOTS)
HONEST_MISTAKE = next(v for v in mistakes(A) if v.name == "no_sqrt_dk")
#: The course's source notebook (with solutions), as an instructor might leave in source/.
COURSE_NOTEBOOK = REPO / "source" / A / f"{A}.ipynb"


def _honest() -> nbformat.NotebookNode:
    from test_hostile import _honest_wrong

    return _honest_wrong()


def _with(base: nbformat.NotebookNode, attacks, root: Path, report: Path):
    """``base`` with each attack added (after the imports, or replacing its cell)."""
    nb = copy.deepcopy(base)
    for attack in attacks:
        code = attack.code.replace("ROOT_PATH", str(root)).replace("REPORT_PATH", str(report))
        if attack.cell:
            cell = next(c for c in nb.cells if nbs.grade_id(c) == attack.cell)
            cell.source = code.replace("HONEST", repr(cell.source))
        else:
            at = next(i for i, c in enumerate(nb.cells) if nbs.grade_id(c) == "imports")
            nb.cells.insert(at + 1, nbformat.v4.new_code_cell(code))
    return nb


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _processes_of(wanted: set[int]) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ids = (entry / "status").read_text().split("Uid:")[1].split("\n")[0].split()
            except (OSError, IndexError):
                continue
            if any(int(u) in wanted for u in ids):
                found.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def machine(tmp_path_factory):
    """A bundle installed as setup.sh installs it, on a Python every user may read."""
    with student_base(tmp_path_factory, "gradescope-hostile-") as base:
        python = readable_python(base)
        (base / "salt.txt").write_text(SALT + "\n")
        made = make_bundle(assignment=A, out=base / "autograder.zip",
                           salt_file=base / "salt.txt",
                           settings=GradeSettings(timeout=60, cell_timeout=5))
        source, site = install(made.path, base / "closed", python)
        yield base, python, made.path, source, site


def _nobody_root(base: Path, bundle: Path, python: Path) -> tuple[Path, Path]:
    """A root and an open installation for a grader running as ``nobody``."""
    source, site = install(bundle, base / "open", python, close=False)
    root = make_root(base / "open", source, "nobody",
                     {f"{A}.ipynb": nbformat.writes(_honest()).encode()})
    for path in [root, *root.rglob("*")]:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    return root, site


@pytest.fixture(scope="module")
def runs(machine):
    """The two hostile submissions as root, and the honest one as ``nobody``, side by
    side; their results, logs, roots and the tricks' reports."""
    base, python, bundle, source, site = machine
    report = base / "report"
    report.mkdir(mode=0o777)
    report.chmod(0o1777)
    roots, before, procs = {}, {}, {}
    for name, attacks in (("quiet", QUIET), ("killer", (KILL_GRADER,))):
        root = base / name
        nb = _with(_honest(), attacks, root, report)
        make_root(base, source, name, {f"{A}.ipynb": nbformat.writes(nb).encode()},
                  extra_source={f"{A}.ipynb": COURSE_NOTEBOOK.read_bytes()})
        roots[name], before[name] = root, _digest(root / "source")
        before[name]["run_autograder"] = hashlib.sha256(
            (root / "run_autograder").read_bytes()).hexdigest()
        procs[name] = launch(root, site, python)
    roots["nobody"], open_site = _nobody_root(base, bundle, python)
    procs["nobody"] = launch(roots["nobody"], open_site, python, uid=NOBODY)
    finished = {name: finish(proc, roots[name]) for name, proc in procs.items()}
    ended = time.time()
    logs = {name: log for name, (log, _left) in finished.items()}
    codes = {name: proc.returncode for name, proc in procs.items()}
    time.sleep(1.0)  # what a leftover process would still write, it writes by now
    data = {name: json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
            for name, root in roots.items()}
    reports = {}
    for path in report.glob("*.json"):
        reports[path.stem] = [json.loads(line) for line in path.read_text().splitlines()]
    beats = [float(x) for x in (report / "linger.beat").read_text().split()] \
        if (report / "linger.beat").exists() else []
    uids = {line.pop("uid") for lines in reports.values() for line in lines}
    return {"data": data, "logs": logs, "codes": codes, "roots": roots, "before": before,
            "reports": reports, "beats": beats, "ended": ended, "uids": uids,
            "leftovers": _processes_of(uids),
            "grader_left": {name: left for name, (_log, left) in finished.items()}}


def _honest_score() -> float:
    manifest = load(A)
    scored, _practice = expected_losses(HONEST_MISTAKE, manifest)
    lost = sum(s.points for s in manifest.graded if s.grade_id in scored)
    return manifest.auto_max - lost


def _scores(data: dict) -> dict[str, float]:
    return {t["name"].split("：")[0]: t["score"] for t in data["tests"]}


def test_the_child_ran_as_a_separate_user_because_namespaces_were_refused(runs):
    for name in ("quiet", "killer"):
        log = runs["logs"][name]
        assert runs["codes"][name] == 0, log
        assert "namespaces refused" in log and "sandbox (separate-user)" in log, log
        assert log.count("sandbox (separate-user)") == 1, log  # said once


def test_the_hidden_tests_scored_as_for_the_honest_wrong_answer(runs):
    """Under every quiet trick at once, each test scores as it would for q1's honest
    wrong answer: exactly the tests its mistake loses are lost, nothing more, nothing
    less (so grading as a separate user is faithful, and no trick gained a point)."""
    data, log = runs["data"]["quiet"], runs["logs"]["quiet"]
    assert data["score"] == _honest_score() < load(A).auto_max, log
    scored, _practice = expected_losses(HONEST_MISTAKE, load(A))
    auto = {s.grade_id for s in load(A).graded if not s.is_manual}
    lost = {name for name, score in _scores(data).items() if score == 0} & auto
    assert lost == set(scored), log


def test_the_issue_s_attack_keeps_the_honest_score_not_the_forged_one(runs):
    """Read the salt, write 17/17, kill every ancestor: the honest score, or the fallback's
    0; never the student's file."""
    data, log = runs["data"]["killer"], runs["logs"]["killer"]
    assert "forged" not in json.dumps(data), log
    if data["output"] != FALLBACK:
        assert _scores(data) == _scores(runs["data"]["quiet"]), log
        assert data["score"] == _honest_score()


def test_the_killer_could_not_read_the_salt_write_results_or_signal_the_grader(runs):
    (got,) = runs["reports"]["kill_grader"]
    assert got["salt"] == "refused 13" and got["results"] == "refused 13"
    assert got["killed"] == [] and len(got["refused"]) >= 3  # reaper, zygote, grader, bash
    assert all(errno == 1 for _pid, errno in got["refused"])
    assert runs["data"]["killer"]["score"] == _honest_score()


def test_source_and_results_stayed_closed_to_the_student(runs):
    for trick in ("read_source", "write_results", "rewrite_scripts"):
        (got,) = runs["reports"][trick]
        assert got and all(v == "refused 13" for v in got.values()), (trick, got)
    for name in ("quiet", "killer"):
        root = runs["roots"][name]
        after = _digest(root / "source")
        after["run_autograder"] = hashlib.sha256((root / "run_autograder").read_bytes()).hexdigest()
        assert after == runs["before"][name]
        assert sorted(p.name for p in (root / "results").iterdir()) == ["results.json"]
        assert SALT not in (root / "results" / "results.json").read_text()


def test_no_route_to_the_answers_was_open(runs):
    (routes,) = runs["reports"]["steal_answers"]
    assert "notebook" not in routes, routes
    assert routes.get("wheel", "refused").startswith("refused"), routes
    assert routes["package"].startswith("refused"), routes


def test_links_planted_in_tmp_led_nowhere(runs):
    (got,) = runs["reports"]["plant_links"]
    writes = {k: v for k, v in got.items() if k.endswith(" written")}
    assert writes and all(str(v).startswith("refused") for v in writes.values()), got
    assert runs["uids"] and runs["uids"] <= set(STUDENT_UIDS)
    for folder in WORLD_WRITABLE:  # what the student uid left was removed with it
        left = [p for p in Path(folder).iterdir() if p.lstat().st_uid in runs["uids"]]
        assert left == [], left


def test_the_grader_left_nothing_running(runs):
    assert runs["grader_left"] == {"quiet": [], "killer": [], "nobody": []}


def test_nothing_the_student_started_outlived_grading(runs):
    assert runs["reports"]["linger"][0]["started"] < runs["ended"]
    assert "wrote" not in json.dumps(runs["reports"]["linger"])
    assert runs["beats"] and max(runs["beats"]) < runs["ended"]
    assert runs["leftovers"] == []


def test_other_processes_and_the_digest_channel_were_out_of_reach(runs):
    (snoop,) = runs["reports"]["snoop"]
    assert snoop["environ"] == snoop["fd"] == snoop["mem"] == [], snoop
    (forge,) = runs["reports"]["forge_digest"]
    assert forge == {"fds": [], "folders": []}, forge


def test_an_unprivileged_grader_without_namespaces_refuses_to_grade(runs):
    """As ``nobody`` the grader cannot give the child another user: every test 0, the
    student told in Chinese, the instructor in English (stdout and extra_data)."""
    data, log = runs["data"]["nobody"], runs["logs"]["nobody"]
    assert runs["codes"]["nobody"] == 0, log
    assert data["score"] == 0.0 and data["tests"], log
    assert all(t["score"] == 0.0 for t in data["tests"])
    assert REFUSED in data["output"]
    refused = data["extra_data"]["refused"]
    assert "student code would run unprotected" in refused and "does not run as root" in refused
    assert "REFUSED TO GRADE" in log and "graded" not in log
