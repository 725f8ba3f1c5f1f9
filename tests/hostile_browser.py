"""Hostile submissions aimed at a browser: every place a graded notebook is shown.

Each :class:`BrowserAttack` is a way a student gets markup or script in front of whoever
opens the graded notebook: the instructor in formgrader (whose page holds the token of a
server that reads and writes the whole course), the student on the feedback page. One
submission carries them all: q1's honest wrong answer (no 1/√d_k), plus

- ``code``: a cell inserted after the imports, whose live outputs carry the attack;
- ``outputs``: the same outputs pre-baked in the submitted notebook (what a notebook
  graded by plain ``nbgrader autograde`` would keep), on that cell or on ``on_cell``;
- ``answer``: Markdown added to the first written answer;
- ``cell``: a whole extra cell (forged metadata).

Every script, when it runs, marks the page's root element with ``data-pwned-<name>``
and asks the Jupyter contents API (with the token from the page's address or the XSRF
cookie) to write ``pwned-<name>.txt`` into the server's folder. The marker's text never
appears in the submission itself (the script is base64, its attribute name built at run
time), so a ``data-pwned-`` attribute in a page's DOM means the script ran, and escaped
or removed markup cannot look like it did. ``fires`` lists the pages on which it ran
with our sanitising removed (each test shows it does, then that it does not with it).
``link``: a ``javascript:`` link, which runs only when clicked: found by its ``href``.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

__all__ = ["BrowserAttack", "ATTACKS", "loader", "PREBAKED", "MARK", "FLOOD", "CHATTY"]

#: What a page's root element carries once a script of ours ran there.
MARK = "data-pwned-"
#: Text of the pre-baked verdict on a test cell (a cell's outputs from before grading).
PREBAKED = "✅ 通过（PREBAKED）"

_SCRIPT = (
    "(function(n){var d=top.document;d.documentElement.setAttribute(['data','pwned',n]"
    ".join('-'),'1');try{var h={'Content-Type':'application/json'};"
    "var q=new URLSearchParams(top.location.search).get('token');"
    "if(q){h['Authorization']='token '+q;}"
    "var m=d.cookie.match(/_xsrf=([^;]+)/);if(m){h['X-XSRFToken']=decodeURIComponent(m[1]);}"
    "fetch('/api/contents/'+['pwned',n].join('-')+'.txt',{method:'PUT',headers:h,"
    "body:JSON.stringify({type:'file',format:'text',content:n})}).catch(function(){});"
    "}catch(e){}})('NAME')"
)


def loader(name: str) -> str:
    """``eval(atob('…'))`` of the marking script: no space, no double quote, no ``=``."""
    script = _SCRIPT.replace("NAME", name)
    script += " " * (-len(script) % 3)  # no base64 padding
    return f"eval(atob('{base64.b64encode(script.encode()).decode()}'))"


@dataclass(frozen=True)
class BrowserAttack:
    name: str
    code: str | None = None
    outputs: tuple[dict, ...] = ()
    on_cell: str | None = None
    answer: str | None = None
    cell: dict | None = None
    fires: frozenset[str] = field(default_factory=frozenset)
    link: bool = False


def _display(data: dict) -> dict:
    return {"output_type": "display_data", "data": data, "metadata": {}}


def _img(name: str) -> str:
    return f'<img src="x" onerror="{loader(name)}">'


def _attacks() -> tuple[BrowserAttack, ...]:
    html = _img("html_output") + f"<script>{loader('html_output')}</script>"
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" onload="{loader("svg_output")}">'
           f'<script>{loader("svg_output")}</script><circle r="5"/></svg>')
    tex = f"$\\text{{<img/src/onerror={loader('latex_text')}>}}$"
    href = f"$\\href{{javascript:{loader('latex_href')}}}{{点我}}$"
    md_out = _img("markdown_output")
    shout = _img("plain_text_html")
    widget = {"application/vnd.jupyter.widget-view+json":
              {"model_id": "0" * 32, "version_major": 2, "version_minor": 0}, "text/plain": "w"}
    forged = {"cell_type": "markdown", "source": "（伪造的答题单元格）",
              "metadata": {"nbgrader": {"solution": False, "grade": True, "points": 1,
                                        "locked": False,
                                        "grade_id": f'x"><img src=x onerror="{loader("forged_grade_id")}">',
                                        "schema_version": 3}}}
    return (
        BrowserAttack("html_output", f"from IPython.display import HTML, display\n"
                      f"display(HTML({html!r}))",
                      (_display({"text/html": html, "text/plain": "<HTML>"}),),
                      fires=frozenset({"formgrader"})),
        BrowserAttack("javascript_output", f"from IPython.display import Javascript, display\n"
                      f"display(Javascript({loader('javascript_output')!r}))",
                      (_display({"application/javascript": loader("javascript_output"),
                                 "text/plain": "<Javascript>"}),),
                      fires=frozenset({"formgrader"})),
        BrowserAttack("svg_output", f"from IPython.display import SVG, display\n"
                      f"display(SVG({svg!r}))",
                      (_display({"image/svg+xml": svg, "text/plain": "<SVG>"}),)),
        BrowserAttack("latex_text", f"from IPython.display import Latex, display\n"
                      f"display(Latex({tex!r}))",
                      (_display({"text/latex": tex, "text/plain": "<Latex>"}),),
                      fires=frozenset({"feedback"})),
        BrowserAttack("latex_href", f"from IPython.display import Latex, display\n"
                      f"display(Latex({href!r}))",
                      (_display({"text/latex": href, "text/plain": "<Latex>"}),),
                      fires=frozenset({"feedback"}), link=True),
        BrowserAttack("markdown_output", f"from IPython.display import Markdown, display\n"
                      f"display(Markdown({md_out!r}))",
                      (_display({"text/markdown": md_out, "text/plain": "<Markdown>"}),),
                      fires=frozenset({"formgrader", "feedback"})),
        BrowserAttack("plain_text_html", "class Shout:\n    def __repr__(self):\n"
                      f"        return {shout!r}\n\nShout()",
                      ({"output_type": "execute_result", "execution_count": 3,
                        "data": {"text/plain": shout}, "metadata": {}},)),
        BrowserAttack("widget_view", "from IPython.display import display\n"
                      f"display({widget!r}, raw=True)", (_display(widget),)),
        BrowserAttack("prebaked_verdict", outputs=(
            {"output_type": "stream", "name": "stdout", "text": PREBAKED + "\n"},
            _display({"text/html": _img("prebaked_verdict"), "text/plain": PREBAKED})),
            on_cell="test_softmax", fires=frozenset({"formgrader"})),
        BrowserAttack("answer_img_onerror", answer=_img("answer_img_onerror"),
                      fires=frozenset({"formgrader", "feedback"})),
        BrowserAttack("answer_iframe_srcdoc", answer=(
            f'<iframe srcdoc="&lt;script&gt;{loader("answer_iframe_srcdoc")}&lt;/script&gt;">'
            "</iframe>"), fires=frozenset({"formgrader", "feedback"})),
        BrowserAttack("answer_svg_script", answer=(
            f"<svg><script>{loader('answer_svg_script')}</script></svg>"),
            fires=frozenset({"formgrader", "feedback"})),
        BrowserAttack("answer_javascript_link", answer=(
            f"[点这里看推导](javascript:{loader('answer_javascript_link')})"),
            fires=frozenset({"formgrader"}), link=True),
        BrowserAttack("answer_math_text", answer=(
            f"$\\text{{<img/src/onerror={loader('answer_math_text')}>}}$"),
            fires=frozenset({"feedback"})),
        BrowserAttack("forged_grade_id", cell=forged, fires=frozenset({"formgrader"})),
    )


ATTACKS = _attacks()

#: A cell that lifts the child's own output caps and adds 30 MB to every later cell.
FLOOD = '''
import sys
kernel = sys.modules["autograder.engine.child.runtime"]
kernel.MAX_STREAM = kernel.MAX_DISPLAY = 1 << 40
kernel.within = lambda outputs, room: (outputs, False)
_flood = "洪" * (10 << 20)
get_ipython().events.register("post_run_cell", lambda result: print(_flood))
'''

#: A cell that keeps within every per-cell cap, and prints 600 kB in every later cell.
CHATTY = '''
_chat = "x" * 600_000
get_ipython().events.register("post_run_cell", lambda result: print(_chat))
'''
