"""The student's check from inside the notebook, in JupyterLab 4 and headless Chromium.

One ``jupyter lab`` and one Chromium for the module. A q1 release notebook whose softmax
subtracts the whole array's maximum runs its last cell (the check cell) in the page: the
page shows the lost cell with 0 points, the cause and the total one below the maximum; a right
notebook shows the maximum; nbgrader's Validate button (which would say "passes all the tests") is not
on the notebook's toolbar, with the course's Jupyter settings in place.
"""

from __future__ import annotations

import pytest
from browser_helpers import BROWSER
from lab_browser import Lab, lab_page
from pipeline_helpers import ROOT

from autograder.authoring import cells as nbs
from autograder.engine.host.manifest import load, release_notebook
from autograder.samples import alternatives, mistakes
from autograder.samples.submission import make_submission

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(BROWSER is None, reason="needs chromium (.ci/run installs it)")]
A = "q1_value_scaling"
TOTAL = int(load(A).auto_max)

#: The notebook panel of ``{path}`` (``shell.currentWidget`` follows focus, which a headless
#: page lacks).
_PANEL = ("Array.from(jupyterapp.shell.widgets('main'))"
          ".find(w => w.sessionContext && w.context && w.context.path === '{path}')")
_READY = ("(() => {{ const w = window.jupyterapp && " + _PANEL + ";"
          " const k = w && w.sessionContext.session && w.sessionContext.session.kernel;"
          " return !!(k && k.status === 'idle' && w.content.widgets.length > 10); }})()")
_RUN_LAST = ("(() => {{ const w = " + _PANEL + "; jupyterapp.shell.activateById(w.id);"
             " w.content.activeCellIndex = w.content.widgets.length - 1;"
             " jupyterapp.commands.execute('notebook:run-cell'); return true; }})()")
_TOTAL = ("(() => {{ const t = " + _PANEL + ".content.widgets.at(-1).outputArea.node.innerText;"
          " return t.includes('总分：') ? t : ''; }})()")
_TOOLBAR = "document.querySelector('.jp-NotebookPanel-toolbar').innerText"


def _write(folder, variant) -> str:
    nb = make_submission(nbs.read(ROOT / "source" / A / f"{A}.ipynb"), release_notebook(load(A)),
                         variant)
    nbs.write(nb, folder / f"{A}.ipynb")
    return f"{folder.name}/{A}.ipynb"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    home = tmp_path_factory.mktemp("home")
    paths = {"wrong": _write(root / "wrong", next(v for v in mistakes(A) if v.name == "global_max")),
             "right": _write(root / "right", alternatives(A)[0])}
    server = Lab(root, home)
    page = lab_page(home / "chromium")
    try:
        server.wait()
        yield server, page, paths
    finally:
        page.close()
        server.stop()


def _check_in_page(lab, which: str) -> tuple[str, str]:
    server, page, paths = lab
    path = paths[which]
    # a workspace per notebook: the other notebook is not restored beside it
    page.navigate(server.url(f"/lab/workspaces/{which}/tree/{path}"))
    page.until(_READY.format(path=path), 180, "the notebook with an idle kernel")
    page.evaluate(_RUN_LAST.format(path=path), strict=False)
    report = page.until(_TOTAL.format(path=path), 240, "the check cell's total")
    return report, page.evaluate(_TOOLBAR, strict=False) or ""


def test_global_max_softmax_shows_lost_points(lab):
    report, toolbar = _check_in_page(lab, "wrong")
    assert "test_softmax_stable（0 / 1 分）" in report
    assert "【减去了整张打分表的最大值】" in report
    assert "softmax 直接计算 exp(z)" not in report
    assert f"总分：{TOTAL - 1} / {TOTAL} 分" in report
    assert "检查的是已保存的文件" in report
    assert "passes all the tests" not in report + toolbar
    assert "Validate" not in toolbar


def test_right_notebook_shows_full_marks(lab):
    report, toolbar = _check_in_page(lab, "right")
    assert "❌" not in report.split("拓展练习")[0]
    assert f"总分：{TOTAL} / {TOTAL} 分（自动评分部分，全部通过" in report
    assert "Validate" not in toolbar
