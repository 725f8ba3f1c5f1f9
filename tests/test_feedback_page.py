"""The feedback page as a student sees it: in a real, headless browser, with no network.

A q1 mistake is graded by ``autograder grade``; its page is opened in Chromium, which
reports the page's geometry (through a small measuring script added to a copy of the
page) and takes a screenshot. The tests skip, saying why, when no Chromium is installed
(``.ci/run`` installs Debian's ``chromium`` and a CJK font).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import warm_zygote
from pipeline_helpers import ROOT, A, without_plots

from autograder.authoring import cells as nbs
from autograder.engine.host.feedback_page import HAND_WORD, STATUS_WORDS, VIEWPORT, render_feedback
from autograder.engine.host.manifest import load, release_notebook
from autograder.integrations.nbgrader.grade import grade
from autograder.samples import PERFECT, mistakes
from autograder.samples.submission import make_submission
from autograder.settings import GradeSettings, Status

pytestmark = pytest.mark.e2e

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
MEASURE = """<script>
const box = e => e.getBoundingClientRect();
const report = {
  pageWidth: document.documentElement.scrollWidth, viewWidth: window.innerWidth,
  whyWrapped: [...document.querySelectorAll('.why')].every(e => e.scrollWidth <= e.clientWidth + 1),
  whyCount: document.querySelectorAll('.why').length,
  whyTall: [...document.querySelectorAll('.why')].some(e => box(e).height > 40),
  mathCount: document.querySelectorAll('math').length,
  mathDrawn: [...document.querySelectorAll('math')].every(e => box(e).width > 0 && box(e).height > 0),
  figures: [...document.querySelectorAll('img')].filter(e => e.naturalWidth > 100).length,
  figuresFit: [...document.querySelectorAll('img')].every(e => box(e).width <= window.innerWidth),
  summary: [...document.querySelectorAll('table.summary tr')].map(r => r.innerText),
};
document.body.setAttribute('data-report', JSON.stringify(report));
</script>"""


#: What a phone must cope with in a written answer: a formula, a table and a word wider
#: than 400 px (they scroll in their own boxes, or wrap; the page never scrolls sideways).
WIDE_ANSWER = ("\n\n$$" + " + ".join(f"\\frac{{e^{{z_{i}}}}}{{\\sum_k e^{{z_k}}}}" for i in range(12))
               + "$$\n\n| " + " | ".join(f"列{i}" for i in range(14)) + " |\n|"
               + "---|" * 14 + "\n| " + " | ".join("0.123456" for _ in range(14)) + " |\n\n"
               + "x" * 120 + "\n")
#: nbgrader's files beside a collected submission (``release_feedback`` reads them).
SECRET = "5e" * 64
TIMESTAMP = "2026-11-30 10:00:00.000000 UTC"


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> tuple[Path, dict]:
    """An nbgrader course graded by ``autograder grade``: q1's naive-softmax mistake (its
    figure kept, a wide written answer, nbgrader's secret and timestamp beside it) and the
    perfect answer; the course and the rows by student."""
    course = tmp_path_factory.mktemp("feedback")
    source = nbs.read(ROOT / "source" / A / f"{A}.ipynb")
    naive = next(v for v in mistakes(A) if v.name == "naive_softmax")
    for student, variant in (("naive", naive), ("perfect", PERFECT)):
        nb = make_submission(source, release_notebook(load(A)), variant)
        folder = course / "submitted" / student / A
        if student != "naive":  # the page under test keeps its figure
            without_plots(nb)
        else:
            next(c for c in nb.cells if nbs.grade_id(c) == "written_qk_vs_v").source += WIDE_ANSWER
            folder.mkdir(parents=True)
            (folder / "submission_secret.txt").write_text(SECRET)
            (folder / "timestamp.txt").write_text(TIMESTAMP)
        nbs.write(nb, folder / f"{A}.ipynb")
    with warm_zygote.shared():
        rows = grade(submissions=course / "submitted", out=course / "out",
                     settings=GradeSettings(salt="feedback-page"), jobs=1)
    return course, {r.student: r for r in rows}


@pytest.fixture(scope="module")
def page(graded) -> Path:
    """The feedback page of q1's naive-softmax mistake, as ``grade`` wrote it."""
    course, rows = graded
    return course / "out" / rows["naive"].feedback


def _browser(*args: str, user_dir: Path) -> subprocess.CompletedProcess:
    command = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={user_dir}",
               "--window-size=1000,1600", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_the_page_needs_no_network_and_shows_no_hidden_test(page):
    html = page.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "BEGIN HIDDEN TESTS" not in html and "run_check" not in html
    assert "<math" in html and "$$" not in html


def test_the_summary_lists_check_titles_with_marks(page):
    html = page.read_text(encoding="utf-8")
    summary = html.split('<table class="summary">')[1].split("</table>")[0]
    assert "Test cell" not in html
    assert "❌" in summary and "✅" in summary and "✍️" in summary
    assert load(A).by_grade_id("test_softmax_stable").title in summary


@pytest.mark.skipif(BROWSER is None, reason="no Chromium here: apt-get install chromium")
def test_in_a_browser_diagnoses_wrap_and_math_renders(page, tmp_path):
    measured = tmp_path / "measured.html"
    measured.write_text(page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"),
                        encoding="utf-8")
    done = _browser("--virtual-time-budget=5000", "--dump-dom", measured.as_uri(),
                    user_dir=tmp_path / "profile")
    found = re.search(r"data-report=\"(.*?)\"", done.stdout)
    assert found, done.stderr[-2000:]
    report = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert report["pageWidth"] <= report["viewWidth"], "the page scrolls sideways"
    assert report["whyCount"] >= 1 and report["whyWrapped"] and report["whyTall"]
    assert report["mathCount"] > 0 and report["mathDrawn"]
    assert report["figures"] >= 1 and report["figuresFit"]
    rows = "\n".join(report["summary"])
    assert "❌" in rows and "✅" in rows


@pytest.mark.skipif(BROWSER is None, reason="no Chromium here: apt-get install chromium")
def test_in_a_browser_a_screenshot_is_taken(page, tmp_path):
    from PIL import Image

    shot = tmp_path / "feedback.png"
    done = _browser(f"--screenshot={shot}", page.as_uri(), user_dir=tmp_path / "profile")
    assert shot.is_file(), done.stderr[-2000:]
    image = Image.open(shot).convert("L")
    low, high = image.getextrema()
    assert image.size == (1000, 1600) and high - low > 100  # not a blank page


# ------------------------------------------------------------ after hand grading
#: The instructor's grading of the naive student, as formgrader writes it: the written
#: answers scored and commented (the comment with markup and a word wider than a
#: phone), a comment on a code answer, and the lost automatic cell raised by hand.
HAND = {"written_qk_vs_v": 2.0, "written_apple": 1.5, "test_softmax_stable": 0.5}
COMMENTS = {"written_qk_vs_v": "思路对，<script>alert(1)</script>但没说明 V 的作用。" + "y" * 150,
            "softmax_impl": "减去最大值时要按行（axis=-1）减。"}


@pytest.fixture(scope="module")
def regraded(graded) -> tuple[Path, object]:
    """The course after hand grading (written through nbgrader's Gradebook API) and
    ``autograder feedback`` on it: the course and what the command wrote."""
    from nbgrader.api import Gradebook

    from autograder.integrations.nbgrader.feedback import write_feedback

    course, _ = graded
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for name, score in HAND.items():
            gb.find_grade(name, A, A, "naive").manual_score = score
        for name, text in COMMENTS.items():
            gb.find_comment(name, A, A, "naive").manual_comment = text
        gb.db.commit()
    return course, write_feedback(course=course)


def _regenerated(course: Path, student: str) -> str:
    return (course / "feedback" / student / A / f"{A}.html").read_text(encoding="utf-8")


def test_the_page_after_hand_grading_shows_the_scores_comments_and_total(graded, regraded):
    course, written = regraded
    auto = graded[1]["naive"].auto_score  # as grade computed it
    html = _regenerated(course, "naive")
    summary = html.split('<table class="summary">')[1].split("</table>")[0]
    assert STATUS_WORDS[Status.MANUAL] not in html and "— /" not in summary
    assert f"<td>{HAND_WORD}</td><td class=\"pts\">2 / 3</td>" in summary
    assert f"<td>{HAND_WORD}</td><td class=\"pts\">1.5 / 2</td>" in summary
    assert "（老师改为 0.5 分）</td><td class=\"pts\">0.5 / 1</td>" in summary
    total = auto + sum(HAND.values())  # the override replaces the cell's 0
    auto_max = load(A).auto_max  # the core's automatic points; written (a) 3 + (b) 2
    assert f"总分 <b>{total:g} / {auto_max + 5:g}</b> 分" in html and f"自动评分（含老师调整）：<b>{auto + 0.5:g} / {auto_max:g}" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;但没说明 V 的作用。" in html
    assert "<script>" not in html and html.count("老师评语：") == 2
    assert "减去最大值时要按行（axis=-1）减。" in html
    assert written.hand_graded == [f"naive/{A}"] and written.unreleasable == [f"perfect/{A}"]
    assert (course / "feedback" / "naive" / A / "submission_secret.txt").read_text() == SECRET


def test_a_page_rendered_again_is_the_page_grade_wrote(graded, regraded, monkeypatch):
    """Without hand grades the page comes back byte for byte, the host's verdicts shown
    once, as verdicts; the same test fails when the record's verdicts are not read."""
    from autograder.engine.host import graded_record
    from autograder.integrations.nbgrader import feedback

    course, rows = graded
    assert _regenerated(course, "perfect") == (course / "out" / rows["perfect"].feedback) \
        .read_text(encoding="utf-8")
    original = (course / "out" / rows["naive"].feedback).read_text(encoding="utf-8")
    assert render_feedback(feedback._job(course, "naive", A)) == original
    monkeypatch.setattr(graded_record, "_verdicts", lambda nb, raw: set())
    assert render_feedback(feedback._job(course, "naive", A)) != original


def test_nbgrader_release_feedback_releases_our_page(regraded, tmp_path):
    """The real ``nbgrader release_feedback`` (in-process) finds our page and releases it
    under the name ``fetch_feedback`` looks for."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.utils import notebook_hash
    from traitlets.config import Config

    course, _ = regraded
    config = Config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.course_id = "lecture9"
    config.Exchange.root = str(tmp_path / "exchange")
    (tmp_path / "exchange").mkdir()
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    done = api.release_feedback(A, "naive")
    assert done["success"], done.get("error", "")[-2000:]
    released = tmp_path / "exchange" / "lecture9" / "feedback" / \
        f"{notebook_hash(secret=SECRET, notebook_id=A)}.html"
    assert released.read_text(encoding="utf-8") == _regenerated(course, "naive")
    assert HAND_WORD in released.read_text(encoding="utf-8")


def test_feedback_on_a_folder_without_a_gradebook_is_one_line(tmp_path):
    from click.testing import CliRunner

    from autograder.cli import main

    for broken in (None, b"not a database" * 100):
        if broken:
            (tmp_path / "gradebook.db").write_bytes(broken)
            (tmp_path / "autograded" / "s" / A).mkdir(parents=True)
            (tmp_path / "autograded" / "s" / A / f"{A}.ipynb").write_text("{}")
        done = CliRunner().invoke(main, ["feedback", str(tmp_path)])
        assert done.exit_code == 2 and len(done.output.strip().splitlines()) == 1, done.output
        assert ("gradebook.db cannot be read" if broken else "no gradebook.db") in done.output
        assert not (tmp_path / "feedback").exists()


#: The page's geometry at one width, read in the page (DevTools' Runtime.evaluate).
GEOMETRY = """(() => {
  const scrolls = sel => [...document.querySelectorAll(sel)]  // wider inside, and scrolls
    .filter(e => e.scrollWidth > e.clientWidth + 1
                 && ['auto', 'scroll'].includes(getComputedStyle(e).overflowX)).length;
  return {pageWidth: document.documentElement.scrollWidth, viewWidth: window.innerWidth,
    codeScrolls: scrolls('.code'), mathScrolls: scrolls('.mathbox'), tableScrolls: scrolls('.md table'),
    commentsWrap: [...document.querySelectorAll('.comment')].every(e => e.scrollWidth <= e.clientWidth + 1),
    comments: document.querySelectorAll('.comment').length,
    summaryFits: document.querySelector('table.summary').getBoundingClientRect().right <= window.innerWidth};
})()"""


@pytest.mark.skipif(BROWSER is None, reason="no Chromium here: apt-get install chromium")
def test_the_regenerated_page_reads_at_400_and_1400_px(regraded, tmp_path):
    """A phone (400 px, laid out as a phone lays it out) and a wide screen: the page never
    scrolls sideways; code, maths and tables scroll in their own boxes. Without the
    viewport tag the phone lays the same page out at 980 px: the check sees it."""
    from cdp import Browser

    course, _ = regraded
    page = course / "feedback" / "naive" / A / f"{A}.html"
    no_viewport = tmp_path / "no-viewport.html"
    no_viewport.write_text(page.read_text(encoding="utf-8").replace(VIEWPORT, ""), encoding="utf-8")
    browser = Browser(BROWSER, tmp_path / "profile")
    try:
        seen = {}
        for name, url, width, mobile in (("phone", page.as_uri(), 400, True),
                                         ("wide", page.as_uri(), 1400, False),
                                         ("no viewport", no_viewport.as_uri(), 400, True)):
            browser.open(url, width=width, mobile=mobile)
            seen[name] = browser.evaluate(GEOMETRY)
    finally:
        browser.close()
    for name, width in (("phone", 400), ("wide", 1400)):
        got = seen[name]
        assert got["viewWidth"] == width and got["pageWidth"] <= width, (name, got)
        assert got["summaryFits"] and got["comments"] == 2 and got["commentsWrap"], (name, got)
    phone = seen["phone"]
    assert phone["codeScrolls"] >= 1 and phone["mathScrolls"] >= 1 and phone["tableScrolls"] >= 1
    assert seen["no viewport"]["viewWidth"] == 980
