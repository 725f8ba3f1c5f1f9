"""``autograder report``: the class report, one self-contained HTML page for the instructor.

:func:`write_report` reads RESULTS (the ``--out`` folder of ``autograder grade``: its
``scores.json``, :mod:`.report_rows`), counts (:mod:`.report_stats`), draws the
histograms (:mod:`.report_charts`, embedded as PNG ``data:`` URLs) and writes the page
through a temporary file renamed into place. The page loads nothing: no script, no
stylesheet or font from elsewhere, no external URL at all (checked before it is
written); each student's name links to their feedback page by a relative path into
RESULTS. Every text from ``scores.json`` is escaped, and every list is bounded.
"""

from __future__ import annotations

import base64
import contextlib
import html
import os
import re
import secrets
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

from ..errors import CourseError
from .report_charts import histogram_png
from .report_rows import Due, Row, due_dates, read_rows
from .report_stats import AssignmentStats, Concerns, Misconception, assignment_stats, concerns

__all__ = ["write_report", "REPORT", "MAX_LISTED", "MAX_NAMES"]

#: The report's file name in RESULTS (``autograder grade`` and the demo write it there).
REPORT = "report.html"
#: Rows per list of submissions, and students named per misconception.
MAX_LISTED, MAX_NAMES = 200, 50

_CSS = """
.unprotected { background: #fde2e2; padding: .5em; }
body{font-family:system-ui,"Noto Sans CJK SC","Noto Sans SC","PingFang SC","Microsoft YaHei",
sans-serif;max-width:72em;margin:1em auto;padding:0 1em;line-height:1.5;color:#1f2328}
h1{font-size:1.6em;margin-bottom:.2em} .sub{color:#57606a;margin-top:0}
h2{border-bottom:1px solid #d0d7de;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.92em}
th,td{border:1px solid #d0d7de;padding:.25em .6em;text-align:left;vertical-align:top;
overflow-wrap:anywhere} td.n{text-align:right;white-space:nowrap}
th{background:#f6f8fa} img{max-width:100%;height:auto;display:block}
.note{color:#57606a;font-size:.9em}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _share(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _points(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


class _Links:
    """Each row's feedback page, as a relative link from the report's folder (or none)."""

    def __init__(self, results: Path, here: Path) -> None:
        self.results, self.here = results.resolve(), here.resolve()

    def __call__(self, row: Row) -> str:
        name = _e(row.student)
        if row.feedback is None:
            return name
        page = (self.results / row.feedback).resolve()
        if not page.is_file() or self.results not in page.parents:
            return name
        href = quote(Path(os.path.relpath(page, self.here)).as_posix(), safe="/")
        return f'<a href="{_e(href)}">{name}</a>'


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{_e(alt)}">'


def _histograms(a: AssignmentStats) -> str:
    charts = [("总分（自动评分）", "auto points", a.totals, a.auto_max)]
    for part, zh in (("core", "核心部分"), ("extension", "拓展部分（计分）")):
        if part in a.parts:
            values, top = a.parts[part]
            charts.append((zh, f"{part} points", values, top))
    out = []
    for zh, en, values, top in charts:
        out.append(f"<h3>{_e(zh)}分布：{len(values)} 份，满分 {top:g}</h3>")
        out.append(_img(histogram_png(values, top, xlabel=en), f"{en} histogram"))
    if a.incomplete:
        out.append(f'<p class="note">另有 {a.incomplete} 份因评分程序出错，总分未计入直方图。</p>')
    return "\n".join(out)


def _cell_table(a: AssignmentStats) -> str:
    head = ("<tr><th>单元格</th><th>标题</th><th>分值</th><th>平均分</th><th>满分比例</th>"
            "<th>评分程序出错比例</th></tr>")
    body = "".join(
        f'<tr data-cell="{_e(c.grade_id)}"><td>{_e(c.grade_id)}</td><td>{_e(c.title)}</td>'
        f'<td class="n">{c.points:g}</td><td class="n mean">{_points(c.mean)}</td>'
        f'<td class="n full">{_share(c.full_share)}</td>'
        f'<td class="n errors">{_share(c.error_share)}</td></tr>' for c in a.cells)
    return f"<h3>每个评分单元格</h3>\n<table>{head}{body}</table>"


def _practice_table(a: AssignmentStats) -> str:
    if not a.practice:
        return ""
    head = "<tr><th>单元格</th><th>标题</th><th>已检查</th><th>通过比例</th></tr>"
    body = "".join(
        f'<tr data-practice="{_e(p.grade_id)}"><td>{_e(p.grade_id)}</td><td>{_e(p.title)}</td>'
        f'<td class="n checked">{p.checked}</td><td class="n passed">{_share(p.share)}</td></tr>'
        for p in a.practice)
    return f"<h3>拓展练习（只检查，不计分）</h3>\n<table>{head}{body}</table>"


def _names(rows: list[Row], link: _Links) -> str:
    shown = "、".join(link(r) for r in rows[:MAX_NAMES])
    more = f" 等 {len(rows)} 人" if len(rows) > MAX_NAMES else ""
    return shown + more


def _misconception_table(a: AssignmentStats, link: _Links) -> str:
    if not a.misconceptions:
        return "<h3>常见误解</h3>\n<p>没有提交被诊断出已登记的误解。</p>"
    head = ("<tr><th>误解</th><th>失分人数</th><th>共失分</th><th>失分的学生</th>"
            "<th>拓展练习中出现</th></tr>")

    def row(m: Misconception) -> str:
        return (f'<tr data-key="{_e(m.key)}"><td>{_e(m.label)}</td>'
                f'<td class="n students">{len(m.cost)}</td>'
                f'<td class="n points">{m.points:g}</td><td>{_names(m.cost, link)}</td>'
                f'<td>{_names(m.practice, link)}</td></tr>')

    return f"<h3>常见误解</h3>\n<table>{head}{''.join(map(row, a.misconceptions))}</table>"


def _assignment(a: AssignmentStats, link: _Links) -> str:
    return "\n".join([
        f'<section id="{_e(a.assignment)}"><h2>{_e(a.assignment)}</h2>',
        f"<p>提交 {a.rows} 份，已评分 {a.graded} 份。</p>",
        _histograms(a), _cell_table(a), _practice_table(a),
        _misconception_table(a, link), "</section>"])


def _listing(key: str, title: str, rows: list[tuple[Row, str]], link: _Links) -> str:
    parts = [f'<section id="{key}"><h3>{_e(title)}（{len(rows)}）</h3>']
    if rows:
        body = "".join(f"<tr><td>{link(r)}</td><td>{_e(r.assignment)}</td><td>{_e(why)}</td>"
                       "</tr>" for r, why in rows[:MAX_LISTED])
        parts.append(f"<table><tr><th>学生</th><th>作业</th><th>说明</th></tr>{body}</table>")
        if len(rows) > MAX_LISTED:
            parts.append(f'<p class="note">只列出前 {MAX_LISTED} 份，共 {len(rows)} 份。</p>')
    return "\n".join(parts + ["</section>"])


def _due_note(c: Concerns, due: dict[str, Due]) -> str:
    lines = [f"<li>{_e(a)}：截止 {d.when:%Y-%m-%d %H:%M} UTC（来自 {_e(d.source)}）</li>"
             for a, d in due.items()]
    lines += [f"<li>{_e(a)}：截止时间未知（用 --due 指定，或在 nbgrader 的 gradebook.db 中设置）"
              "</li>" for a in c.no_due]
    if c.undated:
        lines.append(f"<li>{len(c.undated)} 份提交没有 timestamp.txt，无法判断是否迟交</li>")
    return f"<ul>{''.join(lines)}</ul>"


def _concerns(c: Concerns, due: dict[str, Due], link: _Links) -> str:
    late = [(r, f"提交于 {r.timestamp:%Y-%m-%d %H:%M} UTC，晚于截止 {d.when:%Y-%m-%d %H:%M}")
            for r, d in c.late]
    return "\n".join([
        '<section id="concerns"><h2>需要留意的提交</h2>',
        _listing("late", "迟交", late, link), _due_note(c, due),
        _listing("broken", "无法评分", [(r, f"{r.status}：{r.reason}") for r in c.broken], link),
        _listing("timed-out", "超时", [(r, r.reason) for r in c.timed_out], link),
        _listing("flagged", "需复核", [(r, "；".join(r.review)) for r in c.flagged], link),
        _listing("grader-errors", "评分程序出错（不是学生的 0 分，请查看 grading.log）",
                 [(r, "、".join(sorted(r.grader_errors)) or r.reason) for r in c.grader_errors],
                 link),
        "</section>"])


def _protection(rows: list[Row]) -> str:
    """The banner: how the class's code was walled off (a warning when it was not)."""
    levels = sorted({r.protection for r in rows if r.protection})
    if not levels:
        return ""
    unprotected = any(level.startswith("none") for level in levels)
    warn = ("：学生代码以评分者本人的身份运行，可读取课程文件与其他学生的作业 / "
            "unprotected: student code ran as the grader's own user") if unprotected else ""
    kind = "protection unprotected" if unprotected else "protection"
    return (f'<p class="{kind}">评分保护（protection）：'
            f"{_e(', '.join(levels))}{_e(warn)}</p>\n")


def _page(rows: list[Row], stats: list[AssignmentStats], c: Concerns, due: dict[str, Due],
          link: _Links, results: Path) -> str:
    when = datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    body = "\n".join(_assignment(a, link) for a in stats)
    return (
        '<!DOCTYPE html>\n<html lang="zh-CN"><head><meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>班级报告</title><style>{_CSS}</style></head><body>\n"
        f"<h1>班级报告：{len(rows)} 份提交</h1>\n"
        f'<p class="sub">{_e(results)} · {_e(when)}</p>\n'
        f"{_protection(rows)}{body}\n{_concerns(c, due, link)}\n</body></html>\n")


#: Every address the page holds: an attribute that loads or links (the style sheet is
#: :data:`_CSS`, which has none; text cannot hold a ``"``: it is escaped).
_ADDRESS = re.compile(r'\b(?:src|href|srcset|action|poster|data)\s*=\s*"([^"]*)"', re.I)


def _check_offline(page: str) -> None:
    """Every address is an embedded PNG or a relative path: the page loads nothing from
    anywhere else (our own guarantee, checked on every page written)."""
    for m in _ADDRESS.finditer(page):
        address = m.group(1)
        if not (address.startswith("data:image/png;base64,")
                                   or (":" not in address and not address.startswith("//"))):
            raise AssertionError(f"the class report would load {m.group(0)[:80]!r}")


def _write(out: Path, page: str) -> None:
    """``page`` into ``out`` whole, or nothing (a temporary file renamed into place)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(page)
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _gradebook(results: Path) -> Path | None:
    """nbgrader's ``gradebook.db``: in RESULTS, or in the course folder holding it."""
    return next((p for p in (results / "gradebook.db", results.parent / "gradebook.db")
                 if p.is_file()), None)


def write_report(*, results: Path, out: Path | None = None,
                 due: dict[str | None, datetime] | None = None,
                 gradebook: Path | None = None) -> Path:
    """Write the class report of ``results`` to ``out`` (default ``results/report.html``).

    ``due``: due dates (naive UTC) per assignment, ``None`` for every assignment
    (:func:`.report_rows.parse_due` reads ``--due``); they win over ``gradebook``'s
    (default: ``gradebook.db`` in RESULTS or its parent). Returns the page's path.
    """
    results = Path(results)
    if not results.is_dir():
        raise CourseError(f"{results} is not a folder: give the --out folder of "
                          "`autograder grade` (it holds scores.json)")
    out = Path(out) if out is not None else results / REPORT
    if out.is_dir():
        raise CourseError(f"{out} is a folder: give the report's file name, e.g. report.html")
    rows = read_rows(results / "scores.json")
    stats = assignment_stats(rows)
    dates = due_dates(assignments=[a.assignment for a in stats], due=due or {},
                      gradebook=gradebook if gradebook is not None else _gradebook(results))
    page = _page(rows, stats, concerns(rows, dates), dates, _Links(results, out.parent),
                 results)
    _check_offline(page)
    _write(out, page)
    return out
