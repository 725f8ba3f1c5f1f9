"""nbgrader's own commands on the course: the instructor's ``nbgrader generate_assignment``
makes the release ``autograder build`` makes, and ``autograder grade`` writes into any
gradebook nbgrader's commands left, keeping every hand grade and comment.

Each gradebook here is written by real ``nbgrader generate_assignment`` in a copy of the
course (into an empty gradebook made first, as ``autograder build`` makes it); the scores
written into it are synthetic (the exchange round trip,
``test_nbgrader_exchange.py``, grades for real).
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest
from pipeline_helpers import ROOT, A, mini_repo, read_nb

from autograder.authoring import cells as nbs
from autograder.authoring.build import check
from autograder.authoring.course import nbgrader
from autograder.authoring.manifests import normalise
from autograder.authoring.views import HEADER_ID
from autograder.engine.host.gradebook import check_gradebook, open_gradebook, write_gradebook
from autograder.engine.host.gradebook_cells import AGREES, MERGE, REPLACE
from autograder.engine.host.job import CellResult
from autograder.engine.host.manifest import load
from autograder.engine.host.pool import Graded, Submission
from autograder.errors import CourseError
from autograder.integrations.nbgrader.grade import grade
from autograder.settings import SELF_CHECK_ID

pytestmark = pytest.mark.e2e

#: The course's config without its first release step: a course set up before it, or an
#: instructor's plain nbgrader config (nbgrader then releases the raw source).
PLAIN = "plain nbgrader_config.py"


def _config(setting: str) -> str:
    text = (ROOT / "nbgrader_config.py").read_text(encoding="utf-8")
    if setting == PLAIN:
        line = "c.GenerateAssignment.preprocessors = generate_assignment_preprocessors()"
        assert line in text
        return text.replace(line, "")
    return f"{text}\nc.Autograder.extensions = {setting!r}\n"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """setting -> a copy of the course after ``nbgrader generate_assignment A --force``
    with that extension setting (or :data:`PLAIN`), made when first asked for."""
    made: dict[str, Path] = {}

    def course(setting: str) -> Path:
        if setting not in made:
            repo = mini_repo(tmp_path_factory.mktemp("generated") / "repo")
            (repo / "nbgrader_config.py").write_text(_config(setting), encoding="utf-8")
            # the empty gradebook as autograder build makes it (nbgrader would ask the
            # alembic command in a subprocess: 3 s; the exchange round trip has it do so)
            open_gradebook(repo / "gradebook.db").close()
            done = nbgrader(["generate_assignment", A, "--force"], repo, timeout=300)
            assert done.returncode == 0, done.stderr[-3000:]
            made[setting] = repo
        return made[setting]

    return course


def _rows(path: Path) -> dict[str, set]:
    with open_gradebook(path) as gb:
        notebook = gb.find_notebook(A, A)
        return {kind: {(c.name, getattr(c, "max_score", None)) for c in getattr(notebook, kind)}
                for kind in ("grade_cells", "solution_cells", "source_cells")}


def _manifest_rows() -> dict[str, set]:
    rows = load(A).gradebook
    return {kind: {(c["name"], c.get("max_score")) for c in rows[kind]}
            for kind in ("grade_cells", "solution_cells", "source_cells")}


def test_nbgrader_generate_assignment_writes_what_build_writes(generated):
    """The course's own setting (practice): the release keeps the 作答说明 first and the
    check cell last, it is the committed release (outputs aside, as ``autograder build
    --check`` compares; ``test_build.py`` shows a fresh build is the committed one), and
    the gradebook holds the package's cells."""
    repo = generated("practice")
    release = read_nb(repo / "release" / A / f"{A}.ipynb")
    assert release.cells[0].id == HEADER_ID and nbs.grade_id(release.cells[-1]) == SELF_CHECK_ID
    assert normalise(release) == normalise(read_nb(ROOT / "release" / A / f"{A}.ipynb"))
    assert check_gradebook(repo / "gradebook.db", {A: load(A)}) == {A: AGREES}
    assert _rows(repo / "gradebook.db") == _manifest_rows()


def test_nbgrader_generate_assignment_follows_the_extension_setting(generated):
    """``c.Autograder.extensions = "omit"``: nbgrader's release is the one ``autograder
    build --extensions omit`` writes (the copy's other views, built for practice, are
    stale, as they should be)."""
    repo = generated("omit")
    release = Path("release") / A / f"{A}.ipynb"
    stale = check(root=repo, extensions="omit")
    assert release not in stale and Path("exercises") / A / f"{A}.ipynb" in stale
    assert len(read_nb(repo / release).cells) < len(read_nb(ROOT / release).cells)


def test_build_refuses_a_config_that_does_not_release_through_the_package(generated):
    """A course whose nbgrader_config.py lacks the first step (set up before it) would
    build a release without the check cell: one line saying the line to add."""
    with pytest.raises(CourseError, match=r"does not release through the package: add "
                                          r"`c\.GenerateAssignment\.preprocessors = "):
        check(root=generated(PLAIN))


def _graded(student: str) -> Graded:
    cells = [CellResult(c.grade_id, c.grade_id, c.points, c.is_manual,
                        score=None if c.is_manual else c.points) for c in load(A).graded]
    return Graded(Submission(student, A, Path("/nonexistent")), cells=cells, notebook="{}")


@pytest.mark.parametrize("setting", [PLAIN, "omit"])
def test_grading_replaces_the_cells_of_another_release(generated, tmp_path, setting):
    """Whatever release nbgrader saved (the extensions' grade cells and no check cell,
    or the extensions left out), with no submission recorded yet the package's cells
    replace it."""
    db = tmp_path / "gradebook.db"
    shutil.copy(generated(setting) / "gradebook.db", db)
    assert _rows(db) != _manifest_rows()
    assert check_gradebook(db, {A: load(A)}) == {A: REPLACE}
    assert write_gradebook(db, [_graded("ann")], {A: load(A)}) == 1
    assert _rows(db) == _manifest_rows()
    with open_gradebook(db) as gb:
        assert gb.find_submission(A, "ann").score == load(A).auto_max
        # the kernel nbgrader autograde gives a submission, as generate_assignment saved it
        assert json.loads(gb.find_notebook(A, A).kernelspec) \
            == load(A).notebook_metadata["kernelspec"]


def _hand_graded(db: Path, cell: str, student: str = "bob") -> None:
    """``student``'s submission in nbgrader's gradebook, as ``nbgrader autograde`` and
    formgrader leave it: an automatic score on every code cell, ``cell`` hand graded with
    a comment, and the core's written answer hand graded with extra credit."""
    with open_gradebook(db) as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SQLAlchemy's autoflush notes on nbgrader's own code
        gb.update_or_create_student(student)
        submission = gb.add_submission(A, student)
        for grade in submission.notebooks[0].grades:
            grade.auto_score = 0.0 if grade.cell.cell_type == "code" else None
        for name in (cell, "written_qk_vs_v"):
            gb.find_grade(name, A, A, student).manual_score = 1.5
            gb.find_comment(name, A, A, student).manual_comment = f"comment on {name}"
        gb.find_grade("written_qk_vs_v", A, A, student).extra_credit = 0.5
        gb.db.commit()


def _extension_cell(db: Path, cell_type: str) -> str:
    wanted = {name for name, _ in _manifest_rows()["grade_cells"]}
    with open_gradebook(db) as gb:
        return next(c.name for c in gb.find_notebook(A, A).grade_cells
                    if c.name not in wanted and c.cell_type == cell_type)


@pytest.mark.parametrize("setting", [PLAIN, "omit"])
def test_grading_keeps_hand_grades_while_bringing_the_cells_into_agreement(generated, tmp_path,
                                                                           setting):
    """Submissions already recorded under another release: the extension cells nobody
    hand graded go (PLAIN: graded there), the ones the package has are added with a
    grade and comment row for every submission (omit: left out there); the core's hand
    grade, extra credit and comment stay, and the new scores are written beside them."""
    db = tmp_path / "gradebook.db"
    shutil.copy(generated(setting) / "gradebook.db", db)
    before = _rows(db)
    _hand_graded(db, "written_apple")
    assert check_gradebook(db, {A: load(A)}) == {A: MERGE}
    assert write_gradebook(db, [_graded("bob"), _graded("cat")], {A: load(A)}) == 2
    assert _rows(db) == _manifest_rows()
    with open_gradebook(db) as gb:
        kept = gb.find_grade("written_qk_vs_v", A, A, "bob")
        assert (kept.manual_score, kept.extra_credit) == (1.5, 0.5)
        assert gb.find_comment("written_qk_vs_v", A, A, "bob").manual_comment \
            == "comment on written_qk_vs_v"
        assert gb.find_grade("test_softmax", A, A, "bob").auto_score == 2.0
        bob = gb.find_submission_notebook(A, A, "bob")
        assert {g.name for g in bob.grades} == {n for n, _ in _manifest_rows()["grade_cells"]}
        assert {c.name for c in bob.comments} \
            == {n for n, _ in _manifest_rows()["solution_cells"]}
        auto = load(A).auto_max
        assert gb.find_submission(A, "bob").score == auto + 1.5 + 0.5 + 1.5
        assert gb.find_submission(A, "cat").score == auto
    changed = {kind: before[kind] ^ _manifest_rows()[kind] for kind in before}
    assert changed["solution_cells"] if setting == "omit" else changed["grade_cells"]
    assert check_gradebook(db, {A: load(A)}) == {A: AGREES}


def test_a_hand_grade_on_a_cell_the_release_lacks_is_refused_before_grading(generated, tmp_path):
    """Only deleting what the instructor entered would make the gradebook agree: grade
    stops before anything is written, with the one action that fixes it."""
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(generated(PLAIN) / "gradebook.db", course / "gradebook.db")
    extension = _extension_cell(course / "gradebook.db", "markdown")
    _hand_graded(course / "gradebook.db", extension)
    before = (course / "gradebook.db").read_bytes()
    (course / "submitted" / "bob" / A).mkdir(parents=True)
    with pytest.raises(CourseError) as refused:
        grade(submissions=course / "submitted", out=tmp_path / "out")
    message = str(refused.value)
    assert extension in message and "c.Autograder.extensions" in message
    assert "\n" not in message and "autograder build" in message
    assert not (tmp_path / "out").exists() and not (course / ".autograder-salt").exists()
    assert (course / "gradebook.db").read_bytes() == before


def test_a_file_that_is_no_gradebook_is_one_line_with_the_action(tmp_path):
    (tmp_path / "gradebook.db").write_bytes(b"not a database" * 100)
    with pytest.raises(CourseError, match="is not a gradebook nbgrader can read.*move it aside"):
        check_gradebook(tmp_path / "gradebook.db", {A: load(A)})
