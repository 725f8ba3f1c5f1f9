"""LMS round trip: a Canvas (and a Moodle) "download submissions" zip through
``autograder grade``, then ``autograder export`` into the gradebook file that LMS imports.

The two downloads are graded by the command, in the test process; everything else here
reads names, zips and score tables without grading.
"""

from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path, PurePosixPath

import nbformat
import pytest
import warm_zygote
from click.testing import CliRunner
from pipeline_helpers import ROOT, A, cli_in_process, read_nb, sample_submissions, without_plots

from autograder.cli import main
from autograder.errors import CourseError
from autograder.integrations.lms import intake as lms
from autograder.integrations.lms import unzip
from autograder.integrations.lms.export import CANVAS_HEADER, MOODLE_HEADER, export

SALT = "test-lms"
CANVAS_FILES = {  # Canvas's names: <name>_[LATE_]<user id>_<attachment id>_<file>
    "perfect": "smithjohn_1001_5001_q1_value_scaling.ipynb",
    "mistake-naive_softmax": "doejane_LATE_1002_5002_q1_value_scaling-1.ipynb",
    "renamed": "leeann_1003_5003_homework.ipynb",
    "badjson": "wuwei_1004_5004_q1_value_scaling.ipynb",
    # a blank notebook uploaded under smithjohn's download name: Canvas prefixes it
    "blank": "mallorymei_1005_5009_smithjohn_1001_5001_q1_value_scaling.ipynb",
}
MOODLE_FILES = {  # Moodle's folders: <Full Name>_<participant id>_assignsubmission_file_/
    "perfect": "Zhang San_2001_assignsubmission_file_/q1_value_scaling.ipynb",
    "mistake-naive_softmax": "Li Si_2002_assignsubmission_file_/q1_value_scaling.ipynb",
}
#: Issue 20's Moodle case, in the flat layout: Mallory uploads a blank notebook named as
#: Alice's download name (a greedy pattern graded Alice on it, 0/17, and Mallory had no row).
MOODLE_FLAT = {
    "perfect": "Alice Wong_3001_assignsubmission_file_q1_value_scaling.ipynb",
    "blank": "Mallory Li_3002_assignsubmission_file_"
             "Alice Wong_3001_assignsubmission_file_q1_value_scaling.ipynb",
}


def _notebooks(base: Path) -> dict[str, bytes]:
    sample_submissions(base / "class", ("perfect", "mistake-naive_softmax"))
    found = {}
    for student in ("perfect", "mistake-naive_softmax"):
        nb = read_nb(base / "class" / "submitted" / student / A / f"{A}.ipynb")
        without_plots(nb)
        found[student] = nbformat.writes(nb).encode()
    found["renamed"] = found["perfect"]
    found["badjson"] = b'{"cells": ['
    found["blank"] = (ROOT / "release" / A / f"{A}.ipynb").read_bytes()
    return found


def _zip(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(open(path, encoding="utf-8")))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Both downloads graded by the command."""
    base = tmp_path_factory.mktemp("lms")
    nbs = _notebooks(base)
    canvas = _zip(base / "canvas.zip", {name: nbs[s] for s, name in CANVAS_FILES.items()})
    moodle = _zip(base / "moodle.zip", {name: nbs[s] for s, name in
                                        [*MOODLE_FILES.items(), *MOODLE_FLAT.items()]})
    (base / "salt").write_text(SALT)
    common = ["--salt-file", str(base / "salt"), "--jobs", "1", "--cell-timeout", "10"]
    # both in this process, one after the other, with the worker's warm zygote: Moodle's
    # through a subprocess cost 4.5 s of one core beside Canvas's (the command's own
    # start is run by test_protection's machines)
    with warm_zygote.shared():
        done = CliRunner().invoke(main, ["grade", str(canvas), "--out", str(base / "canvas-out"),
                                         *common])
    moodle = cli_in_process(Path.cwd(), "grade", str(moodle), "--out", str(base / "moodle-out"),
                            *common)
    return base, done, (moodle.returncode, moodle.stdout + moodle.stderr)


def _scores(out: Path) -> dict[str, dict]:
    return {r["student"]: r for r in json.loads((out / "scores.json").read_text("utf-8"))}


def test_a_canvas_zip_is_graded_under_canvas_user_ids(graded):
    base, done, _moodle = graded
    assert done.exit_code == 0, done.output
    rows = _scores(base / "canvas-out")
    assert set(rows) == {"1001", "1002", "1003", "1004", "1005"}
    assert rows["1001"]["auto_score"] == rows["1001"]["auto_max"] > 0
    assert rows["1002"]["lost"] == ["test_softmax_stable"]
    assert rows["1003"]["auto_score"] == rows["1003"]["auto_max"]  # found by its cells
    assert "文件名" in rows["1003"]["reason"]  # ...and told its name is wrong
    assert rows["1004"]["status"] == "failed" and "JSON" in rows["1004"]["reason"]
    roster = json.loads((base / "canvas-out" / "lms.json").read_text("utf-8"))
    assert roster["lms"] == "canvas"
    assert roster["students"]["1002"] == {"name": "doejane", "late": True,
                                          "files": {A: "q1_value_scaling-1.ipynb"},
                                          "ignored": []}
    assert (base / "canvas-out" / "feedback" / "1001" / A / f"{A}.html").is_file()
    assert (base / "canvas-out" / "gradebook.db").is_file()


def test_canvas_export_gives_one_row_per_student_with_their_ids(graded, tmp_path):
    base, _done, _moodle = graded
    out = tmp_path / "canvas.csv"
    done = CliRunner().invoke(main, ["export", str(base / "canvas-out"), "--to", "canvas",
                                     "--out", str(out), "--column",
                                     f"{A}=Lecture 9 Q1 (777)"])
    assert done.exit_code == 0, done.output
    rows = _rows(out)
    assert rows[0] == CANVAS_HEADER + ["Lecture 9 Q1 (777)"]
    by_id = {r[1]: r for r in rows[1:]}
    assert len(rows) == 6 and set(by_id) == {"1001", "1002", "1003", "1004", "1005"}
    scores = _scores(base / "canvas-out")
    for user, row in by_id.items():
        assert row[5] == ("" if user == "1005" else f"{scores[user]['auto_score']:g}")
    assert by_id["1001"][0] == "smithjohn" and by_id["1004"][5] == "0"


def test_a_moodle_zip_round_trips_to_the_grading_worksheet(graded, tmp_path):
    base, _done, (code, log) = graded
    assert code == 0, log
    scores = _scores(base / "moodle-out")
    assert set(scores) == {"2001", "2002", "3001", "3002"}
    out = tmp_path / "worksheet.csv"
    export(results=base / "moodle-out", to="moodle", out=out)
    rows = _rows(out)
    assert rows[0] == MOODLE_HEADER
    by_id = {r[0]: r for r in rows[1:]}
    assert set(by_id) == {f"Participant {i}" for i in (2001, 2002, 3001, 3002)}
    assert by_id["Participant 2001"][1] == "Zhang San"
    assert float(by_id["Participant 2002"][2]) == scores["2002"]["auto_score"]
    assert float(by_id["Participant 2001"][3]) == scores["2001"]["auto_max"]
    assert by_id["Participant 2001"][4].endswith("+00:00")


def test_a_file_named_as_another_student_s_download_grades_each_on_their_own(graded, tmp_path):
    """Issue 20's Moodle case: Alice is graded on her own notebook (full marks), and
    Mallory's file, whose name also reads as Alice's, is refused with the reason in
    her own row, left blank by the export."""
    base, done, (code, log) = graded
    assert code == 0, log
    scores = _scores(base / "moodle-out")
    alice, mallory = scores["3001"], scores["3002"]
    assert alice["status"] == "ok" and alice["auto_score"] == alice["auto_max"] > 0
    assert mallory["status"] == "refused" and "3001" in mallory["reason"]
    assert "not graded" in mallory["reason"] and mallory["auto_score"] == 0
    roster = json.loads((base / "moodle-out" / "lms.json").read_text("utf-8"))
    assert roster["students"]["3002"]["refused"] == [MOODLE_FLAT["blank"].split("_file_", 1)[1]]
    export(results=base / "moodle-out", to="moodle", out=tmp_path / "w.csv")
    grades = {r[0]: r[2] for r in _rows(tmp_path / "w.csv")[1:]}
    assert grades["Participant 3002"] == "" and float(grades["Participant 3001"]) > 0
    canvas = _scores(base / "canvas-out")  # the same trick on Canvas
    assert canvas["1005"]["status"] == "refused" and "1001" in canvas["1005"]["reason"]
    assert canvas["1001"]["auto_score"] == canvas["1001"]["auto_max"]


# ------------------------------------------------------------------ names


@pytest.mark.parametrize("name,lms_kind,student,filename,late", [
    ("smithjohn_1001_5001_q1_value_scaling.ipynb", "canvas", "1001", f"{A}.ipynb", False),
    ("doejane_LATE_1002_5002_q1-2.ipynb", "canvas", "1002", "q1-2.ipynb", True),
    ("late_doejane_1002_5002_q1.ipynb", "canvas", "1002", "q1.ipynb", True),
    ("张三_1005_5005_q1_value_scaling.ipynb", "canvas", "1005", f"{A}.ipynb", False),
    ("anon_Xy3zQ_5006_my_notebook.ipynb", "canvas", "anon_Xy3zQ", "my_notebook.ipynb", False),
    ("Zhang San_2001_assignsubmission_file_/q1.ipynb", "moodle", "2001", "q1.ipynb", False),
    ("Li Si_2002_assignsubmission_file_q1 (1).ipynb", "moodle", "2002", "q1 (1).ipynb", False),
    ("Participant_2003_assignsubmission_file_/sub/q1.ipynb", "moodle", "2003", "q1.ipynb",
     False),
])
def test_lms_names_give_the_lms_ids(name, lms_kind, student, filename, late):
    entry = lms.parse_name(PurePosixPath(name), Path(name))
    assert (entry.lms, entry.student, entry.filename, entry.late) == \
        (lms_kind, student, filename, late)


@pytest.mark.parametrize("name", ["q1_value_scaling.ipynb", "alice/q1/q1.ipynb",
                                  "smith_john_q1.ipynb"])
def test_other_names_are_not_lms_names(name):
    assert lms.parse_name(PurePosixPath(name), Path(name)) is None


def test_the_latest_upload_is_graded_and_the_others_recorded(tmp_path):
    nb = nbformat.writes(nbformat.v4.new_notebook()).encode()
    download = _zip(tmp_path / "d.zip", {"amy_7_100_q1_value_scaling.ipynb": nb,
                                         "amy_7_101_q1_value_scaling-1.ipynb": nb})
    intake = lms.open_download(download, assignment=None, work=tmp_path / "work")
    assert intake.students["7"]["files"] == {A: "q1_value_scaling-1.ipynb"}
    assert intake.students["7"]["ignored"] == ["q1_value_scaling.ipynb"]
    assert [p.name for p in (intake.folder / "7" / A).iterdir()] == [f"{A}.ipynb"]


# ------------------------------------------------------------------ unsafe or bad input


def _evil_zip(path: Path, name: str, data: bytes = b"{}", link: bool = False) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        info = zipfile.ZipInfo(name)
        if link:
            info.external_attr = (0o120777) << 16
        zf.writestr(info, data)
        zf.writestr("amy_7_100_q1_value_scaling.ipynb", b"{}")
    return path


@pytest.mark.parametrize("name,link,words", [
    ("../../escape_1_2_q1.ipynb", False, "outside the download"),
    ("/etc/escape_1_2_q1.ipynb", False, "outside the download"),
    ("C:/x/escape_1_2_q1.ipynb", False, "outside the download"),
    ("link_1_2_q1.ipynb", True, "symbolic link"),
])
def test_unsafe_zips_are_refused(tmp_path, name, link, words):
    download = _evil_zip(tmp_path / "evil.zip", name, b"/etc/passwd", link)
    with pytest.raises(CourseError, match=words):
        lms.open_download(download, assignment=None, work=tmp_path / "work")
    assert not (tmp_path / "escape_1_2_q1.ipynb").exists()


def test_a_member_larger_than_the_limit_is_refused_alone(tmp_path, monkeypatch):
    """One student's oversized upload is that student's refused row, never the class's
    error: the others are laid out as usual."""
    monkeypatch.setattr(unzip, "MAX_NOTEBOOK", 100)
    nb = nbformat.writes(nbformat.v4.new_notebook()).encode()[:90]
    download = _zip(tmp_path / "big.zip", {"amy_7_100_q1_value_scaling.ipynb": b"x" * 1000,
                                           "bob_8_101_q1_value_scaling.ipynb": nb})
    intake = lms.open_download(download, assignment=None, work=tmp_path / "work")
    remark = intake.remarks[("7", "q1_value_scaling")]
    assert remark.refused and "larger than" in remark.notes[0][1]
    assert (intake.folder / "8" / "q1_value_scaling").is_dir()
    assert ("8", "q1_value_scaling") not in intake.remarks
    assert not any((intake.folder / "7" / "q1_value_scaling").iterdir())


def test_a_notebook_not_named_by_the_lms_is_left_out_and_logged(tmp_path, caplog):
    nb = nbformat.writes(nbformat.v4.new_notebook()).encode()
    download = _zip(tmp_path / "d.zip", {"amy_7_100_q1_value_scaling.ipynb": nb,
                                         "notes/extra.ipynb": nb})
    intake = lms.open_download(download, assignment=None, work=tmp_path / "work")
    assert set(intake.students) == {"7"}
    assert "notes/extra.ipynb" in caplog.text and "not graded" in caplog.text


def test_only_notebooks_are_unpacked(tmp_path):
    nb = nbformat.writes(nbformat.v4.new_notebook()).encode()
    download = _zip(tmp_path / "d.zip", {"amy_7_100_q1_value_scaling.ipynb": nb,
                                         "amy_7_101_run.sh": b"rm -rf /",
                                         "__MACOSX/._amy_7_100_q1_value_scaling.ipynb": b"x"})
    lms.open_download(download, assignment=None, work=tmp_path / "work")
    unpacked = sorted(p.name for p in (tmp_path / "work" / "download").rglob("*") if p.is_file())
    assert unpacked == ["amy_7_100_q1_value_scaling.ipynb"]


def _cli_error(args: list[str]) -> str:
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 2, done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.output
    return lines[0]


def test_bad_input_is_one_line_with_what_to_do(tmp_path):
    out = str(tmp_path / "out")
    assert "does not exist" in _cli_error(["grade", str(tmp_path / "missing.zip"), "--out", out])
    (tmp_path / "notes.txt").write_text("hello")
    assert "not a zip" in _cli_error(["grade", str(tmp_path / "notes.txt"), "--out", out])
    empty = _zip(tmp_path / "empty.zip", {"readme.txt": b"no notebooks"})
    assert "no notebooks" in _cli_error(["grade", str(empty), "--out", out])
    unknown = _zip(tmp_path / "unknown.zip", {"amy_7_100_homework.ipynb": b"{"})
    assert "--assignment" in _cli_error(["grade", str(unknown), "--out", out])
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ export


def _results(folder: Path, rows: list[dict], roster: dict | None = None) -> Path:
    folder.mkdir(parents=True)
    (folder / "scores.json").write_text(json.dumps(rows), encoding="utf-8")
    if roster:
        (folder / "lms.json").write_text(json.dumps(roster), encoding="utf-8")
    return folder


def _row(student: str, assignment: str, score: float, status: str = "ok") -> dict:
    return {"student": student, "assignment": assignment, "status": status,
            "auto_score": score, "auto_max": 17.0}


def test_export_leaves_a_broken_check_blank_and_sums_the_plain_csv(tmp_path):
    results = _results(tmp_path / "r", [_row("11", A, 17.0), _row("12", A, 0.0, "grader-error"),
                                        _row("11", "q4_single_token", 5.0)],
                       {"lms": "canvas", "students": {"11": {"name": "amy"}}})
    book = export(results=results, to="canvas", out=tmp_path / "c.csv")
    assert book.blanks == [f"12/{A}"]
    rows = _rows(tmp_path / "c.csv")
    assert rows[0][5:] == [A, "q4_single_token"]
    assert rows[1] == ["12", "12", "", "", "", "", ""] and rows[2][:2] == ["amy", "11"]
    export(results=results, to="csv", out=tmp_path / "p.csv")
    assert _rows(tmp_path / "p.csv")[1:] == [["12", "12", "", "", ""],
                                             ["11", "amy", "17", "5", "22"]]


def test_export_refuses_what_the_lms_cannot_import(tmp_path):
    results = _results(tmp_path / "r", [_row("alice", A, 17.0), _row("alice", "q2_dk_growth", 3)])
    with pytest.raises(CourseError, match="no Canvas id"):
        export(results=results, to="canvas", out=tmp_path / "c.csv")
    with pytest.raises(CourseError, match="--assignment"):
        export(results=results, to="moodle", out=tmp_path / "m.csv")
    assert "no scores.json" in _cli_error(["export", str(tmp_path), "--to", "csv", "--out",
                                           str(tmp_path / "x.csv")])
    assert "ASSIGNMENT=HEADER" in _cli_error(["export", str(results), "--to", "canvas",
                                              "--out", str(tmp_path / "x.csv"), "--column", "x"])


def test_an_unpacked_download_is_recognised_even_inside_one_folder(tmp_path):
    nb = nbformat.writes(nbformat.v4.new_notebook()).encode()
    folder = tmp_path / "dl" / "Course-Q1-1234" / "Zhang San_2001_assignsubmission_file_"
    folder.mkdir(parents=True)
    (folder / "q1_value_scaling.ipynb").write_bytes(nb)
    assert lms.is_download(tmp_path / "dl") and lms.is_download(folder.parent)
    intake = lms.open_download(tmp_path / "dl", assignment=None, work=tmp_path / "work")
    assert intake.lms == "moodle" and intake.students["2001"]["name"] == "Zhang San"
    assert not lms.is_download(ROOT / "release")  # nbgrader's own layout


# ------------------------------------------------------------------ names that read two ways


@pytest.mark.parametrize("name, lms_kind, student, claims", [
    (MOODLE_FLAT["blank"], "moodle", "3002", {"3001"}),
    ("Mallory Li_3002_assignsubmission_file_3001_assignsubmission_file_q1.ipynb", "moodle",
     "3002", {"3001"}),
    ("Mallory Li_3002_assignsubmission_file_/Alice Wong_3001_assignsubmission_file_/q1.ipynb",
     "moodle", "3002", {"3001"}),
    ("Mallory Li_3002_assignsubmission_file_/sub/q1.ipynb", "moodle", "3002", set()),
    (CANVAS_FILES["blank"], "canvas", "1005", {"1001"}),
    ("smithjohn_1001_5001_hw_2024_10_final.ipynb", "canvas", "1001", {"2024"}),
    # a Canvas name whose uploaded part is a Moodle name: Canvas's fields come first
    ("mallorymei_1005_5009_Alice Wong_3001_assignsubmission_file_q1.ipynb", "canvas", "1005",
     set()),
])
def test_the_lms_s_own_fields_come_first_and_the_rest_is_read_for_claims(
        name, lms_kind, student, claims):
    entry = lms.parse_name(PurePosixPath(name), Path(name))
    assert (entry.lms, entry.student, set(entry.claims)) == (lms_kind, student, claims)


def _intake(tmp_path: Path, files: dict[str, bytes]):
    download = _zip(tmp_path / "d.zip", files)
    return lms.open_download(download, assignment=None, work=tmp_path / "work")


def _blank() -> bytes:
    return (ROOT / "release" / A / f"{A}.ipynb").read_bytes()


def test_a_name_that_reads_two_ways_is_refused_and_the_named_student_is_not_touched(tmp_path):
    intake = _intake(tmp_path, {name: _blank() for name in MOODLE_FLAT.values()})
    remark = intake.remarks[("3002", A)]
    assert remark.refused and "3001" in remark.notes[0][1]
    assert ("3001", A) not in intake.remarks
    assert list((intake.folder / "3002" / A).iterdir()) == []  # nothing of it is graded
    assert [p.name for p in (intake.folder / "3001" / A).iterdir()] == [f"{A}.ipynb"]
    assert lms.check_download(tmp_path / "d.zip") == 2  # both rows are counted


def test_a_canvas_tail_that_names_nobody_in_the_download_is_graded(tmp_path):
    intake = _intake(tmp_path, {"smithjohn_1001_5001_hw_2024_10_final.ipynb": _blank()})
    assert intake.remarks == {} and intake.students["1001"]["files"]


def test_several_uploads_of_one_student_are_all_named_in_the_row(tmp_path):
    intake = _intake(tmp_path, {"amy_7_100_q1_value_scaling.ipynb": _blank(),
                                "amy_7_101_q1_value_scaling-1.ipynb": _blank(),
                                "amy_7_102_copy.ipynb": _blank()})
    (zh, en), = intake.remarks[("7", A)].notes
    assert not intake.remarks[("7", A)].refused
    assert "3 notebooks" in en and "q1_value_scaling-1.ipynb" in en
    assert "q1_value_scaling.ipynb" in en and "copy.ipynb" in en


def test_one_id_under_two_names_is_refused_whole(tmp_path):
    intake = _intake(tmp_path, {"amy_7_100_q1_value_scaling.ipynb": _blank(),
                                "mallory_7_101_q1_value_scaling.ipynb": _blank()})
    remark = intake.remarks[("7", A)]
    assert remark.refused and "'amy' and 'mallory'" in remark.notes[0][1]


def test_the_export_leaves_a_refused_file_blank(tmp_path):
    results = _results(tmp_path / "r", [_row("11", A, 17.0), _row("12", A, 0.0, "refused")],
                       {"lms": "canvas", "students": {}})
    book = export(results=results, to="canvas", out=tmp_path / "c.csv")
    assert book.blanks == [f"12/{A}"]
