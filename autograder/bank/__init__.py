"""The check bank: named checks that grade a student's *values*; this is its registry.

A check is a small function ``def check(ctx, *, softmax, ...)`` registered with
:func:`check` under a name such as ``"q1.softmax"``. It receives only values (functions,
arrays, SymPy objects), draws its own hidden inputs from ``ctx.rng`` (a
:class:`Context`), calls the reference and either returns or raises
:class:`~autograder.bank.lib.compare.CheckFailed` with a Chinese explanation. Checks only
*call* student functions and look at what comes back, so the values may as well be
proxies to the sandboxed child.

Layout: one module per assignment (``q1`` ... ``q5``, with ``qN_*`` helpers and
extensions), :mod:`.lib` (comparisons, SymPy equivalence, the reference attention, the
named misconceptions) and :mod:`.runner`, which runs a check by name: the engine's only
entry into the bank, and what the notebooks' hidden tests call.

Imports: ``lib``, the engine's protocol (the call deadline, the student's faults, the
opaque marker) and :mod:`autograder.settings`; never the engine's host side.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..engine.protocol.codec import Opaque
from ..engine.protocol.faults import Raised, StudentFault
from ..settings import ASSIGNMENTS
from .lib.compare import CheckFailed, fail, kind_name

__all__ = ["Check", "Context", "FunctionRaised", "check", "get_check", "checks_for", "modules_of",
           "DEFAULT_SECONDS"]

#: Each assignment's check modules (relative to this package): its core module, then
#: those of its extensions that the core does not import itself.
_MODULES: dict[str, tuple[str, ...]] = {
    "q1_value_scaling": (".q1",),
    "q2_dk_growth": (".q2",),
    "q3_permutation": (".q3", ".q3_ext"),
    "q4_single_token": (".q4",),
    "q5_cost_scaling": (".q5", ".q5_ext"),
}
assert tuple(_MODULES) == ASSIGNMENTS
_PREFIX_TO_ASSIGNMENT = {a.split("_")[0]: a for a in ASSIGNMENTS}

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


def modules_of(assignment: str) -> list[Any]:
    """The check modules of ``assignment``, imported (their checks register on import)."""
    return [importlib.import_module(m, __name__) for m in _MODULES[assignment]]


def get_check(name: str) -> Check:
    """The check called ``name``; loads its assignment's modules on first use."""
    prefix = name.split(".")[0]
    if prefix not in _PREFIX_TO_ASSIGNMENT:
        raise KeyError(f"unknown check {name!r}: no assignment with prefix {prefix!r}")
    modules_of(_PREFIX_TO_ASSIGNMENT[prefix])
    if name not in _REGISTRY:
        raise KeyError(f"unknown check {name!r}")
    return _REGISTRY[name]


def checks_for(assignment: str) -> list[Check]:
    """All checks of one assignment, in registration order."""
    modules_of(assignment)
    return [c for c in _REGISTRY.values() if c.assignment == assignment]


class FunctionRaised(CheckFailed):
    """The student's function raised (in the sandbox, or in-process): a check may add
    what the error most likely means for its own task (see :meth:`Context.call`)."""


class Context:
    """What a check gets besides the student's values: a seeded rng and safe calls."""

    def __init__(self, name: str, seed: int) -> None:
        self.name = name
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def call(self, func: object, *args: Any, what: str, **kwargs: Any) -> Any:
        """Call a student function on copies of the inputs; turn its errors into messages
        (:class:`FunctionRaised` when it raised, another :class:`CheckFailed` when it was
        too slow, died, answered with something odd or is not implemented)."""
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
            raise FunctionRaised(f"{what} {err}") from None
        except StudentFault as err:  # too slow, died, or answered with something odd
            fail(f"{what}：{err}")
        except Exception as err:
            if getattr(func, "remote", False):
                raise  # the student's code ran elsewhere: this one is the grader's own bug
            if isinstance(err, NotImplementedError):
                fail(f"{what}：函数还没有实现（抛出了 NotImplementedError）。")
            # their bug, not our frames
            raise FunctionRaised(f"{what} 运行出错：{type(err).__name__}: {err}") from None
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
