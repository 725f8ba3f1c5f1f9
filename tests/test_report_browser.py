"""The class report in a real, headless Chromium with no network: its charts are drawn.

A copy of the page carries a small measuring script (the report itself has none) that
writes what the browser made of it onto the root element: each image's decoded size,
every resource the page fetched, and whether the page scrolls sideways. One browser
start for the module; the test skips, saying why, when no Chromium is installed.
"""

from __future__ import annotations

import html
import json
import re

import pytest
from browser_helpers import BROWSER, chromium
from pipeline_helpers import A

from autograder.grading.batch import Result
from autograder.grading.report import write_report
from autograder.grading.scores import write_outputs

pytestmark = pytest.mark.skipif(BROWSER is None, reason="no Chromium here: apt-get install chromium")

MEASURE = """<script>
addEventListener("load", () => {
  const images = [...document.images].map(i => [i.complete, i.naturalWidth, i.naturalHeight]);
  const fetched = performance.getEntriesByType("resource").map(e => e.name);
  document.documentElement.dataset.measured = JSON.stringify({images, fetched,
    sideways: document.documentElement.scrollWidth > innerWidth});
});
</script>"""


def test_the_charts_render_offline(tmp_path):
    rows = [Result(f"s{i}", A, status="ok", auto_score=float(i % 7), auto_max=20.0,
                   cells={"test_softmax": float(i % 3)}, max_scores={"test_softmax": 2.0},
                   parts={"core": {"score": float(i % 7), "max": 20.0}})
            for i in range(12)]
    write_outputs(rows, tmp_path / "results")
    page = write_report(results=tmp_path / "results")
    measured = tmp_path / "measured.html"
    measured.write_text(page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"),
                        encoding="utf-8")
    dom = chromium(measured.as_uri(), profile=tmp_path / "profile")
    found = re.search(r'data-measured="(.*?)"', dom)
    assert found, dom[-2000:]
    report = json.loads(html.unescape(found.group(1)))
    assert report["images"] and all(done and w >= 400 and h >= 150
                                    for done, w, h in report["images"]), report["images"]
    assert report["fetched"] == [] and not report["sideways"], report
