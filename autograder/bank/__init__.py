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
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..compare import CheckFailed, fail
from ..symbolic import TimeLimit, time_limit

__all__ = ["Check", "Context", "check", "run_check", "self_check", "get_check",
           "checks_for", "seed_for", "ASSIGNMENT_MODULES", "CheckFailed"]

#: Assignment id -> bank module (relative to this package); the bank's index.
ASSIGNMENT_MODULES: dict[str, str] = {
    "q1_value_scaling": ".q1",
    "q2_dk_growth": ".q2",
    "q3_permutation": ".q3",
    "q4_single_token": ".q4",
    "q5_cost_scaling": ".q5",
}
_PREFIX_TO_ASSIGNMENT = {a.split("_")[0]: a for a in ASSIGNMENT_MODULES}

#: Seconds a single check may run before it is stopped with a message.
DEFAULT_SECONDS = 30.0


@dataclass(frozen=True)
class Check:
    """A registered check: ``name`` is ``"<qN>.<behaviour>"``, ``title`` is Chinese."""

    name: str
    title: str
    func: Callable[..., None]
    seconds: float = DEFAULT_SECONDS

    @property
    def assignment(self) -> str:
        return _PREFIX_TO_ASSIGNMENT[self.name.split(".")[0]]


_REGISTRY: dict[str, Check] = {}


def check(name: str, title: str, *, seconds: float = DEFAULT_SECONDS) -> Callable:
    """Register ``func(ctx, **values)`` as the check ``name``."""

    def register(func: Callable[..., None]) -> Callable[..., None]:
        if name in _REGISTRY and _REGISTRY[name].func.__qualname__ != func.__qualname__:
            raise ValueError(f"check {name!r} registered twice")
        _REGISTRY[name] = Check(name, title, func, seconds)
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


# ------------------------------------------------------------------ seeds


def _student_key() -> str:
    """Who is being graded, so inputs differ between students but not between regrades.

    nbgrader runs a submission with the working directory
    ``.../autograded/<student>/<assignment>``; ``AUTOGRADER_STUDENT`` overrides it.
    """
    if os.environ.get("AUTOGRADER_STUDENT"):
        return os.environ["AUTOGRADER_STUDENT"]
    parts = Path.cwd().parts
    if len(parts) >= 3 and parts[-3] == "autograded":
        return parts[-2]
    return ""


def seed_for(name: str) -> int:
    """A seed stable for (course salt, student, check name), unknown without the salt."""
    salt = os.environ.get("AUTOGRADER_SALT", "lecture9-self-attention")
    digest = hashlib.sha256(f"{salt}|{_student_key()}|{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


# ------------------------------------------------------------------ context


class Context:
    """What a check gets besides the student's values: a seeded rng and safe calls."""

    def __init__(self, name: str, seed: int | None = None) -> None:
        self.name = name
        self.seed = seed_for(name) if seed is None else seed
        self.rng = np.random.default_rng(self.seed)

    def call(self, func: object, *args: Any, what: str, **kwargs: Any) -> Any:
        """Call a student function on copies of the inputs; turn its errors into messages."""
        if not callable(func):
            fail(f"{what}：应是一个函数，得到的是 {type(func).__name__}。")
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        try:
            return func(*copies, **kwargs)
        except (CheckFailed, TimeLimit):
            raise
        except NotImplementedError:
            fail(f"{what}：函数还没有实现（抛出了 NotImplementedError）。")
        except Exception as err:  # the student's own bug, reported without our frames
            fail(f"{what} 运行出错：{type(err).__name__}: {err}")

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


def _run(name: str, values: dict[str, Any]) -> None:
    chk = get_check(name)
    ctx = Context(name)
    try:
        with _quiet(), time_limit(chk.seconds):
            chk.func(ctx, **values)
    except CheckFailed as err:
        raise CheckFailed(f"{chk.title}：{err}") from None
    except TimeLimit:
        raise CheckFailed(f"{chk.title}：运行超过 {chk.seconds:g} 秒被停止。"
                          "是否有死循环，或对很大的输入做了逐元素的 Python 循环？") from None
    except TypeError as err:
        raise CheckFailed(f"{chk.title}：检查时类型不符（{err}）。"
                          "请确认函数的参数和返回值与题目要求一致。") from None
    except Exception as err:  # never show our traceback, whatever went wrong
        raise CheckFailed(f"{chk.title}：检查时出错（{type(err).__name__}: {err}）。"
                          "请确认答案的类型和形状与题目要求一致。") from None


def run_check(name: str, /, **values: Any) -> None:
    """Run one check in a hidden test cell: returns ``None`` or raises ``CheckFailed``."""
    _run(name, values)


def self_check(name: str, /, **values: Any) -> bool:
    """Run one check for self-practice: prints a verdict in Chinese, never raises."""
    title = get_check(name).title
    try:
        _run(name, values)
    except CheckFailed as err:
        print(f"❌ 未通过 — {err}")
        return False
    print(f"✅ 通过：{title}")
    return True
