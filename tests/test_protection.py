"""Protection is decided once, shown everywhere, and refused where it is missing.

Five machines are simulated with ``tests/nonamespaces.py`` (Docker's seccomp profile;
``--partial``: user namespaces allowed, mounts refused; ``--uid``: a non-root grader):
this one as it is (root, namespaces), Docker as root with this checkout's Python (under
``/root``, mode 0700, which a student uid cannot read), Docker as ``nobody``, and the
partial sandbox as root and as ``nobody``. In each, ``autograder doctor`` must say what
``autograder grade`` then does. As root under the partial sandbox, with the package
and the course closed, a hostile submission tries every read issue 29 names: it runs
as a student uid, imports nothing of the grader and sees nothing of the course.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gradescope_env import LAUNCHER, NOBODY, open_base, readable_python, require_root, student_base
from pipeline_helpers import cli_in_process

from autograder.authoring import cells as nbs
from autograder.engine.host import protection
from autograder.engine.host.protection import UNPROTECTED, Verdict, decide
from autograder.engine.protocol.limits import Protection
from autograder.errors import Unprotected
from autograder.settings import STUDENT_SLOTS, STUDENT_UID, course_setting

REPO = Path(__file__).resolve().parent.parent
A = "q1_value_scaling"
RELEASE = REPO / "release" / A / f"{A}.ipynb"
CLI = "import sys; from autograder.cli import main; sys.exit(main())"

PROBE = r'''
import importlib, json, os
_got = {"uid": os.getuid()}
try:
    _ref = importlib.import_module("autograder.bank.lib." + "reference")
    softmax, attention_weights, attention = _ref.softmax, _ref.attention_weights, _ref.attention
    _got["reference"] = "imported " + str(_ref.__file__)
except Exception as _e:
    _got["reference"] = "refused " + type(_e).__name__
for _path in PATHS:
    try:
        _got[_path] = sorted(os.listdir(_path)) if os.path.isdir(_path) else \
            open(_path, "rb").read(64).hex()
    except OSError as _e:
        _got[_path] = "refused %d" % _e.errno
_pid, _seen = os.getpid(), []
for _ in range(10):  # the ancestors, up to the grader: their folders and open files
    try:
        _pid = int(open("/proc/%d/stat" % _pid).read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        break
    if _pid <= 1:
        break
    for _what in ("cwd", "fd"):
        try:
            _seen.append(sorted(os.listdir("/proc/%d/%s" % (_pid, _what))))
        except OSError as _e:
            _seen.append("refused %d" % _e.errno)
_got["ancestors"] = _seen
print("PROBE" + json.dumps(_got))
'''


# ------------------------------------------------------------------ the verdict itself


def test_this_machine_grades_in_namespaces():
    require_root()
    verdict = decide()
    assert verdict.level == Protection.NAMESPACES and not verdict.refusal(False)
    assert verdict.line().startswith("protection: namespaces (")


def test_none_is_refused_unless_accepted_and_a_blocked_root_always():
    none = Verdict(Protection.NONE, "namespaces refused")
    assert "--unprotected" in none.refusal(False) and "salt" in none.refusal(False)
    assert none.refusal(True) == "" and none.marker == UNPROTECTED
    with pytest.raises(Unprotected, match="^refusing to grade: protection here is none"):
        none.require(False)
    blocked = Verdict(Protection.SEPARATE_USER, "x", blocked="uid 60600 cannot read /root")
    assert "never runs as root" in blocked.refusal(True) and "/root" in blocked.refusal(True)


def test_the_package_and_the_course_must_be_closed_to_the_student_uid(monkeypatch):
    require_root()
    user = protection.studentuser.StudentUser(STUDENT_UID, STUDENT_UID)
    base = open_base("protection-unit-")
    try:
        course = base / "course"
        (course / "submitted").mkdir(parents=True, mode=0o755)
        course.chmod(0o755)
        copy = base / "copy" / "autograder"
        copy.mkdir(parents=True)
        monkeypatch.setattr(protection, "grader_copies", lambda: [copy])
        monkeypatch.setattr(protection.studentuser, "unreadable_python", lambda _user: [])
        opened = protection._separate_user_blocked(user, [course / "out", course / "submitted"])
        assert f"could read {base / 'copy' / 'autograder'} {course} (" in opened  # the tops
        assert f"`chmod o-rwx {copy} {course}`" in opened
        course.chmod(0o700)
        copy.chmod(0o700)
        assert protection._separate_user_blocked(user, [course / "out", course]) == ""
    finally:
        shutil.rmtree(base)


def test_allow_unprotected_is_read_from_the_course_config(tmp_path):
    assert course_setting(tmp_path, "allow_unprotected", False) is False
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n"
                                                 "c.Autograder.allow_unprotected = True\n")
    assert course_setting(tmp_path, "allow_unprotected", False) is True


# ------------------------------------------------------------------ five machines


def _course(folder: Path, students: dict[str, nbs.NotebookNode], owner: int = 0) -> Path:
    """A course folder: config, two submissions, earlier results; owned by ``owner``."""
    (folder / "out").mkdir(parents=True)
    (folder / "out" / "scores.csv").write_text("student,auto_score\nearlier,20\n")
    (folder / "nbgrader_config.py").write_text("c = get_config()\n")
    for student, nb in students.items():
        nbs.write(nb, folder / "submitted" / student / A / f"{A}.ipynb")
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, owner, owner)
    folder.chmod(0o700)
    return folder


def _hostile(paths: list[str]) -> nbs.NotebookNode:
    nb = nbs.read(RELEASE)
    cell = next(c for c in nb.cells if nbs.grade_id(c) == "softmax_impl")
    cell.source = PROBE.replace("PATHS", repr(paths))
    return nb


@pytest.fixture(scope="module")
def machines(tmp_path_factory):
    """Every simulated machine's doctor and grade runs (see the module docstring)."""
    with student_base(tmp_path_factory, "protection-") as base:
        yield _run_machines(base)


def _run_machines(base: Path) -> dict:
    python = readable_python(base)
    closed = base / "site"
    shutil.copytree(REPO / "autograder", closed / "autograder",
                    ignore=shutil.ignore_patterns("__pycache__"))
    closed.chmod(0o755)
    (closed / "autograder").chmod(0o700)  # as setup.sh closes the bundle's copy
    blank = nbs.read(RELEASE)
    root_course = _course(base / "root-course", {"ann": blank})
    user_course = _course(base / "user-course", {"ann": blank}, owner=NOBODY)
    partial_course = base / "partial-course"
    secrets = [str(partial_course / p) for p in ("", "submitted", "submitted/ann", "out",
                                                 "out/scores.csv", "gradebook.db",
                                                 ".autograder-salt")]
    secrets += [str(closed / "autograder"), str(closed / "autograder/bank/lib/reference.py")]
    _course(partial_course, {"ann": blank, "mallory": _hostile(secrets)})
    repo_env = {"PYTHONPATH": str(REPO)}
    closed_env = {"PYTHONPATH": str(closed)}
    runs = {
        "namespaces": _both(root_course, sys.executable, None, repo_env),
        "docker-root": _both(root_course, sys.executable, [], repo_env, unprotected_too=True),
        "docker-user": _both(user_course, python, ["--uid", NOBODY], repo_env,
                             unprotected_too=True),
        "partial-root": _both(partial_course, python, ["--partial"], closed_env, check=True),
        "partial-user": _both(user_course, python, ["--partial", "--uid", NOBODY], repo_env,
                              check=True),
    }
    runs["courses"] = {"root": root_course, "user": user_course, "partial": partial_course}
    runs["secrets"] = secrets
    return runs


def _both(course: Path, python: Path | str, launcher: list | None, env: dict, *,
          unprotected_too: bool = False, check: bool = False) -> dict:
    """``autograder doctor``, then ``autograder grade`` (and with ``--unprotected``, and
    ``autograder check`` on the blank notebook), run by ``python``, under the launcher
    with ``launcher`` options unless it is None."""
    python = str(python)
    command = [python, *([str(LAUNCHER), *map(str, launcher), python] if launcher is not None
                         else []), "-c", CLI]
    full_env = {**os.environ, **env, "HOME": str(course), "AUTOGRADER_CHECK_DAEMON": "0"}

    def run(*args: str) -> subprocess.CompletedProcess:
        if launcher is None and python == sys.executable:  # this machine as it is: the
            # commands themselves, in this process (4 s less than a subprocess)
            return cli_in_process(course, *args, env={"HOME": str(course)})
        return subprocess.run([*command, *args], cwd=course, env=full_env, capture_output=True,
                              text=True, timeout=600)

    out = {"doctor": run("doctor", "--quick", "--course", str(course))}
    grade = ["grade", str(course / "submitted"), "--out", str(course / "out"), "-j", "1",
             "--timeout", "120", "--cell-timeout", "20"]
    out["grade"] = run(*grade)
    out["written"] = sorted(p.name for p in course.iterdir())
    if unprotected_too:
        out["unprotected"] = run(*grade, "--unprotected")
    if check:
        out["check"] = run("check", str(course / "submitted" / "ann" / A / f"{A}.ipynb"))
    return out


def _doctor_says(run: subprocess.CompletedProcess) -> str:
    [line] = [x for x in run.stdout.splitlines() if " protection: " in x]
    return line.split(" protection: ", 1)[1]


@pytest.mark.parametrize("machine", ["namespaces", "docker-root", "docker-user",
                                     "partial-root", "partial-user"])
def test_doctor_says_what_grade_then_does(machines, machine):
    doctor, grade = machines[machine]["doctor"], machines[machine]["grade"]
    said = _doctor_says(doctor)
    if grade.returncode == 0:
        assert doctor.returncode == 0, doctor.stdout
        assert f"protection: {said}" in grade.stdout.replace("\n", " "), grade.stdout
    else:
        assert grade.returncode == 2 and doctor.returncode == 1, (grade.stderr, doctor.stdout)
        [error] = grade.stderr.strip().splitlines()  # one line
        assert said == "grade would refuse: " + error.removeprefix("error: refusing to grade: ")
        assert "Traceback" not in grade.stderr + doctor.stderr


def test_each_machine_gets_the_protection_it_allows(machines):
    expect = {"namespaces": "namespaces", "partial-root": "separate-user"}
    for machine, level in expect.items():
        grade = machines[machine]["grade"]
        assert grade.returncode == 0, grade.stderr
        rows = list(csv.DictReader(open(_out(machines, machine) / "scores.csv")))
        assert {r["protection"] for r in rows} == {level}
    for machine in ("docker-root", "docker-user", "partial-user"):
        assert machines[machine]["grade"].returncode == 2, machine


def _out(machines, machine: str) -> Path:
    course = {"namespaces": "root", "partial-root": "partial"}.get(machine, "user")
    return machines["courses"][course] / "out"


def test_a_root_grader_never_runs_student_code_as_root(machines):
    """Docker as root, a Python under /root (0700): the separate user cannot import
    anything, so grading refuses, naming the folder to fix; --unprotected changes nothing."""
    run = machines["docker-root"]
    for grade in (run["grade"], run["unprotected"]):
        assert grade.returncode == 2 and "never runs as root" in grade.stderr, grade.stderr
        assert "stopped at /root, mode 0700" in grade.stderr and "chmod o+x /root" in grade.stderr


def test_a_non_root_grader_without_namespaces_refuses_and_writes_nothing(machines):
    run = machines["docker-user"]
    [error] = run["grade"].stderr.strip().splitlines()
    assert error.startswith("error: refusing to grade: protection here is none (")
    for words in ("namespaces refused", "salt", "--unprotected", "autograder doctor", "root"):
        assert words in error, words
    assert run["written"] == ["nbgrader_config.py", "out", "submitted"]  # no salt, no gradebook


def test_unprotected_grading_is_marked_unprotected_everywhere(machines):
    grade, out = machines["docker-user"]["unprotected"], machines["courses"]["user"] / "out"
    assert grade.returncode == 0, grade.stderr
    console = grade.stdout.replace("\n", " ")
    assert f"protection: {UNPROTECTED}" in console and "grading UNPROTECTED" in console
    [row] = list(csv.DictReader(open(out / "scores.csv")))
    assert row["protection"] == UNPROTECTED
    assert json.loads((out / "scores.json").read_text())[0]["protection"] == UNPROTECTED
    assert "unprotected" in (out / "report.html").read_text()
    page = (out / "feedback" / "ann" / A / f"{A}.html").read_text()
    assert UNPROTECTED in page


def test_a_hostile_submission_under_a_separate_user_gains_nothing_and_sees_nothing(machines):
    out, course = _out(machines, "partial-root"), machines["courses"]["partial"]
    rows = {r["student"]: r for r in csv.DictReader(open(out / "scores.csv"))}
    assert rows["mallory"]["auto_score"] == rows["ann"]["auto_score"] == "0.0"  # blank: 0
    autograded = json.loads((course / "autograded" / "mallory" / A / f"{A}.ipynb").read_text())
    text = "".join("".join(o.get("text", "")) for c in autograded["cells"]
                   for o in c.get("outputs", []))
    got = json.loads(text.split("PROBE", 1)[1].splitlines()[0])
    assert STUDENT_UID <= got["uid"] < STUDENT_UID + STUDENT_SLOTS  # never 0
    assert got["reference"].startswith("refused"), got
    for path in machines["secrets"]:
        assert got[path] == "refused 13", (path, got[path])
    assert got["ancestors"] and all(a == "refused 13" for a in got["ancestors"]), got


@pytest.mark.parametrize("machine", ["partial-root", "partial-user"])
def test_check_runs_in_a_partial_sandbox(machines, machine):
    """Namespaces allowed, mounts refused: the self-check falls back to what is allowed
    (a separate user as root, the student's own user otherwise) and reports; it used to
    end in a traceback pointing to a log that was never written."""
    check = machines[machine]["check"]
    assert check.returncode == 1, check.stderr  # the blank notebook fails its checks
    assert "Traceback" not in check.stderr and "log" not in check.stderr, check.stderr
    assert "softmax" in check.stdout, check.stdout


@pytest.mark.parametrize("layout", ["course", "other"])
def test_a_folder_that_is_not_a_submissions_folder_is_refused(tmp_path, layout):
    """``autograder grade .`` on the course root graded the repository itself (32 rows
    such as autograder/bank); any folder without submissions of these assignments is
    one line, exit 2, and nothing written."""
    from click.testing import CliRunner

    from autograder.cli import main

    folder = REPO if layout == "course" else tmp_path / "folder"
    if layout == "other":
        (folder / "docs" / "lecture").mkdir(parents=True)
        (folder / "autograder" / "bank").mkdir(parents=True)
    done = CliRunner().invoke(main, ["grade", str(folder), "--out", str(tmp_path / "out")])
    assert done.exit_code == 2 and len(done.output.strip().splitlines()) == 1, done.output
    assert done.output.startswith("error: ") and not (tmp_path / "out").exists()


def test_the_pool_refuses_a_zygote_that_gives_another_protection(tmp_path):
    """Decided up front: separate-user. The zygote (started without namespaces, as root,
    whose students cannot read this Python) would give none: no child runs."""
    require_root()
    from autograder.engine.host.pool import Submission, grade_tasks
    from autograder.settings import GradeSettings

    if not protection.studentuser.unreadable_python(
            protection.studentuser.StudentUser(STUDENT_UID, STUDENT_UID)):
        pytest.skip("this Python is readable by the student uid: the zygote would agree")
    expected = Verdict(Protection.SEPARATE_USER, "decided up front")
    with pytest.raises(Unprotected, match="gave none where separate-user was expected"):
        grade_tasks([Submission("ann", A, tmp_path)], GradeSettings(salt="x"), jobs=1,
                    verdict=expected)
