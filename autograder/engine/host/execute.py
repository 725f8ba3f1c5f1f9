"""The pipeline's ``execute`` step: the cells run in a sandboxed child, the checks in the host.

The child runs every code cell in order (a test cell without its hidden regions); after
each test cell the host fetches the values its hidden checks name from the child
(functions as proxies), runs each check by name (:mod:`autograder.bank.runner`, seeded by
(salt, student, check)), records the verdict in the cell's :class:`~.job.CellResult` and
adds it to the cell as an error output the host marks as its own (``Job.verdicts``).
Outputs keep safe types only, within one budget per notebook (:class:`~.outputs.OutputBudget`).
"""

from __future__ import annotations

import logging
import time

from nbformat import NotebookNode

from ...bank import runner
from ...settings import SELF_CHECK_ID, Status
from ..protocol.budgets import FETCH_SECONDS, GET_SECONDS
from ..protocol.deadline import TimeLimit, time_limit
from ..protocol.faults import ChildGone, StudentFault
from ..protocol.limits import SandboxLimits, SharedMemory
from . import memcg
from .job import Job
from .job import nbgrader_meta as _meta
from .manifest import CellSpec
from .outputs import OutputBudget, clean_outputs, verdict_output
from .proxy import Child
from .stop import TIMEOUT

__all__ = ["Execute"]

log = logging.getLogger("autograder.engine")


class Execute:
    """Run the cells in a sandboxed child; run each test cell's checks in the host."""

    name = "execute"

    def __call__(self, job: Job) -> None:
        settings = job.settings
        limits = SandboxLimits(memory=settings.memory_mb << 20,
                               cpu_seconds=int(settings.timeout) + 10,
                               shared_memory=job.memory.shared_memory if job.memory
                               else SharedMemory.REFUSED)
        child, cgroup = memcg.spawn(job.zygote, limits, job.memory,
                                    who=f"{job.student}/{job.assignment}")
        deadline = time.monotonic() + settings.timeout
        budget = OutputBudget(settings.output_mb << 20)
        try:
            child.send_files(job.files)
            for cell in job.nb.cells:
                if cell.cell_type == "code":
                    self._cell(job, child, cell, deadline, budget)
        except ChildGone as err:
            job.note(f"无法运行：{err}", f"could not run the notebook: {err.reason}")
        finally:
            job.zygote.retire(child)
            job.memory_peak, killed = memcg.settle(job.memory, cgroup)
            if job.memory_peak is not None:
                log.info("%s/%s: peak memory %d MB", job.student, job.assignment,
                         job.memory_peak >> 20)
            if killed:
                mb = settings.memory_mb
                job.note(f"内存用量超过上限 {mb} MB（共享内存和 /tmp 中的文件也计入），进程被终止",
                         f"killed for using more than {mb} MB of memory (shared memory and "
                         "files in /tmp count)")

    def _cell(self, job: Job, child: Child, cell: NotebookNode, deadline: float,
              budget: OutputBudget) -> None:
        if _meta(cell).get("grade_id") == SELF_CHECK_ID:
            return  # ours (its text restored from the manifest): the check checks itself
        spec = job.manifest.by_grade_id(_meta(cell).get("grade_id"))
        test = spec is not None and (spec.is_test or spec.is_practice)
        left = deadline - time.monotonic()
        if not child.alive or left <= 0:
            if child.alive:
                child.kill(f"整个 notebook 运行超过 {job.settings.timeout:g} 秒，已停止。")
                job.note(f"整个 notebook 运行超过 {job.settings.timeout:g} 秒，其余单元格未运行",
                         f"the notebook ran past {job.settings.timeout:g} s; later cells not run",
                         kind=TIMEOUT)
            if test:
                job.result_for(spec).messages.append(f"未运行：{child.death}")
            return
        started = time.monotonic()
        try:
            reply = child.run(spec.visible if test else cell.source,
                              seconds=min(job.settings.cell_timeout, left),
                              output_bytes=budget.left)
        except ChildGone as err:
            job.note(f"运行到第 {job.nb.cells.index(cell) + 1} 个单元格时进程终止：{err}",
                     f"the child died in cell {job.nb.cells.index(cell) + 1}: {err.reason}")
            if test:
                job.result_for(spec).messages.append(str(err))
            return
        spent = budget.exhausted
        cell.outputs = budget.take(clean_outputs(reply.get("outputs")),
                                   cut=reply.get("cut") is True)
        if budget.exhausted and not spent:
            mb = job.settings.output_mb
            job.note(f"输出超过 {mb} MB 的上限，其后的输出已省略",
                     f"output past the {mb} MB limit per notebook; later outputs dropped")
        count = reply.get("count")
        cell.execution_count = count if isinstance(count, int) else None
        if reply.get("interrupted_after") is not None:
            where = _meta(cell).get("grade_id") or f"cell {job.nb.cells.index(cell) + 1}"
            job.note(f"有单元格运行超过 {job.settings.cell_timeout:g} 秒被中断：{where}",
                     f"cells interrupted after {job.settings.cell_timeout:g} s: {where}",
                     kind=TIMEOUT)
        ran = time.monotonic()
        if test:
            self._checks(job, child, cell, spec, visible_ok=bool(reply.get("ok")))
        log.debug("%s/%s: cell %d ran in %.3f s, checks %.3f s", job.student, job.assignment,
                  job.nb.cells.index(cell) + 1, ran - started, time.monotonic() - ran)

    def _checks(self, job: Job, child: Child, cell: NotebookNode, spec: CellSpec,
                visible_ok: bool) -> None:
        result = job.result_for(spec)
        result.status = Status.PASSED if visible_ok else Status.FAILED
        if not visible_ok:  # read before any verdict joins the child's outputs
            result.messages.append(_visible_failure(cell.outputs))
        for call in spec.checks:
            outcome = _evaluate(job, child, call)
            if outcome.status == Status.PASSED:
                continue
            if outcome.status == Status.ERROR:
                result.status = Status.ERROR
                result.errors.append(outcome.detail)
                log.error("%s/%s: check %s broke:\n%s", job.student, job.assignment,
                          call.name, outcome.detail)
                _verdict(job, cell, verdict_output("GraderError", outcome.message, Status.ERROR))
            elif result.status != Status.ERROR:
                result.status = Status.FAILED
            if outcome.status == Status.FAILED:
                result.messages.append(outcome.message)
                result.add_misconceptions(outcome.misconceptions)
                _verdict(job, cell, verdict_output(
                    "CheckFailed", f"{outcome.title}：{outcome.message}", Status.FAILED))


def _verdict(job: Job, cell: NotebookNode, output: NotebookNode) -> None:
    """Add the host's verdict to the cell, marked as the host's (by identity)."""
    cell.outputs.append(output)
    job.verdicts.add(id(output))


def _evaluate(job: Job, child: Child, call) -> runner.Outcome:
    """Fetch the check's values from the child (functions as proxies), run it in the host.

    Fetching and decoding run under the host's own time limit (:data:`FETCH_SECONDS`):
    whatever the child sends, a value too slow to read is the student's failure."""
    try:
        with time_limit(FETCH_SECONDS):
            values = {kw: child.get(var, seconds=GET_SECONDS) for kw, var in call.values.items()}
    except StudentFault as err:  # missing, malformed, too large, or the child died
        return runner.Outcome.failed(call.name, str(err))
    except TimeLimit:
        return runner.Outcome.failed(call.name, f"读取并解码返回的值超过 {FETCH_SECONDS:g} 秒，已停止。"
                                     "请返回普通的数组、数或较小的 SymPy 表达式。")
    seed = runner.seed_for(call.name, student=job.student, salt=job.settings.salt)
    return runner.evaluate(call.name, values, seed=seed)


def _visible_failure(outputs: list) -> str:
    """The error the visible part raised (the child's outputs), in one line, for the
    feedback's summary."""
    for out in outputs:
        if out.get("output_type") == "error":
            text = f"{out.get('ename')}: {out.get('evalue')}".strip()
            return f"可见的断言没有通过：{text}" if out.get("ename") == "AssertionError" \
                else f"单元格运行出错：{text}"
    return "单元格运行出错。"
