"""Functions that a check hands to a student's function, as source code plus data.

Some checks grade a student function that takes a function (q3's
``is_permutation_equivariant(f, X, perm)``). Student code runs in a sandbox that
holds nothing of the grader, so such an ``f`` cannot be a host closure: it travels
as ``source`` (defining ``name``) and ``data`` (arrays and numbers bound as globals)
and is defined again on the far side, with only NumPy (``np``) and ``math`` in scope.

A :class:`TestFunction` is also an ordinary callable in the host, so checks and
in-process tests use it exactly like the function it describes.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["TestFunction", "define"]


def define(source: str, name: str, data: dict[str, Any]) -> Any:
    """Execute ``source`` with ``np``, ``math`` and ``data`` as globals; return ``name``."""
    scope: dict[str, Any] = {"np": np, "math": math, "__name__": "testfn", **data}
    exec(_compiled(source, name), scope)  # noqa: S102 - grader's own code
    return scope[name]


@functools.lru_cache(maxsize=128)
def _compiled(source: str, name: str) -> Any:
    """A check sends the same few functions with new data each time: compiled once."""
    return compile(source, f"<test function {name}>", "exec")


@dataclass(frozen=True, eq=False)
class TestFunction:
    """``source`` defines a function called ``name``; ``data`` are its global constants.

    ``label`` is how feedback names it (Chinese), e.g. ``"因果掩码的自注意力"``.
    """

    __test__ = False  # not a pytest test class, whatever its name says

    source: str
    label: str
    name: str = "f"
    data: dict[str, Any] = field(default_factory=dict)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        func = self.__dict__.get("_func")
        if func is None:
            func = define(self.source, self.name, self.data)
            object.__setattr__(self, "_func", func)
        return func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"TestFunction({self.label!r})"
