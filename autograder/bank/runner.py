"""Running a check by name: the engine's only entry into the bank.

:func:`evaluate` runs one check on one student's values, with its seed, under the host's
time limit and the call deadline, and turns every way it can end into an
:class:`Outcome`. :func:`seed_for` draws a check's seed from (course salt, student, check
name). :func:`warm` loads an assignment's checks before the grading workers fork.

The notebooks call :func:`run_check` in their hidden test cells (plain ``nbgrader
autograde`` runs them in its kernel: a raised error scores 0, silence full marks) and
:func:`self_check` in the self-practice edition; ``autograder grade`` never runs a
hidden cell, it reads the calls (:mod:`autograder.engine.host.hidden`) and comes here.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import time
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..engine.protocol.deadline import TimeLimit, call_deadline, time_limit
from ..engine.protocol.faults import StudentFault
from ..settings import PRACTICE_SALT, Status
from . import Context, get_check, modules_of
from .lib.compare import CheckFailed
from .lib.misconceptions import named_in

__all__ = ["Outcome", "evaluate", "seed_for", "warm", "run_check", "self_check", "GraderError",
           "GRADER_ERROR", "RUNAWAY_SLACK"]

#: Seconds past a check's own limit before the host stops it as runaway.
RUNAWAY_SLACK = 1.0
GRADER_ERROR = "评分程序内部出错（不是你的答案的问题）：老师会看到这条记录并处理，本项暂不计分。"


@dataclass(frozen=True)
class Outcome:
    """One check on one student's values.

    ``status`` is :attr:`Status.PASSED`, :attr:`Status.FAILED` (``message``: the Chinese
    diagnosis for the student; ``misconceptions``: (key, label) of each registered
    misconception the message names) or :attr:`Status.ERROR`: the check itself broke,
    which is never the student's fault (``detail``: the traceback, for the instructor).
    """

    name: str
    title: str
    status: Status
    message: str = ""
    detail: str = ""
    misconceptions: tuple[tuple[str, str], ...] = ()

    @property
    def passed(self) -> bool:
        return self.status == Status.PASSED

    @classmethod
    def failed(cls, name: str, message: str) -> Outcome:
        """The student's failure of check ``name`` before it ran (a value the host could
        not fetch or read)."""
        return cls(name, get_check(name).title, Status.FAILED, message)


# ------------------------------------------------------------------ seeds


def seed_for(name: str, *, student: str = "", salt: str = PRACTICE_SALT) -> int:
    """A seed stable for (course salt, student, check name), unknown without the salt."""
    digest = hashlib.sha256(f"{salt}|{student}|{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def _kernel_seed(name: str) -> int:
    """Inside a Jupyter kernel (plain ``nbgrader autograde``): the student from
    ``AUTOGRADER_STUDENT`` or the working directory ``.../autograded/<student>/<assignment>``,
    the salt from ``AUTOGRADER_SALT``. Student code shares that process and could change
    all three: this path is not tamper-proof (``autograder grade`` seeds in the grader)."""
    parts = Path.cwd().parts
    student = os.environ.get("AUTOGRADER_STUDENT") or (
        parts[-2] if len(parts) >= 3 and parts[-3] == "autograded" else "")
    return seed_for(name, student=student, salt=os.environ.get("AUTOGRADER_SALT", PRACTICE_SALT))


def warm(assignment: str) -> None:
    """Load one assignment's checks and whatever they load lazily (a module's optional
    ``warm()``), so processes forked afterwards start with them."""
    for module in modules_of(assignment):
        hook = getattr(module, "warm", None)
        if hook is not None:
            hook()


# ------------------------------------------------------------------ running


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Nothing reaches stderr (nbgrader scores a test cell that writes there as 0)."""
    sink = io.StringIO()
    with warnings.catch_warnings(), np.errstate(all="ignore"), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        yield


def evaluate(name: str, values: dict[str, Any], *, seed: int | None = None) -> Outcome:
    """Run check ``name`` on ``values`` (``seed``: :func:`seed_for`'s; ``None`` inside a
    Jupyter kernel); every way it can end becomes an :class:`Outcome`."""
    chk = get_check(name)
    ctx = Context(name, _kernel_seed(name) if seed is None else seed)
    try:
        with _quiet(), time_limit(chk.seconds + RUNAWAY_SLACK), \
                call_deadline(time.monotonic() + chk.seconds):
            chk.func(ctx, **values)
    except (CheckFailed, StudentFault) as err:
        message = str(err)
        return Outcome(name, chk.title, Status.FAILED, message,
                       misconceptions=tuple((m.key, m.label) for m in named_in(message)))
    except TimeLimit:
        return Outcome(name, chk.title, Status.FAILED,
                       f"运行超过 {chk.seconds:g} 秒被停止。是否有死循环，或对很大的输入做了逐元素的"
                       " Python 循环？")
    except Exception:  # a bug in the check: the instructor's problem, never a silent 0
        return Outcome(name, chk.title, Status.ERROR, GRADER_ERROR, traceback.format_exc())
    return Outcome(name, chk.title, Status.PASSED)


class GraderError(Exception):
    """Raised in a notebook's hidden test when the check itself broke."""

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;33m评分程序错误\x1b[0m: {str(self)}"]


def run_check(name: str, /, **values: Any) -> None:
    """Run one check in a hidden test cell: returns ``None`` or raises ``CheckFailed``."""
    outcome = evaluate(name, values)
    if outcome.status == Status.FAILED:
        raise CheckFailed(f"{outcome.title}：{outcome.message}") from None
    if outcome.status == Status.ERROR:
        raise GraderError(f"{outcome.title}：{outcome.message}\n{outcome.detail}") from None


def self_check(name: str, /, **values: Any) -> bool:
    """Run one check for self-practice: prints a verdict in Chinese, never raises."""
    outcome = evaluate(name, values)
    if outcome.passed:
        print(f"✅ 通过：{outcome.title}")
    elif outcome.status == Status.FAILED:
        print(f"❌ 未通过 — {outcome.title}：{outcome.message}")
    else:
        print(f"⚠️ {outcome.title}：{outcome.message}")
    return outcome.passed
