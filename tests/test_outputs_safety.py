"""What of a student's outputs and Markdown is kept, and how much: each protection on its
own, in process (one small sandbox child for the run-reply limit). The same protections
in real pages, in Chromium, are in ``test_browser_pages.py``."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import nbformat
import pytest
from browser_helpers import A, hostile_submission
from hostile_browser import ATTACKS, PREBAKED, loader

from autograder.authoring import cells as nbs
from autograder.engine.child.runtime import within
from autograder.engine.host import feedback_page, pipeline
from autograder.engine.host.job import Job
from autograder.engine.host.manifest import load
from autograder.engine.host.outputs import (
    MAX_IMAGE,
    SAFE_MIME,
    OutputBudget,
    clean_outputs,
    output_size,
)
from autograder.engine.host.prepare import ClearSubmittedOutputs
from autograder.engine.host.proxy import RUN_REPLY_SLACK
from autograder.engine.host.sanitize import safe_html
from autograder.engine.host.zygote_link import Zygote
from autograder.engine.protocol.faults import ChildGone
from autograder.engine.protocol.limits import SandboxLimits
from autograder.integrations.nbgrader.preprocessors import BrowserSafe, markdown2html
from autograder.settings import GradeSettings

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 40).decode()
JPEG = base64.b64encode(b"\xff\xd8\xff\xe0" + b"\0" * 40).decode()


def _display(data: dict) -> dict:
    return {"output_type": "display_data", "data": data, "metadata": {}}


# ------------------------------------------------------------------ MIME types


@pytest.mark.parametrize("attack", [a for a in ATTACKS if a.outputs], ids=lambda a: a.name)
def test_only_types_no_browser_runs_are_kept(attack):
    kept = clean_outputs([dict(o) for o in attack.outputs])
    assert all(set(o.get("data", {})) <= set(SAFE_MIME) for o in kept)
    assert all("text/plain" in o["data"] for o in kept if "data" in o)


@pytest.mark.parametrize("data, kept", [
    ({"image/png": PNG}, {"image/png"}),
    ({"image/jpeg": JPEG}, {"image/jpeg"}),
    ({"image/png": PNG[:20] + "\n" + PNG[20:]}, {"image/png"}),  # nbformat wraps lines
    ({"image/png": JPEG}, set()),  # not what it says it is
    ({"image/png": base64.b64encode(b"<svg onload=alert(1)>").decode()}, set()),
    ({"image/png": "not base64!!"}, set()),
    ({"image/png": "iVBORw0KGgo" + "A" * MAX_IMAGE}, set()),  # too large
    ({"image/svg+xml": "<svg/>", "text/html": "<b>", "application/javascript": "x",
      "application/vnd.jupyter.widget-view+json": "{}", "application/json": "{}",
      "text/plain": "ok"}, {"text/plain"}),
])
def test_pictures_are_real_png_or_jpeg_within_bounds(data, kept):
    out = clean_outputs([_display(data)])
    assert set(out[0].data if out else {}) == kept


# ------------------------------------------------------------------ the budget


def _stream(n: int) -> nbformat.NotebookNode:
    return nbformat.v4.new_output("stream", name="stdout", text="x" * n)


def test_the_budget_keeps_outputs_while_they_fit_then_one_notice_then_nothing():
    one = output_size(_stream(300))
    budget = OutputBudget(3 * one + 10)
    assert budget.take([_stream(300), _stream(300)]) == [_stream(300), _stream(300)]
    third = budget.take([_stream(300), _stream(300), _stream(1)])
    assert [o.text for o in third[:-1]] == ["x" * 300] and "此后的输出已省略" in third[-1].text
    assert budget.exhausted and budget.left == 0 and budget.take([_stream(1)]) == []
    assert budget.used == 3 * one


def test_a_child_that_says_it_cut_spends_the_budget():
    budget = OutputBudget(1 << 20)
    kept = budget.take([_stream(5)], cut=True)
    assert len(kept) == 2 and budget.exhausted


def test_the_child_keeps_its_outputs_within_the_room_it_is_given():
    outs = [{"output_type": "stream", "name": "stdout", "text": "文" * 1000} for _ in range(5)]
    kept, cut = within(outs, 7000)
    assert cut and len(kept) == 2  # 3000 bytes of UTF-8 each, plus the JSON around it
    assert within(outs, None) == (outs, False)


@pytest.fixture(scope="module")
def zygote():
    z = Zygote(figures=False, warm=False, tokenizer=False)
    yield z
    z.close()


def test_the_host_reads_no_run_reply_larger_than_its_room(zygote):
    child = zygote.spawn(SandboxLimits())
    try:
        reply = child.run("print('y' * 900_000)", seconds=20, output_bytes=100_000)
        assert reply["cut"] is True and reply["outputs"] == []
        reply = child.run("print('y' * 900_000)", seconds=20, output_bytes=None)
        assert len(reply["outputs"][0]["text"]) >= 900_000  # no room given, none enforced
        child.run("import sys\nsys.modules['autograder.engine.child.runtime'].within = "
                  "lambda outputs, room: (outputs, False)", seconds=20)
        with pytest.raises(ChildGone):  # a child that ignores its room is not read
            child.run("print('y' * 900_000)", seconds=20, output_bytes=900_000 - RUN_REPLY_SLACK)
        assert not child.alive
    finally:
        child.close()


# ------------------------------------------------------------------ clearing what came in


class _DeadChild:
    """A child that is gone before the first cell (its cells never run)."""

    alive, death, pid = False, "进程已经退出。", 0

    def send_files(self, files):
        pass

    def kill(self, reason):
        pass


class _Zygote:
    def spawn(self, limits):
        return _DeadChild()

    def retire(self, child):
        pass


def _graded(tmp_path: Path, steps) -> nbformat.NotebookNode:
    folder = tmp_path / "sub"
    nbs.write(hostile_submission(), folder / f"{A}.ipynb")
    job = Job("s", A, folder, load(A), GradeSettings(), zygote=_Zygote())
    pipeline.run(job, steps=steps)
    return job.nb


def test_cells_that_never_run_show_nothing_the_submission_brought(tmp_path):
    nb = _graded(tmp_path, pipeline.PIPELINE)
    assert all(c.outputs == [] and c.execution_count is None
               for c in nb.cells if c.cell_type == "code")
    assert "widgets" not in nb.metadata
    bare = tuple(s for s in pipeline.PIPELINE if not isinstance(s, ClearSubmittedOutputs))
    assert PREBAKED in json.dumps(_graded(tmp_path / "bare", bare), ensure_ascii=False)  # without the step


# ------------------------------------------------------------------ sanitising


@pytest.mark.parametrize("fragment", [
    '<img src=x onerror="alert(1)">', '<a href="javascript:alert(1)">x</a>',
    '<a href="jav&#x09;ascript:alert(1)">x</a>', '<a href="data:text/html,<script>1</script>">x</a>',
    '<iframe srcdoc="<script>alert(1)</script>"></iframe>', "<svg><script>alert(1)</script></svg>",
    "<math><mtext><img src=x onerror=alert(1)></mtext></math>", '<img src="data:image/svg+xml;base64,AA">',
    "<math><style><img src=x onerror=alert(1)></style></math>", '<details ontoggle=alert(1) open>',
    '<object data="x"></object>', '<form action="x"><input></form>', "<style>*{}</style>",
    '<mrow href="javascript:alert(1)">', '<img src="https://example.org/track.png">',
])
def test_safe_html_leaves_nothing_that_runs_or_loads(fragment):
    out = safe_html(fragment).lower()
    for bad in ("<script", "onerror", "ontoggle", "javascript:", "<iframe", "<svg", "<style",
                "<object", "<form", "data:text", "data:image/svg", "https:"):
        assert bad not in out, (fragment, out)


def test_safe_html_keeps_what_markdown_and_mathml_need():
    from latex2mathml.converter import convert

    maths = convert(r"\mathrm{softmax}\left(\frac{QK^\top}{\sqrt{d_k}}\right) V,\ "
                    r"\begin{pmatrix}1&2\\3&4\end{pmatrix},\ \hat{x}_i^2", display="block")
    kept = safe_html(maths)
    tags = lambda html: [t for t in html.split("<") if t and not t.startswith("/")]  # noqa: E731
    assert [t.split(">")[0].split()[0] for t in tags(kept)] == \
        [t.split(">")[0].split()[0] for t in tags(maths)]
    md = feedback_page.markdown_html("**粗体** `code` [链接](https://example.org) <sub>2</sub>\n\n"
                                     "| a | b |\n|---|---|\n| 1 | 2 |")
    for tag in ("<strong>", "<code>", 'href="https://example.org"', "<sub>", "<table>", "<td>"):
        assert tag in md


def test_the_student_page_s_markdown_and_latex_go_through_nh3(monkeypatch):
    text = f"答 <img src=x onerror=\"{loader('a')}\"> $\\text{{<img/src/onerror={loader('b')}>}}$"
    assert "onerror" not in feedback_page.markdown_html(text)
    monkeypatch.setattr(feedback_page, "safe_html", lambda fragment: fragment)
    feedback_page.markdown_html.cache_clear()
    try:
        assert feedback_page.markdown_html(text).count("onerror") == 2  # what nh3 removed
    finally:
        feedback_page.markdown_html.cache_clear()


def test_nbgrader_s_markdown_filter_sanitises():
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    text = f"[x](javascript:{loader('c')}) <iframe srcdoc='&lt;script&gt;1&lt;/script&gt;'></iframe> $a<b$"
    assert "javascript:" in markdown2html_mistune(text)  # nbconvert keeps it as written
    html = markdown2html(text)
    assert "javascript:" not in html and "<iframe" not in html and "$a&lt;b$" in html


def test_browser_safe_leaves_nbgrader_s_pages_only_safe_cells():
    nb = hostile_submission()
    nb.cells.append(nbformat.v4.new_raw_cell("<script>1</script>",
                                             metadata={"raw_mimetype": "text/html"}))
    nb.cells[-1]["attachments"] = {"a.svg": {"image/svg+xml": "PHN2Zy8+"}}
    nb, _ = BrowserSafe().preprocess(nb, {})
    kinds = {m for c in nb.cells for o in c.get("outputs", []) for m in o.get("data", {})}
    assert kinds <= set(SAFE_MIME) and "widgets" not in nb.metadata
    assert not any("attachments" in c or "raw_mimetype" in c.metadata for c in nb.cells)
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
    assert "written_qk_vs_v" in ids and not any(i and '"' in i for i in ids)


def test_the_course_config_installs_the_sanitising():
    from pipeline_helpers import ROOT
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert BrowserSafe in config.HTMLExporter.preprocessors
    assert config.HTMLExporter.sanitize_html is True
    assert config.HTMLExporter.filters["markdown2html"] is markdown2html

