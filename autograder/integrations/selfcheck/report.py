"""The student's report of ``autograder check``, in Chinese, one language per line.

First the likely causes (each misconception once, with the cells it cost and the points),
then every autograded cell with the points the grader would give it on these practice
inputs (practice 拓展 cells apart, worth 0), then the total. Plain text: the terminal and
the notebook's check cell print the same lines.
"""

from __future__ import annotations

from .check import Outcome

__all__ = ["report_lines", "causes", "total", "mode_line"]

#: How the notebook ran (:attr:`.check.Checked.mode`), in one line.
_SANDBOX = "运行方式：评分用的沙箱（{}），与正式评分相同。"
_PLAIN = ("运行方式：普通子进程（本机没有评分用的沙箱；有时间限制，系统支持时也限制内存）。"
          "检查和计分与正式评分相同；正式评分本身在有沙箱保护的评分机上进行。")
MODES = {"namespaces": _SANDBOX.format("Linux 命名空间"),
         "separate-user": _SANDBOX.format("每次一个无权限的独立用户"),
         "none": _PLAIN, "plain": _PLAIN}


def _pts(value: float) -> str:
    return f"{value:g}"


def total(outcomes: list[Outcome]) -> tuple[float, float]:
    """(points the grader gives, points possible) over the scored cells."""
    scored = [o for o in outcomes if not o.practice]
    return sum(o.earned for o in scored), sum(o.points for o in scored)


def causes(outcomes: list[Outcome]) -> list[tuple[str, list[Outcome]]]:
    """Each misconception's label once, with the failed cells that named it (first-named
    first)."""
    found: dict[str, list[Outcome]] = {}
    for o in outcomes:
        if o.passed:
            continue
        for _key, label in o.misconceptions:
            found.setdefault(label, []).append(o)
    return list(found.items())


def _cause_line(label: str, cells: list[Outcome]) -> str:
    lost = sum(o.points for o in cells if not o.practice)
    names = "、".join(o.cell for o in cells)
    cost = f"共失 {_pts(lost)} 分" if lost else "只涉及拓展练习，不扣分"
    return f"  • 【{label}】：{names}（{cost}）"


def _cell_lines(o: Outcome) -> list[str]:
    mark = "✅" if o.passed else "❌"
    worth = (f"拓展练习，不计分；计分时值 {_pts(o.points)} 分" if o.practice
             else f"{_pts(o.earned)} / {_pts(o.points)} 分")
    lines = [f"{mark} {o.cell}（{worth}）：{o.title}"]
    if not o.passed:
        lines += [f"    {line}" for line in o.message.splitlines() if line.strip()]
    return lines


def mode_line(mode: str) -> str:
    """The report's line saying how the notebook ran (a plain child for any mode not known)."""
    return MODES.get(mode, _PLAIN)


def report_lines(name: str, outcomes: list[Outcome]) -> list[str]:
    """The whole report for notebook ``name``; last, how it ran when ``outcomes`` say
    (:class:`.check.Checked`)."""
    lines = [f"{name}：自我检查报告（与评分相同的检查，用公开的练习输入）"]
    found = causes(outcomes)
    if found:
        lines.append("最可能的原因（每个只列一次）：")
        lines += [_cause_line(label, cells) for label, cells in found]
    lines.append("各单元格得分：")
    for o in (o for o in outcomes if not o.practice):
        lines += _cell_lines(o)
    practice = [o for o in outcomes if o.practice]
    if practice:
        lines.append("拓展练习（检查但不计分）：")
        for o in practice:
            lines += _cell_lines(o)
    got, possible = total(outcomes)
    failed = sum(not o.passed for o in outcomes if not o.practice)
    verdict = "全部通过" if not failed else f"{failed} 个单元格失分"
    lines.append(f"总分：{_pts(got)} / {_pts(possible)} 分（自动评分部分，{verdict}；"
                 "文字回答由老师人工评分）")
    mode = getattr(outcomes, "mode", "")
    if mode:
        lines.append(mode_line(mode))
    return lines
