"""The check bank: named checks that grade a student's *values*.

A check is a small function ``def check(ctx, *, softmax, ...)`` registered under a
name such as ``"q1.softmax"``. It receives only values (functions, arrays, SymPy
objects), draws its own hidden inputs from ``ctx.rng``, calls the reference and
either returns or raises :class:`~autograder.compare.CheckFailed` with a Chinese
explanation. Checks only *call* student functions and look at what comes back, so
the values could equally be proxies to another process.

Notebooks call :func:`run_check` in hidden test cells (nbgrader scores a raised error
as 0 and silence as full marks) and :func:`self_check` in the self-practice edition.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import os
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..assignments import ASSIGNMENT_MODULES
from ..compare import CheckFailed, fail, kind_name
from ..engine.errors import Raised, StudentFault
from ..engine.hostdecode import Opaque
from ..engine.settings import PRACTICE_SALT
from ..symbolic import TimeLimit, time_limit

__all__ = ["Check", "Context", "Outcome", "check", "evaluate", "run_check", "self_check", "warm",
           "get_check", "checks_for", "seed_for", "PRACTICE_SALT", "ASSIGNMENT_MODULES",
           "CheckFailed", "GraderError"]

_PREFIX_TO_ASSIGNMENT = {a.split("_")[0]: a for a in ASSIGNMENT_MODULES}

#: Seconds a single check may run before it is stopped with a message.
DEFAULT_SECONDS = 30.0


@dataclass(frozen=True)
class Check:
    """A registered check: ``name`` is ``"<qN>.<behaviour>"``, ``title`` is Chinese.

    ``context`` names the keywords that are not this cell's answer but earlier answers it
    is judged against (a hand step marked "error carried forward", a student function
    whose own result an answer may match): a wrong or hostile context value may leave a
    right answer passing, never a grader error.
    """

    name: str
    title: str
    func: Callable[..., None]
    seconds: float = DEFAULT_SECONDS
    context: frozenset[str] = frozenset()

    @property
    def assignment(self) -> str:
        return _PREFIX_TO_ASSIGNMENT[self.name.split(".")[0]]


_REGISTRY: dict[str, Check] = {}


def check(name: str, title: str, *, seconds: float = DEFAULT_SECONDS,
          context: tuple[str, ...] = ()) -> Callable:
    """Register ``func(ctx, **values)`` as the check ``name`` (``context``: see
    :class:`Check`)."""

    def register(func: Callable[..., None]) -> Callable[..., None]:
        if name in _REGISTRY and _REGISTRY[name].func.__qualname__ != func.__qualname__:
            raise ValueError(f"check {name!r} registered twice")
        _REGISTRY[name] = Check(name, title, func, seconds, frozenset(context))
        return func

    return register


def _load(assignment: str) -> None:
    importlib.import_module(ASSIGNMENT_MODULES[assignment], __name__)


def get_check(name: str) -> Check:
    """The check called ``name``; loads its assignment's module on first use."""
    prefix = name.split(".")[0]
    if prefix not in _PREFIX_TO_ASSIGNMENT:
        raise KeyError(f"unknown check {name!r}: no assignment with prefix {prefix!r}")
    _load(_PREFIX_TO_ASSIGNMENT[prefix])
    if name not in _REGISTRY:
        raise KeyError(f"unknown check {name!r}")
    return _REGISTRY[name]


def checks_for(assignment: str) -> list[Check]:
    """All checks of one assignment, in registration order."""
    _load(assignment)
    return [c for c in _REGISTRY.values() if c.assignment == assignment]


def warm(assignment: str) -> None:
    """Load one assignment's checks and whatever they load lazily (its module's optional
    ``warm()``), so processes forked afterwards start with them."""
    module = importlib.import_module(ASSIGNMENT_MODULES[assignment], __name__)
    hook = getattr(module, "warm", None)
    if hook is not None:
        hook()


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


# ------------------------------------------------------------------ context


class Context:
    """What a check gets besides the student's values: a seeded rng and safe calls."""

    def __init__(self, name: str, seed: int | None = None) -> None:
        self.name = name
        self.seed = _kernel_seed(name) if seed is None else seed
        self.rng = np.random.default_rng(self.seed)

    def call(self, func: object, *args: Any, what: str, **kwargs: Any) -> Any:
        """Call a student function on copies of the inputs; turn its errors into messages."""
        if not callable(func):
            fail(f"{what}：应是一个函数，得到的是 {kind_name(func)}。")
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        try:
            result = func(*copies, **kwargs)
        except CheckFailed:
            raise
        except Raised as err:  # raised in the sandbox, reported by type name
            if err.is_a("NotImplementedError"):
                fail(f"{what}：函数还没有实现（抛出了 NotImplementedError）。")
            fail(f"{what} {err}")
        except StudentFault as err:  # too slow, died, or answered with something odd
            fail(f"{what}：{err}")
        except Exception as err:
            if getattr(func, "remote", False):
                raise  # the student's code ran elsewhere: this one is the grader's own bug
            if isinstance(err, NotImplementedError):
                fail(f"{what}：函数还没有实现（抛出了 NotImplementedError）。")
            fail(f"{what} 运行出错：{type(err).__name__}: {err}")  # their bug, not our frames
        if isinstance(result, Opaque):  # not data: no check can look at it
            fail(f"{what} 返回的 {result.type_name} 对象无法读取。请返回数组、数、布尔值、字符串、"
                 "列表或 SymPy 对象。")
        return result

    def randn(self, *shape: int, dtype: type = np.float64) -> np.ndarray:
        return self.rng.standard_normal(shape).astype(dtype)

    def dims(self, low: int = 2, high: int = 7, count: int = 1, distinct: bool = True) -> list[int]:
        """``count`` random sizes in ``[low, high]``, pairwise different when ``distinct``."""
        pool = np.arange(low, high + 1)
        if distinct:
            return [int(v) for v in self.rng.choice(pool, size=count, replace=False)]
        return [int(v) for v in self.rng.integers(low, high + 1, size=count)]


# ------------------------------------------------------------------ running


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Nothing reaches stderr (nbgrader scores a test cell that writes there as 0)."""
    sink = io.StringIO()
    with warnings.catch_warnings(), np.errstate(all="ignore"), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        yield


@dataclass(frozen=True)
class Outcome:
    """One check on one student's values.

    ``status`` is ``"passed"``, ``"failed"`` (``message``: the Chinese diagnosis for the
    student) or ``"error"``: the check itself broke, which is never the student's fault
    (``detail``: the traceback, for the instructor).
    """

    name: str
    title: str
    status: str
    message: str = ""
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"


#: Seconds past a check's own limit before the host stops it as runaway.
RUNAWAY_SLACK = 1.0


def evaluate(name: str, values: dict[str, Any], *, seed: int | None = None) -> Outcome:
    """Run check ``name`` on ``values``; every way it can end becomes an :class:`Outcome`."""
    chk = get_check(name)
    ctx = Context(name, seed)
    try:
        with _quiet(), time_limit(chk.seconds + RUNAWAY_SLACK), _student_calls(chk.seconds):
            chk.func(ctx, **values)
    except CheckFailed as err:
        return Outcome(name, chk.title, "failed", str(err))
    except StudentFault as err:
        return Outcome(name, chk.title, "failed", str(err))
    except TimeLimit:
        return Outcome(name, chk.title, "failed",
                       f"运行超过 {chk.seconds:g} 秒被停止。是否有死循环，或对很大的输入做了逐元素的"
                       " Python 循环？")
    except Exception:  # a bug in the check: the instructor's problem, never a silent 0
        return Outcome(name, chk.title, "error", GRADER_ERROR, traceback.format_exc())
    return Outcome(name, chk.title, "passed")


GRADER_ERROR = "评分程序内部出错（不是你的答案的问题）：老师会看到这条记录并处理，本项暂不计分。"


class GraderError(Exception):
    """Raised in a notebook's hidden test when the check itself broke."""

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;33m评分程序错误\x1b[0m: {str(self)}"]


@contextlib.contextmanager
def _student_calls(seconds: float) -> Iterator[None]:
    """Calls into the sandbox answer within the check's time (no-op without the engine)."""
    import time

    from ..engine.proxy import call_deadline

    with call_deadline(time.monotonic() + seconds):
        yield


def _run(name: str, values: dict[str, Any]) -> Outcome:
    outcome = evaluate(name, values)
    if outcome.status == "failed":
        raise CheckFailed(f"{outcome.title}：{outcome.message}") from None
    if outcome.status == "error":
        raise GraderError(f"{outcome.title}：{outcome.message}\n{outcome.detail}") from None
    return outcome


def run_check(name: str, /, **values: Any) -> None:
    """Run one check in a hidden test cell: returns ``None`` or raises ``CheckFailed``."""
    _run(name, values)


def self_check(name: str, /, **values: Any) -> bool:
    """Run one check for self-practice: prints a verdict in Chinese, never raises."""
    outcome = evaluate(name, values)
    if outcome.passed:
        print(f"✅ 通过：{outcome.title}")
    elif outcome.status == "failed":
        print(f"❌ 未通过 — {outcome.title}：{outcome.message}")
    else:
        print(f"⚠️ {outcome.title}：{outcome.message}")
    return outcome.passed
