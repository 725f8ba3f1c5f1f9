"""The class report (``autograder report``, and ``grade``'s ``report.html``).

A small class of q1 is graded by ``grade`` itself (rows, scores.json, feedback pages,
gradebook.db), with the engine replaced by a stand-in that hands back ready-made records
(as ``test_guard.py`` does): each student's scores, misconceptions, notes and timestamp
are chosen here, so every number the page shows is known by hand. The real sandbox's
class is ``test_samples.py``'s (its report is checked there).
"""

from __future__ import annotations

import io
import json
import re
import time
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest
from click.testing import CliRunner
from pipeline_helpers import ROOT, A, read_nb, write_nb

from autograder.cli import main
from autograder.engine.host import pool
from autograder.engine.host.gradebook import open_gradebook
from autograder.engine.host.job import CellResult
from autograder.engine.host.manifest import load
from autograder.engine.host.stop import TIMEOUT, Note
from autograder.errors import CourseError
from autograder.grading import batch as grading
from autograder.grading import report as report_module
from autograder.grading.batch import Result
from autograder.grading.report import write_report
from autograder.grading.report_charts import BAR
from autograder.grading.report_rows import read_rows
from autograder.grading.scores import write_outputs
from autograder.integrations.nbgrader.grade import grade
from autograder.settings import GradeSettings, Status

#: A student's name (a folder name: no "/") and a label that would run if not escaped.
HOSTILE = "<img src=x onerror=alert(1)>\"&'"
EVIL_LABEL = "<script>alert('label')</script>【恶意】"
SOFTMAX = ("naive_softmax", "【softmax 数值溢出】")
DUE = datetime(2026, 12, 1, 12, 0)

#: student -> what its record holds: lost cells (grade id -> score), misconceptions per
#: cell, practice cells (grade id -> status), grader errors, notes, timestamp, review.
PLAN = {
    "perfect": {"timestamp": "2026-12-01T08:00:00"},
    "half": {"scores": {"test_softmax": 0.0, "test_softmax_stable": 0.0},
             "named": {"test_softmax_stable": [SOFTMAX],
                       "test_temperature": [("too_hot", "【温度用反了】")]},
             "practice": {"test_temperature": Status.FAILED, "test_weights_3Wq": Status.PASSED},
             "timestamp": "2026-12-01T13:30:00"},
    HOSTILE: {"scores": {"test_attention": 0.0, "test_softmax_stable": 0.0},
              "named": {"test_attention": [("evil", EVIL_LABEL)],
                        "test_softmax_stable": [SOFTMAX]},
              "practice": {"test_temperature": Status.PASSED},
              "review": ["导入了评分程序：import autograder"]},
    "slow": {"scores": {"test_self_attention": 0.0},
             "notes": [Note("有单元格运行超过 10 秒被中断", "cells interrupted after 10 s",
                            kind=TIMEOUT)]},
    "oops": {"errors": ["test_weights_changed"]},
    "gone": {"stopped": True, "notes": [Note("没有找到 notebook", "no notebook found")]},
}
SETTINGS = GradeSettings(salt="test-report")


def grade_tasks(tasks, settings, *, jobs, progress=None, started=None, verdict=None,
                zygote=None):
    """The engine's stand-in: each task's ready-made record, handed on as it "arrives"."""
    if started:
        started()
    records = [_record(t) for t in tasks]
    for record in records:
        if progress:
            progress(record)
    return records


def _record(task) -> pool.Graded:
    plan = PLAN[task.student]
    cells = []
    for spec in load(A).graded:
        cell = CellResult(spec.grade_id, spec.title, spec.points, spec.is_manual,
                          status=Status.MANUAL if spec.is_manual else Status.PASSED,
                          score=None if spec.is_manual else spec.points)
        if spec.grade_id in plan.get("scores", {}):
            cell.score, cell.status = plan["scores"][spec.grade_id], Status.FAILED
        if spec.grade_id in plan.get("errors", ()):
            cell.score, cell.status = None, Status.ERROR
        cell.misconceptions = list(plan.get("named", {}).get(spec.grade_id, []))
        cells.append(cell)
    practice = [CellResult(c, c, 0.0, False, status=s, practice=True,
                           misconceptions=list(plan.get("named", {}).get(c, [])))
                for c, s in plan.get("practice", {}).items()]
    stopped = plan.get("stopped", False)
    return pool.Graded(task, cells=[] if stopped else cells, notes=plan.get("notes", []),
                       stopped=stopped, practice=practice,
                       notebook=None if stopped else json.dumps({"cells": []}),
                       feedback=None if stopped else f"<html>{task.student}</html>",
                       review=plan.get("review", []), timestamp=plan.get("timestamp"))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class graded by ``grade`` with ready-made records, a due date in its
    gradebook.db, and its report written into another folder."""
    course = tmp_path_factory.mktemp("report")
    release = read_nb(ROOT / "release" / A / f"{A}.ipynb")
    for student in PLAN:
        write_nb(release, course / "submitted" / student / A / f"{A}.ipynb")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grading, "grade_tasks", grade_tasks)
        grade(submissions=course / "submitted", out=course / "out", settings=SETTINGS)
    with open_gradebook(course / "gradebook.db") as gb:
        gb.update_or_create_assignment(A, duedate=DUE)
    page = write_report(results=course / "out", out=course / "reports" / "class.html")
    return course, page, page.read_text(encoding="utf-8")


class _Table(HTMLParser):
    """Rows of the page's tables as {attrs of the <tr>, [cell texts], [hrefs]}."""

    def __init__(self) -> None:
        super().__init__()
        self.rows, self.headings, self._text = [], [], None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append({"attrs": dict(attrs), "cells": [], "links": []})
        elif tag in ("td", "h3"):
            self._text = ""
        elif tag == "a" and self.rows:
            self.rows[-1]["links"].append(dict(attrs)["href"])

    def handle_data(self, data):
        if self._text is not None:
            self._text += data

    def handle_endtag(self, tag):
        if tag == "td":
            self.rows[-1]["cells"].append(self._text)
            self._text = None
        elif tag == "h3":
            self.headings.append(self._text)
            self._text = None


def _parse(page: str) -> _Table:
    table = _Table()
    table.feed(page)
    return table


def _row(page: str, attr: str, value: str) -> dict:
    return next(r for r in _parse(page).rows if r["attrs"].get(attr) == value)


@pytest.mark.parametrize("cell,mean,full,errors", [
    # graded: perfect, half, hostile, slow, oops (gone was not graded)
    ("test_softmax", "1.60", "80.0%", "0.0%"),          # half scored 0 of 2
    ("test_softmax_stable", "0.60", "60.0%", "0.0%"),   # half and the hostile name lost it
    ("test_weights_changed", "1.00", "100.0%", "20.0%"),  # oops: a grader error, not a 0
    ("test_self_attention", "0.80", "80.0%", "0.0%"),
    ("test_value_scaling", "2.00", "100.0%", "0.0%"),
])
def test_each_cell_has_its_mean_its_share_at_full_marks_and_of_grader_errors(
        graded, cell, mean, full, errors):
    _course, _page, page = graded
    row = _row(page, "data-cell", cell)
    assert row["cells"][1] == load(A).by_grade_id(cell).title
    assert row["cells"][3:] == [mean, full, errors]


def test_the_cells_are_those_of_scores_json_and_agree_with_its_rows(graded):
    """Every autograded cell of the rows is in the table, and its mean is the rows' own."""
    course, _page, page = graded
    rows = json.loads((course / "out" / "scores.json").read_text(encoding="utf-8"))
    counted = [r for r in rows if r["status"] != "failed"]
    auto = [c for c in rows[0]["max_scores"] if c not in rows[0]["manual"]]
    shown = [r["attrs"]["data-cell"] for r in _parse(page).rows if "data-cell" in r["attrs"]]
    assert shown == auto
    for cell in auto:
        scores = [r["cells"][cell] or 0.0 for r in counted if cell not in r["grader_errors"]]
        assert _row(page, "data-cell", cell)["cells"][3] == f"{sum(scores) / len(scores):.2f}"


def test_practice_cells_show_the_share_that_passed_and_are_not_scored(graded):
    _course, _page, page = graded
    assert _row(page, "data-practice", "test_temperature")["cells"][2:] == ["2", "50.0%"]
    assert _row(page, "data-practice", "test_weights_3Wq")["cells"][2:] == ["1", "100.0%"]
    assert not any(r["attrs"].get("data-cell") == "test_temperature"
                   for r in _parse(page).rows)


def _target(page_path: Path, href: str) -> Path:
    assert not re.match(r"^[a-z]+:|^//", href, re.I), href
    return (page_path.parent / unquote(href)).resolve()


def test_each_misconception_counts_its_students_and_points_and_links_them(graded):
    course, path, page = graded
    softmax = _row(page, "data-key", "naive_softmax")
    assert softmax["cells"][:3] == ["【softmax 数值溢出】", "2", "2"]  # 1 point each
    assert {_target(path, h) for h in softmax["links"]} == {
        (course / "out" / "feedback" / s / A / f"{A}.html").resolve() for s in ("half", HOSTILE)}
    assert all(_target(path, h).read_text(encoding="utf-8").startswith("<html>")
               for h in softmax["links"])
    evil = _row(page, "data-key", "evil")
    assert evil["cells"][1:3] == ["1", "1"]
    hot = _row(page, "data-key", "too_hot")  # named in a practice cell: costs nothing
    assert hot["cells"][1:3] == ["0", "0"] and hot["cells"][4] == "half"
    keys = [r["attrs"]["data-key"] for r in _parse(page).rows if "data-key" in r["attrs"]]
    assert keys == ["naive_softmax", "evil", "too_hot"]  # most points first


def test_everything_from_scores_json_is_escaped(graded):
    _course, _path, page = graded
    assert "<img src=x" not in page and "<script" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;&quot;&amp;&#x27;" in page
    assert "&lt;script&gt;alert(&#x27;label&#x27;)&lt;/script&gt;【恶意】" in page


def _section(page: str, key: str) -> str:
    return page[page.index(f'<section id="{key}">'):].split("</section>", 1)[0]


def _students(page: str, key: str) -> list[str]:
    return [r["cells"][0] for r in _parse(_section(page, key)).rows if r["cells"]]


def test_late_broken_timed_out_flagged_and_grader_errors_are_listed(graded):
    course, _path, page = graded
    assert _students(page, "late") == ["half"]  # 13:30 after the gradebook's 12:00
    assert f"gradebook.db ({course / 'gradebook.db'})" in page
    assert _students(page, "broken") == ["gone"]
    assert _students(page, "timed-out") == ["slow"]
    assert _students(page, "flagged") == [HOSTILE]
    assert _students(page, "grader-errors") == ["oops"]
    rows = {r["student"]: r for r in
            json.loads((course / "out" / "scores.json").read_text(encoding="utf-8"))}
    assert [s for s, r in rows.items() if r["timed_out"]] == ["slow"]
    assert rows["half"]["timestamp"] == "2026-12-01T13:30:00"


def test_the_histogram_counts_the_final_totals_and_is_a_real_png(graded):
    import base64

    from matplotlib.image import imread

    _course, _path, page = graded
    assert f"总分（自动评分）分布：4 份，满分 {load(A).auto_max:g}" in _parse(page).headings
    assert "另有 1 份因评分程序出错" in page
    images = re.findall(r'<img src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 1
    pixels = imread(io.BytesIO(base64.b64decode(images[0])), format="png")
    bar = tuple(int(BAR[i:i + 2], 16) / 255 for i in (1, 3, 5))
    assert ((abs(pixels[..., :3] - bar) < 0.01).all(axis=-1)).sum() > 500


def test_the_page_loads_nothing_from_anywhere(graded):
    _course, path, page = graded
    addresses = re.findall(r'\b(?:src|href)\s*=\s*"([^"]*)"', page)
    assert addresses and not any(re.search(r"https?:|//", a) for a in addresses
                                 if not a.startswith("data:image/png;base64,"))
    assert "<script" not in page and "<link" not in page and "url(" not in page
    for bad in ('<img src="https://example.com/x.png">', '<a href="//example.com">x</a>',
                '<a href="javascript:alert(1)">x</a>'):
        with pytest.raises(AssertionError, match="would load"):
            report_module._check_offline(page.replace("</body>", bad + "</body>"))


def test_only_a_feedback_page_inside_results_is_a_link(graded, tmp_path):
    """A row's ``feedback`` that leaves RESULTS (``..``, absolute, a scheme, a link out)
    is shown as the plain name; the honest rows still link."""
    import shutil

    course, _path, _page = graded
    results = tmp_path / "results"
    shutil.copytree(course / "out" / "feedback", results / "feedback")
    (tmp_path / "outside.html").write_text("secret", encoding="utf-8")
    (results / "feedback" / "out.html").symlink_to(tmp_path / "outside.html")
    rows = json.loads((course / "out" / "scores.json").read_text(encoding="utf-8"))
    forged = {"half": "../outside.html", "gone": "javascript:alert(1)",  # each one listed
              "oops": str(tmp_path / "outside.html"), "slow": "feedback/out.html"}
    for row in rows:
        row["feedback"] = forged.get(row["student"], row["feedback"])
    (results / "scores.json").write_text(json.dumps(rows), encoding="utf-8")
    read = {r.student: r.feedback for r in read_rows(results / "scores.json")}
    assert [read[s] for s in ("half", "gone", "oops")] == [None] * 3  # not plain paths below
    assert read["slow"] == "feedback/out.html"  # a plain path: the link out is found later
    page = write_report(results=results).read_text(encoding="utf-8")
    links = [h for r in _parse(page).rows for h in r["links"]]
    assert links and {_target(results / "report.html", h) for h in links} == {
        (results / "feedback" / HOSTILE / A / f"{A}.html").resolve()}
    assert "outside" not in page and "javascript" not in page


def test_due_option_wins_over_the_gradebook_and_says_so(graded, tmp_path):
    course, _path, _page = graded
    result = CliRunner().invoke(main, ["report", str(course / "out"), "--out",
                                       str(tmp_path / "r.html"), "--due",
                                       f"{A}=2026-12-01T20:00+08:00"])  # 12:00 UTC
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"wrote {tmp_path / 'r.html'}"
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert _students(page, "late") == ["half"] and f"--due {A}=…" in page
    early = CliRunner().invoke(main, ["report", str(course / "out"), "--out",
                                      str(tmp_path / "r.html"), "--due", "2026-11-01"])
    assert early.exit_code == 0
    assert _students((tmp_path / "r.html").read_text(encoding="utf-8"), "late") == \
        ["half", "perfect"]  # the others have no timestamp.txt


@pytest.mark.parametrize("content,words", [
    (b"{not json", "not valid JSON"),
    (b'{"rows": []}', "must be a list"),
    (b'[{"student": "a", "assignment": "q", "status": "ok", "auto_score": "7", '
     b'"auto_max": 1}]', "row 1: 'auto_score' must be a finite number"),
    (b'[{"student": "a", "assignment": "q", "status": "ok", "auto_score": NaN, '
     b'"auto_max": 1}]', "not valid JSON"),
    (b'[{"student": 3, "assignment": "q", "status": "ok", "auto_score": 1, "auto_max": 1}]',
     "'student' must be a string"),
    (b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
    (b"\xff\xfe", "not valid JSON"),
])
def test_a_malformed_scores_json_is_one_line_and_writes_nothing(tmp_path, content, words):
    (tmp_path / "scores.json").write_bytes(content)
    (tmp_path / "report.html").write_text("the old report", encoding="utf-8")
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert words in result.output and len(result.output.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "scores.json"]
    assert (tmp_path / "report.html").read_text(encoding="utf-8") == "the old report"


def test_missing_results_and_bad_due_are_one_line_errors(tmp_path):
    for args, words in ((["report", str(tmp_path / "nowhere")], "is not a folder"),
                        (["report", str(tmp_path)], "cannot read"),
                        (["report", str(tmp_path), "--due", "tomorrow"], "is not a date")):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2 and words in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1


def test_ten_thousand_rows_render_in_bounded_time_and_size(graded, tmp_path):
    course, _path, _page = graded
    rows = json.loads((course / "out" / "scores.json").read_text(encoding="utf-8"))
    many = [{**rows[i % len(rows)], "student": f"s{i:05d}<b>"} for i in range(10_000)]
    (tmp_path / "scores.json").write_text(json.dumps(many), encoding="utf-8")
    started = time.monotonic()
    page = write_report(results=tmp_path).read_text(encoding="utf-8")
    seconds = time.monotonic() - started
    assert seconds < 20, seconds
    assert "<h1>班级报告：10000 份提交</h1>" in page
    flagged = sum(bool(r["review"]) for r in many)
    assert len(_students(page, "flagged")) == report_module.MAX_LISTED < flagged
    assert f"只列出前 {report_module.MAX_LISTED} 份，共 {flagged} 份" in page
    named = sum("test_softmax_stable" in r["misconceptions"] for r in many)
    cell = _row(page, "data-key", "naive_softmax")["cells"][3]
    assert cell.endswith(f" 等 {named} 人") and named > report_module.MAX_NAMES
    assert len(cell.split("、")) == report_module.MAX_NAMES
    assert len(page) < 3_000_000, len(page)


def test_a_graded_extension_has_its_own_histograms(tmp_path):
    rows = []
    for i, (core, ext) in enumerate([(10, 4), (8, 0), (10, 2)]):
        rows.append(Result(f"s{i}", A, status="ok", auto_score=core + ext, auto_max=26,
                           parts={"core": {"score": core, "max": 22},
                                  "ext-temperature": {"score": ext, "max": 4}}))
    write_outputs(rows, tmp_path)
    headings = _parse(write_report(results=tmp_path).read_text(encoding="utf-8")).headings
    assert {"总分（自动评分）分布：3 份，满分 26", "核心部分分布：3 份，满分 22",
            "拓展部分（计分）分布：3 份，满分 4"} <= set(headings)
    write_outputs([Result("s", A, status="ok", parts={"core": {"score": 1, "max": 22}})],
                  tmp_path)
    page = write_report(results=tmp_path).read_text(encoding="utf-8")
    assert "核心部分分布" not in page  # practice extensions: one histogram


def test_grade_writes_the_report_and_prints_where(tmp_path, monkeypatch):
    release = read_nb(ROOT / "release" / A / f"{A}.ipynb")
    write_nb(release, tmp_path / "submitted" / "perfect" / A / f"{A}.ipynb")
    monkeypatch.setattr(grading, "grade_tasks", grade_tasks)
    result = CliRunner().invoke(main, ["grade", str(tmp_path / "submitted"), "--out",
                                       str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert f"class report: {tmp_path / 'out' / 'report.html'}" in result.output
    assert "班级报告：1 份提交" in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")


def test_the_demo_prints_where_the_report_is(tmp_path, monkeypatch):
    from autograder.samples import demo as demo_module

    page = tmp_path / "results" / "report.html"
    monkeypatch.setattr(demo_module, "demo", lambda **_: demo_module.DemoResult(
        tmp_path, [], {}, page))
    result = CliRunner().invoke(main, ["demo"])
    assert result.exit_code == 0, result.output
    assert f"class report: {page}" in result.output


def test_a_report_error_is_a_course_error(tmp_path):
    (tmp_path / "scores.json").write_text("[]", encoding="utf-8")
    (tmp_path / "report.html").mkdir()
    with pytest.raises(CourseError, match="is a folder"):
        write_report(results=tmp_path)


def test_a_failed_write_leaves_the_old_report_and_no_temporary_file(graded, tmp_path,
                                                                    monkeypatch):
    course, _path, _page = graded
    (tmp_path / "scores.json").write_bytes((course / "out" / "scores.json").read_bytes())
    (tmp_path / "report.html").write_text("the old report", encoding="utf-8")

    def full_disk(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report_module.os, "replace", full_disk)
    with pytest.raises(OSError, match="No space"):
        write_report(results=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "scores.json"]
    assert (tmp_path / "report.html").read_text(encoding="utf-8") == "the old report"
