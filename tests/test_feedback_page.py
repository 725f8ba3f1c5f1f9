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
from pipeline_helpers import ROOT, A, without_plots

from autograder.authoring import cells as nbs
from autograder.engine.host.manifest import load, release_notebook
from autograder.integrations.nbgrader.grade import grade
from autograder.samples import PERFECT, mistakes
from autograder.samples.submission import make_submission
from autograder.settings import GradeSettings

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


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    """The feedback page of q1's naive-softmax mistake, figure included."""
    course = tmp_path_factory.mktemp("feedback")
    source = nbs.read(ROOT / "source" / A / f"{A}.ipynb")
    naive = next(v for v in mistakes(A) if v.name == "naive_softmax")
    for student, variant in (("naive", naive), ("perfect", PERFECT)):
        nb = make_submission(source, release_notebook(load(A)), variant)
        if student != "naive":  # the page under test keeps its figure
            without_plots(nb)
        nbs.write(nb, course / "submitted" / student / A / f"{A}.ipynb")
    rows = grade(submissions=course / "submitted", out=course / "out",
                 settings=GradeSettings(salt="feedback-page"), jobs=1)
    row = next(r for r in rows if r.student == "naive")
    return course / "out" / row.feedback


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
