"""A submission's own text is screened before anything runs: bounds, field types, the
timestamp; and the pipeline's optional steps never cost a submission its scores."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from pipeline_helpers import ROOT, A

from autograder.engine.host import screening
from autograder.engine.host.job import Job
from autograder.engine.host.manifest import load
from autograder.engine.host.pipeline import run
from autograder.engine.host.screening import (
    MAX_CELLS,
    MAX_DEPTH,
    MAX_SOURCE,
    ReadTimestamp,
    parse_timestamp,
    read_notebook,
)
from autograder.engine.host.stop import Stop
from autograder.settings import GradeSettings

RELEASE = (ROOT / "release" / A / f"{A}.ipynb").read_text(encoding="utf-8")


def _raw(change=None) -> bytes:
    data = json.loads(RELEASE)
    if change:
        change(data)
    return json.dumps(data).encode()


def _nested(depth: int) -> bytes:
    """The release with ``depth`` nested objects in its metadata."""
    text = _raw(lambda d: d["metadata"].update(deep="@@")).decode()
    return text.replace('"@@"', '{"d": ' * depth + "0" + "}" * depth).encode()


@pytest.mark.parametrize("raw, words", [
    (_nested(MAX_DEPTH), f"deeper than {MAX_DEPTH}"),
    (_nested(100_000), f"deeper than {MAX_DEPTH}"),  # json.loads runs out of recursion
    (_raw(lambda d: d["cells"].extend([d["cells"][0]] * MAX_CELLS)), "more than 2000"),
    (_raw(lambda d: d["cells"][0].update(source=["x" * MAX_SOURCE, "y"])), "characters"),
    (b"\xff\xfe not utf-8", "not a valid notebook"),
    (_raw(lambda d: d.update(cells={"not": "a list"})), "not a valid notebook"),
    (_raw(lambda d: d["cells"].append(7)), "not a valid notebook"),
])
def test_what_is_too_big_deep_or_broken_stops_with_a_reason(raw, words):
    with pytest.raises(Stop) as stop:
        read_notebook(raw)
    assert words in stop.value.note.en


def test_a_real_notebook_is_read_unchanged_and_unremarked():
    nb, notes = read_notebook(RELEASE.encode())
    assert notes == [] and nb == nbformat.reads(RELEASE, as_version=4)


def test_fields_of_the_wrong_type_are_dropped_before_nbformat_reads_them():
    def wrong(data):
        cells = data["cells"]
        graded = [c for c in cells if c["metadata"].get("nbgrader", {}).get("grade_id")]
        cells[0]["metadata"] = ["a", "list"]  # nbformat itself raised on this
        graded[0]["metadata"]["nbgrader"]["grade_id"] = ["unhashable"]
        graded[1]["metadata"]["nbgrader"]["points"] = float("nan")
        graded[2]["metadata"]["nbgrader"]["locked"] = "yes"
        graded[3]["metadata"]["tags"] = {"not": "a list"}
        cells[1]["id"] = 5
        data["metadata"] = "not an object"

    nb, notes = read_notebook(_raw(wrong))
    assert len(notes) == 1 and "metadata of the wrong type" in notes[0][1]
    assert nb.cells[0].metadata == {} and isinstance(nb.metadata, dict)
    gids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
    assert all(isinstance(g, (str, type(None))) for g in gids)


def test_lone_surrogates_are_replaced_so_every_later_write_succeeds():
    raw = RELEASE.replace('"source": "', '"source": "\\udcff', 1).encode()
    nb, notes = read_notebook(raw)
    assert "lone surrogates" in notes[0][1]
    nbformat.writes(nb).encode("utf-8")  # raised UnicodeEncodeError before


@pytest.mark.parametrize("text", [
    "2024-05-01 12:00:00.000000 UTC",  # what nbgrader writes
    "2024-05-01 12:00:00 Asia/Shanghai", "2024-05-01 12:00:00 CST",
    "2024-05-01 12:00:00 +0800",  # nbgrader reads a bare number as seconds: so do we
    "2024-05-01T12:00:00+02:00", "2024-05-01 12:00:00",
])
def test_timestamps_are_read_as_nbgrader_reads_them(text):
    from nbgrader.utils import parse_utc

    assert parse_timestamp(text) == parse_utc(text)


@pytest.mark.parametrize("text", ["2024-05-01 12:00:00 /etc/localtime",
                                  "2024-05-01 12:00:00 ../../etc/localtime",
                                  "2024-05-01 12:00:00 :/dev/stdin", "not a date"])
def test_a_time_zone_is_never_opened_as_a_file(text):
    """dateutil's gettz opens a zone given as a path (nbgrader's parse_utc reads this
    /etc/localtime happily, and /dev/stdin would block the writer)."""
    with pytest.raises(ValueError):
        parse_timestamp(text)


def _job(folder: Path) -> SimpleNamespace:
    notes = []
    return SimpleNamespace(folder=folder, timestamp=None, notes=notes,
                           note=lambda zh, en: notes.append(en))


def test_a_fifo_or_a_link_as_timestamp_is_not_read(tmp_path):
    os.mkfifo(tmp_path / "timestamp.txt")
    job, started = _job(tmp_path), time.monotonic()
    ReadTimestamp()(job)
    assert (job.timestamp, job.notes) == (None, []) and time.monotonic() - started < 1
    (tmp_path / "timestamp.txt").unlink()
    (tmp_path / "real.txt").write_text("2024-05-01 12:00:00 UTC")
    (tmp_path / "timestamp.txt").symlink_to(tmp_path / "real.txt")
    ReadTimestamp()(job)
    assert job.timestamp is None


def test_a_bad_timestamp_is_a_note(tmp_path):
    (tmp_path / "timestamp.txt").write_text("9999-12-31 23:59:59 -1400")
    job = _job(tmp_path)
    ReadTimestamp()(job)
    assert job.timestamp is None and "not a date (OverflowError)" in job.notes[0]


def test_an_optional_step_that_breaks_is_skipped_with_a_note(tmp_path):
    class Broken:
        name, optional = "broken", True

        def __call__(self, job):
            raise KeyError("our bug")

    class Essential(Broken):
        optional = False

    job = run(Job("ann", A, tmp_path, load(A), GradeSettings()), steps=(Broken(),))
    assert not job.stopped and "'broken' failed and was skipped" in job.notes[0].en
    with pytest.raises(KeyError):
        run(Job("ann", A, tmp_path, load(A), GradeSettings()), steps=(Essential(),))


def test_the_review_scan_runs_in_the_worker_on_the_student_s_cells(tmp_path):
    nb = nbformat.reads(RELEASE, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import autograder.bank"))
    job = SimpleNamespace(nb=nb, review=[])
    screening.Review()(job)
    assert any("导入了评分程序" in r for r in job.review)
