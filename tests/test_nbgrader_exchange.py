"""The whole round trip through nbgrader's exchange, with two Unix users.

The instructor (this test's user, root) and a student (a user made for the test) share
a temporary exchange (``c.Exchange.root``). nbgrader's own commands move the notebook;
the package's commands check, grade and write the pages:

instructor ``nbgrader generate_assignment --force`` -> ``release_assignment`` ->
student ``fetch_assignment`` -> ``autograder check`` -> ``submit`` -> instructor
``collect`` -> ``autograder grade`` -> a hand grade through nbgrader's Gradebook API ->
``autograder feedback .`` -> ``release_feedback`` -> student ``fetch_feedback``.

The student runs an interpreter they can read: this one, else a virtual environment on
the system's Python of the same version holding this environment's packages (here the
interpreter is a pyenv under root's 0700 home). Making the student needs root; elsewhere
the test is skipped, saying so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest
from pipeline_helpers import ROOT, SUBPROCESS_PATH, cli_in_process, mini_repo, read_nb, write_nb

from autograder.authoring import cells as nbs
from autograder.authoring.course import nbgrader
from autograder.authoring.views import HEADER_ID
from autograder.samples import PERFECT
from autograder.samples.submission import make_submission
from autograder.settings import SELF_CHECK_ID

pytestmark = pytest.mark.e2e

A = "q4_single_token"  # the quickest assignment to grade
WRITTEN = "written_linear_map"
HAND_SCORE, COMMENT = 3.5, "推理清楚，少了一个反例。"
COURSE_ID = "llm-lecture9-self-attention"


def _runs(python: str, user: str) -> bool:
    try:
        return subprocess.run([python, "-c", "import numpy, nbgrader"], capture_output=True,
                              env={"PYTHONPATH": os.pathsep.join([str(ROOT), SUBPROCESS_PATH])},
                              **_as(user)).returncode == 0
    except PermissionError:  # under a folder only root may enter
        return False


def _student_python(user: str, home: Path) -> str | None:
    """An interpreter ``user`` can run with this environment's packages: this one, else a
    virtual environment in their home on the system's Python of the same version, its
    packages hard links to this environment's (the sandbox shows the child its own
    interpreter's tree only, so a path entry pointing elsewhere would not do)."""
    if _runs(sys.executable, user):
        return sys.executable
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/local/bin:/usr/bin:/bin")
    if system is None:
        return None
    venv = home / "venv"
    subprocess.run([system, "-m", "venv", "--without-pip", str(venv)], check=True,
                   capture_output=True)
    packages = venv / "lib" / version / "site-packages"
    shutil.rmtree(packages)
    linked = subprocess.run(["cp", "-al", sysconfig.get_paths()["purelib"], str(packages)],
                            capture_output=True)
    if linked.returncode != 0:  # another file system: hard links cannot cross it
        return None
    python = str(venv / "bin" / "python")
    return python if _runs(python, user) else None


def _as(user: str) -> dict:
    """subprocess's arguments that run a command as ``user`` alone (no root groups)."""
    return {"user": user, "group": user, "extra_groups": []}


class Student:
    """A Unix user made for the test, with a home of its own outside root's /tmp folders."""

    def __init__(self, exchange: Path) -> None:
        self.name = f"ag-e2e-{os.getpid()}"
        self.home = Path(tempfile.mkdtemp(prefix="ag-e2e-home-", dir="/tmp"))
        try:
            subprocess.run([shutil.which("useradd"), "--system", "--user-group",
                            "--no-create-home", "--home-dir", str(self.home), "--shell",
                            "/usr/sbin/nologin", self.name], check=True, capture_output=True)
            shutil.chown(self.home, self.name, self.name)
            (self.home / "nbgrader_config.py").write_text(
                f"c = get_config()  # noqa: F821\nc.Exchange.root = {str(exchange)!r}\n"
                f"c.CourseDirectory.course_id = {COURSE_ID!r}\n", encoding="utf-8")
            self.python = _student_python(self.name, self.home)
        except BaseException:
            self.remove()
            raise

    def run(self, *args: str) -> subprocess.CompletedProcess:
        env = {"HOME": str(self.home), "PATH": "/usr/bin:/bin",
               "PYTHONPATH": os.pathsep.join([str(ROOT), SUBPROCESS_PATH]),
               "PYTHONWARNINGS": "ignore", "AUTOGRADER_CHECK_DAEMON": "0",
               "XDG_RUNTIME_DIR": str(self.home), "LANG": "C.UTF-8"}
        return subprocess.run([self.python, "-m", *args], cwd=self.home, env=env,
                              capture_output=True, text=True, timeout=600, **_as(self.name))

    def remove(self) -> None:
        subprocess.run([shutil.which("userdel") or "userdel", self.name], capture_output=True)
        shutil.rmtree(self.home, ignore_errors=True)


def _ok(done: subprocess.CompletedProcess, what: str) -> subprocess.CompletedProcess:
    assert done.returncode == 0, f"{what}: exit {done.returncode}\n{done.stdout[-2000:]}\n" \
                                 f"{done.stderr[-3000:]}"
    return done


def _answer(student: Student) -> None:
    """The student writes the answer key's code and an answer in the fetched notebook."""
    path = student.home / A / f"{A}.ipynb"
    nb = make_submission(read_nb(ROOT / "source" / A / f"{A}.ipynb"), read_nb(path), PERFECT)
    write_nb(nb, path)
    shutil.chown(path, student.name, student.name)


def _hand_grade(course: Path, student: str) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        gb.find_grade(WRITTEN, A, A, student).manual_score = HAND_SCORE
        gb.find_comment(WRITTEN, A, A, student).manual_comment = COMMENT
        gb.db.commit()


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory):
    """Every step once; what each printed and the page the student fetched."""
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("needs root and useradd to make the student's Unix user")
    exchange = Path(tempfile.mkdtemp(prefix="ag-e2e-exchange-", dir="/tmp"))
    os.chmod(exchange, 0o777)  # as nbgrader's docs set up /srv/nbgrader/exchange
    try:
        student = Student(exchange)
    except BaseException:
        shutil.rmtree(exchange, ignore_errors=True)
        raise
    try:
        if student.python is None:
            pytest.skip(f"the student user cannot run {sys.executable}, and no system "
                        f"Python {sys.version_info.major}.{sys.version_info.minor} with this "
                        "environment's packages hard-linked under /tmp could stand in")
        course = mini_repo(tmp_path_factory.mktemp("exchange") / "course", (A,))
        with open(course / "nbgrader_config.py", "a", encoding="utf-8") as config:
            config.write(f"\nc.Exchange.root = {str(exchange)!r}\n")
        steps = {}
        for args in (["generate_assignment", A, "--force"], ["release_assignment", A]):
            _ok(nbgrader(args, course, timeout=300), f"nbgrader {args[0]}")
        _ok(student.run("nbgrader", "fetch_assignment", A), "student fetch_assignment")
        steps["fetched"] = read_nb(student.home / A / f"{A}.ipynb")
        _answer(student)
        steps["check"] = student.run("autograder.cli", "check", f"{A}/{A}.ipynb")
        _ok(student.run("nbgrader", "submit", A), "student submit")
        _ok(nbgrader(["collect", A], course, timeout=300), "nbgrader collect")
        # the instructor's own commands in this process (a test of what they do; the
        # student's are the ones that need a process, as another user)
        steps["grade"] = _ok(cli_in_process(course, "grade", "submitted", "--out", "grades"),
                             "autograder grade")
        _hand_grade(course, student.name)
        steps["feedback"] = _ok(cli_in_process(course, "feedback", "."),
                               "autograder feedback")
        _ok(nbgrader(["release_feedback", A], course, timeout=300), "nbgrader release_feedback")
        _ok(student.run("nbgrader", "fetch_feedback", A), "student fetch_feedback")
        [page] = (student.home / A / "feedback").glob(f"*/{A}.html")
        yield course, student.name, steps, page.read_text(encoding="utf-8")
    finally:
        student.remove()
        shutil.rmtree(exchange, ignore_errors=True)


def test_the_student_checks_the_fetched_notebook(round_trip):
    """The release nbgrader made keeps the 作答说明 and the check cell (the course's
    nbgrader_config.py), and ``autograder check`` passes the student's answers."""
    _course, _student, steps, _page = round_trip
    fetched = steps["fetched"]
    assert fetched.cells[0].id == HEADER_ID
    assert nbs.grade_id(fetched.cells[-1]) == SELF_CHECK_ID
    check = steps["check"]
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]


def test_the_collected_submission_is_graded_into_nbgrader_s_gradebook(round_trip):
    from nbgrader.api import Gradebook

    from autograder.engine.host.manifest import load

    course, student, steps, _page = round_trip
    assert student in steps["grade"].stdout
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        submitted = gb.find_submission(A, student)
        assert submitted.score == load(A).auto_max + HAND_SCORE  # every check passed


def test_the_student_s_fetched_page_shows_the_hand_grade(round_trip):
    from autograder.engine.host.manifest import load

    _course, _student, steps, page = round_trip
    assert "1 with hand grades" in steps["feedback"].stdout
    assert f"{HAND_SCORE:g} / 4" in page and COMMENT in page
    auto = load(A).auto_max
    assert f"总分 <b>{auto + HAND_SCORE:g} / {auto + 4:g}</b>" in page
    assert "BEGIN HIDDEN TESTS" not in page
