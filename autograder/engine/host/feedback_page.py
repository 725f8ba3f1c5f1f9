"""The student's feedback page, rendered from the grader's own records.

One self-contained HTML file: a summary table (✅/❌ and the check's Chinese title per
graded cell, points), then the notebook with each graded cell's verdict in a wrapped,
highlighted box above its code. Math renders offline as MathML (no CDN), hidden test
regions are never shown. Whatever the student wrote reaches the page as text or through
:func:`~.sanitize.safe_html` (written answers' Markdown and raw HTML, LaTeX as MathML,
``text/markdown`` outputs); the only other outputs shown are text and the PNG/JPEG
pictures :mod:`.outputs` validated. Verdicts come from :class:`~.job.CellResult`,
not from outputs.

After hand grading the page is rendered again from the autograded notebook and
``gradebook.db`` (:mod:`autograder.integrations.nbgrader.feedback`): a cell's
``hand_score`` and the job's ``comments`` (the instructor's, escaped all the same) then
show, and the totals count them. A written answer shows one of three states, the same
in the summary and above the cell: blank ("没有作答", 0 points), waiting for the
instructor ("—"), or graded by the instructor. The layout reads on a phone (a viewport
tag; prose wraps, code, outputs, maths and tables scroll inside their own boxes).

Rendering one page is bounded in work and time, whatever the student wrote or printed
(:class:`Budget`): at most :data:`PAGE_CHARS` of Markdown, LaTeX and code are rendered
richly, for at most :data:`PAGE_SECONDS`; the rest shows as plain text and the page says
so. Maths is rendered by mistune's renderer, never found again in its output by a
pattern, and every pattern that touches student text is linear.
"""

from __future__ import annotations

import functools
import html
import re
import time

from ...settings import Status
from .hidden import shown
from .sanitize import safe_html

__all__ = ["render_feedback", "markdown_html", "warm", "Budget", "TOO_LARGE", "TOO_LARGE_PAGE",
           "ICONS", "STATUS_WORDS", "VIEWPORT", "BLANK_WORD", "HAND_WORD"]

ICONS = {Status.PASSED: "✅", Status.FAILED: "❌", Status.NOT_RUN: "❌", Status.ERROR: "⚠️",
         Status.MANUAL: "✍️"}
STATUS_WORDS = {Status.PASSED: "通过", Status.FAILED: "未通过", Status.NOT_RUN: "未运行",
                Status.ERROR: "评分程序出错，待老师处理", Status.MANUAL: "待老师人工评分"}
#: The states of a written answer besides waiting (:data:`STATUS_WORDS`'s ``MANUAL``).
BLANK_WORD, HAND_WORD = "没有作答", "老师已评分"
#: A phone lays the page out at its own width, not at 980 px with tiny text.
VIEWPORT = '<meta name="viewport" content="width=device-width, initial-scale=1">'
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: One page's rendering budget: characters of Markdown, LaTeX and code it renders richly
#: (the course's own text costs about 55 000), and seconds. A text past what is left,
#: and everything once the time is up, shows plainly (escaped, linear) and says so.
#: Each rich piece is at most the characters left and a formula at most MAX_FORMULA
#: (the converter's work grows faster than its input), so a page takes at most about
#: PAGE_SECONDS plus one piece's time (measured: 4 s at worst, loaded), whatever the
#: student wrote or printed.
PAGE_CHARS, PAGE_SECONDS, MAX_FORMULA = 300_000, 15.0, 5_000
#: What one ``$`` costs of the budget: a formula is converted on its own, about 0.2 ms,
#: the time mistune takes for 50 characters (``$x$ `` times 50 000 took 16 s otherwise).
FORMULA_COST = 50
#: Characters of one piece shown plainly (a written answer of 1 MB of newlines is no
#: page for a phone).
PLAIN_CHARS = 100_000
TOO_LARGE = "此处内容过多，超出反馈页面的渲染上限，按纯文本显示（不影响评分）"
TOO_LARGE_PAGE = "本页内容过多，超出反馈页面的渲染上限，超出部分按纯文本显示（不影响评分）。"

CSS = """
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{font-family:system-ui,"Noto Sans CJK SC","Noto Sans SC","PingFang SC","Microsoft YaHei",
"WenQuanYi Micro Hei","WenQuanYi Zen Hei",sans-serif,"Noto Color Emoji","Apple Color Emoji",
"Segoe UI Emoji";line-height:1.6;max-width:980px;margin:2em auto;padding:0 1em;
color:#1f2328}
h1{font-size:1.5em;margin-bottom:.2em} .sub{color:#57606a;margin-top:0}
table.summary{border-collapse:collapse;width:100%;margin:1em 0}
table.summary td,table.summary th{border:1px solid #d0d7de;padding:.35em .6em;text-align:left;
vertical-align:top;overflow-wrap:anywhere} table.summary td.pts{white-space:nowrap;text-align:right}
.cell{margin:1.2em 0} .md{overflow-wrap:anywhere;overflow-x:auto}
.md table{display:block;overflow-x:auto;max-width:100%;border-collapse:collapse;
overflow-wrap:normal}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0;font-family:ui-monospace,
"SFMono-Regular",Menlo,Consolas,"Noto Sans Mono CJK SC",monospace;font-size:.9em}
.code pre,.out pre{white-space:pre;overflow-wrap:normal}
.code{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:.6em .8em;
overflow-x:auto}
.out{padding:.4em .8em;border-left:3px solid #d0d7de;margin-top:.3em;overflow-x:auto}
.out.err{border-color:#cf222e;background:#fff8f8} .out img{max-width:100%}
.verdict{border-radius:6px;padding:.6em .9em;margin-bottom:.4em;border-left:6px solid}
.verdict.passed{background:#edfbef;border-color:#1a7f37}
.verdict.failed,.verdict.not-run{background:#fff1f0;border-color:#cf222e}
.verdict.error{background:#fff8e5;border-color:#bf8700}
.verdict.manual{background:#f1f5ff;border-color:#0969da}
.verdict .title{font-weight:600} .verdict .why{white-space:pre-wrap;overflow-wrap:anywhere;
margin:.4em 0 0;background:#fffbdd;padding:.5em .7em;border-radius:4px}
.comment{white-space:pre-wrap;overflow-wrap:anywhere;margin:.4em 0;
background:#fff;border:1px solid #0969da;padding:.5em .7em;border-radius:4px}
.comment .who{font-weight:600}
.plain{color:#9a6700;font-size:.9em;margin:0 0 .3em}
.mathbox{overflow-x:auto;max-width:100%} math[display=block]{display:block;margin:.6em 0}
@media (max-width:600px){body{margin:1em auto;padding:0 .6em}
table.summary td,table.summary th{padding:.3em .35em}}
"""


def _latex(tex: str, display: bool) -> str:
    """MathML, sanitised: latex2mathml copies ``\\text{...}`` into the markup unescaped.
    A formula longer than :data:`MAX_FORMULA` is shown as its source: the converter's
    work grows faster than its input (``\\text{<b>…`` of 200 kB takes 14 s)."""
    from latex2mathml.converter import convert

    if len(tex) > MAX_FORMULA:
        return f"<code>{html.escape(tex)}</code>"
    try:
        return safe_html(convert(tex.strip(), display="block" if display else "inline"))
    except Exception:  # an expression the converter does not know: show the source
        return f"<code>{html.escape(tex)}</code>"


def _display(tex: str) -> str:
    """Display maths in a box of its own, which scrolls when the formula is wider."""
    return f'<div class="mathbox">{_latex(tex, True)}</div>'


@functools.cache
def _markdown():
    """mistune with its maths rendered straight to MathML by the renderer: no
    placeholder in the HTML a student could also type, and no pattern over the whole
    rendered text (the old one, ``<div class="math">\\$\\$(.*?)…`` with re.S, was
    quadratic: 1 MB of openings took about 10 minutes)."""
    import mistune

    render = mistune.create_markdown(escape=False, plugins=["math", "table", "strikethrough"])
    render.renderer.register("block_math", lambda _r, text: _display(text) + "\n")
    render.renderer.register("inline_math", lambda _r, text: _latex(text, False))
    return render


@functools.lru_cache(maxsize=4096)
def markdown_html(text: str) -> str:
    """Markdown (student or course text) as sanitised HTML, math as MathML: raw HTML is
    kept as Jupyter showed it to the student, less what :func:`.safe_html` removes.
    Cached: a worker renders the same course text for every student. Linear in the
    text (mistune's own patterns, measured on adversarial input up to 1 MB); the page's
    :class:`Budget` bounds how much of it one page renders."""
    return safe_html(_markdown()(text))


@functools.lru_cache(maxsize=4096)
def _code(source: str) -> str:
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer

        body = highlight(source, PythonLexer(), HtmlFormatter(nowrap=True, noclasses=True))
    except ImportError:  # pragma: no cover - pygments comes with IPython
        body = html.escape(source)
    return f'<div class="code"><pre>{body}</pre></div>'


def warm(notebook) -> None:
    """Render the cells every student shares (the released notebook) into the caches:
    done once before the workers fork, none of them renders them again."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            markdown_html(cell.source)
        elif cell.cell_type == "code":
            _code(shown(cell.source))


class Budget:
    """What one page may still render richly (see :data:`PAGE_CHARS`)."""

    def __init__(self, chars: int = PAGE_CHARS, seconds: float = PAGE_SECONDS) -> None:
        self.chars, self.deadline = chars, time.monotonic() + seconds
        self.spent = False  # something was shown plainly (the page says so at the top)

    def take(self, text: str, *, maths: bool = False) -> bool:
        """Whether ``text`` may be rendered richly (``maths``: Markdown, each ``$`` of
        which may open a formula, which costs :data:`FORMULA_COST`). A text larger
        than what is left is refused alone (a smaller one after it may still fit); once
        the time is up, everything is."""
        cost = len(text) + (FORMULA_COST * text.count("$") if maths else 0)
        if cost > self.chars or time.monotonic() > self.deadline:
            self.spent = True
            return False
        self.chars -= cost
        return True


def _plain(text: str, extra: str = "") -> str:
    """Text the budget did not cover, as it is (escaped, its first :data:`PLAIN_CHARS`),
    with the note saying why."""
    cut = f"\n…（以下省略 {len(text) - PLAIN_CHARS:,} 个字符）" if len(text) > PLAIN_CHARS else ""
    return (f'<div class="out{extra}"><p class="plain">{TOO_LARGE}</p>'
            f"<pre>{html.escape(text[:PLAIN_CHARS])}{cut}</pre></div>")


def _output(out: dict, budget: Budget) -> str:
    kind = out.get("output_type")
    if kind == "stream":
        text = html.escape(_ANSI.sub("", out.get("text", "")))
        return f'<div class="out"><pre>{text}</pre></div>'
    if kind == "error":
        lines = [_ANSI.sub("", line) for line in out.get("traceback", [])] or \
            [f"{out.get('ename')}: {out.get('evalue')}"]
        return f'<div class="out err"><pre>{html.escape(chr(10).join(lines))}</pre></div>'
    data = out.get("data", {})
    for mime in ("image/png", "image/jpeg"):
        if mime in data:  # base64 checked by .outputs; escaped all the same
            return (f'<div class="out"><img alt="figure" '
                    f'src="data:{mime};base64,{html.escape(data[mime])}"></div>')
    if "text/latex" in data:
        tex = data["text/latex"].strip().strip("$")
        return f'<div class="out">{_display(tex)}</div>' if budget.take(tex) else _plain(tex)
    if "text/markdown" in data:
        text = data["text/markdown"]
        return (f'<div class="out md">{markdown_html(text)}</div>'
                if budget.take(text, maths=True) else _plain(text))
    if "text/plain" in data:
        return f'<div class="out"><pre>{html.escape(_ANSI.sub("", data["text/plain"]))}</pre></div>'
    return ""


PRACTICE_NOTE = "拓展练习，不计分"


def _state(r) -> tuple[str, str]:
    """A graded cell's word and points ("2 / 3"), the one way both the summary and the
    verdict show it: a written answer is blank (0), graded by hand, or waiting ("—")."""
    if r.practice:
        return STATUS_WORDS[r.status], "练习"
    word = STATUS_WORDS[r.status]
    if r.manual:
        word = HAND_WORD if r.hand_score is not None else BLANK_WORD if r.blank else word
    elif r.hand_score is not None and r.hand_score != r.score:  # formgrader's override
        word += f"（老师改为 {r.hand_score:g} 分）"
    points = r.points
    return word, f'{"—" if points is None else f"{points:g}"} / {r.max_score:g}'


def _comment(text: str | None) -> str:
    """The instructor's comment on a cell (their text, escaped all the same)."""
    if not text:
        return ""
    return f'<div class="comment"><span class="who">老师评语：</span>{html.escape(text)}</div>'


def _verdict(result, comment: str | None = None) -> str:
    status = result.status
    word, points = _state(result)
    score = PRACTICE_NOTE if result.practice else f"{points} 分"
    why = "".join(f'<div class="why">{html.escape(m)}</div>' for m in result.messages
                  if status != Status.PASSED)
    return (f'<div class="verdict {status}"><span class="title">{ICONS[status]} '
            f'{html.escape(result.title or result.grade_id)}</span> — {word}，{score}'
            f'{why}{_comment(comment)}</div>')


def _row(r) -> str:
    word, pts = _state(r)
    return (f'<tr><td>{ICONS[r.status]}</td><td><a href="#{html.escape(r.grade_id)}">'
            f'{html.escape(r.title or r.grade_id)}</a></td><td>{word}</td>'
            f'<td class="pts">{pts}</td></tr>')


def _written(job, got: float, total: float) -> str:
    """The written answers' points and the total once every one is graded (or blank)."""
    written = [r for r in job.cells.values() if r.manual]
    if not written:
        return "。"
    waiting = sum(r.points is None for r in written)
    if waiting:
        return f"；文字回答待老师人工评分（已评 {len(written) - waiting} / {len(written)} 项）。"
    w_got, w_max = sum(r.points for r in written), sum(r.max_score for r in written)
    return (f"；文字回答 {w_got:g} / {w_max:g} 分；"
            f"总分 <b>{got + w_got:g} / {total + w_max:g}</b> 分。")


def _totals(job) -> str:
    """The automatic points: in all, and the core and the graded 拓展 apart when both
    count; a practice extension is a count of checks passed; then the written answers."""
    auto = [r for r in job.cells.values() if not r.manual]
    got, total = sum(r.points or 0 for r in auto), sum(r.max_score for r in auto)
    adjusted = any(r.hand_score is not None and r.hand_score != r.score for r in auto)
    line = f"自动评分{'（含老师调整）' if adjusted else ''}：<b>{got:g} / {total:g}</b> 分"
    extension = [r for r in auto if r.part != "core"]
    if extension:
        ext_got = sum(r.points or 0 for r in extension)
        ext_max = sum(r.max_score for r in extension)
        line += f"（必做 {got - ext_got:g} / {total - ext_max:g}，拓展 {ext_got:g} / {ext_max:g}）"
    practice = list(job.practice.values())
    if practice:
        passed = sum(r.status == Status.PASSED for r in practice)
        line += f"；拓展练习通过 {passed} / {len(practice)} 项（不计分）"
    return f"<p>{line}{_written(job, got, total)}</p>"


def _summary(job) -> str:
    rows = [_row(r) for r in (*job.cells.values(), *job.practice.values())]
    return (_totals(job) + '<table class="summary"><tr><th></th><th>检查项</th><th>结果</th>'
            '<th>得分</th></tr>' + "".join(rows) + "</table>")


def _cell(cell, budget: Budget, job) -> str:
    """A Markdown or code cell's own text and outputs, within the page's budget."""
    if cell.cell_type == "markdown":
        if budget.take(cell.source, maths=True):
            return f'<div class="md">{markdown_html(cell.source)}</div>'
        return _plain(cell.source)
    if cell.cell_type != "code":
        return ""
    source = shown(cell.source)
    body = _code(source) if budget.take(source) else _plain(source, " code")
    return body + "".join(_output(o, budget) for o in cell.get("outputs", [])
                          if id(o) not in job.verdicts)


def render_feedback(job, budget: Budget | None = None) -> str:
    """The whole page for one graded submission (hand grades and comments included
    once :mod:`autograder.integrations.nbgrader.feedback` has read them), within one
    page's :class:`Budget`: past it the text shows plainly and the page says so."""
    budget = budget or Budget()
    parts = [f"<h1>{html.escape(job.assignment)} 反馈</h1>",
             f'<p class="sub">学生：{html.escape(job.student)}</p>', _summary(job)]
    for cell in job.nb.cells:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        result = job.cells.get(gid) or job.practice.get(gid)
        comment = job.comments.get(gid) if isinstance(gid, str) else None
        anchor = f' id="{html.escape(gid)}"' if result else ""
        body = _verdict(result, comment) if result else _comment(comment)
        parts.append(f'<div class="cell"{anchor}>{body}{_cell(cell, budget, job)}</div>')
    if budget.spent:  # said once at the top as well, where the student starts reading
        parts.insert(3, f'<p class="plain">{TOO_LARGE_PAGE}</p>')
    protection = getattr(job, "protection", "")  # the grader's own word, never the student's
    if protection:
        parts.append(f'<p class="sub protection">评分保护（protection）：{html.escape(protection)}</p>')
    return ("<!DOCTYPE html>\n<html lang=\"zh-CN\"><head><meta charset=\"utf-8\">"
            f"{VIEWPORT}"
            f"<title>{html.escape(job.assignment)} 反馈 — {html.escape(job.student)}</title>"
            f"<style>{CSS}</style></head><body>{''.join(parts)}</body></html>\n")
