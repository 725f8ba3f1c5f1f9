"""Probe functions for q3's equivariance checker, drawn for each student from the seed.

``is_permutation_equivariant(f, X, perm)`` is graded on functions ``f`` the grader hands
it. Fixed probes can be recognised: a wrong checker that looked up the old probes by
their code scored full marks (issue 20). So nothing about a probe is fixed here:

- its source is assembled from random steps, in random order, with random names for the
  function, its argument, its variables and its constants;
- every step that could break equivariance reads *from data* whether it does (an axis,
  a table of rows, a frequency, a mask), so the same code appears with either answer,
  and each answer is drawn at random;
- the expected answer is never assumed from the recipe: it is measured in the host on
  the very ``X`` and ``perm`` that are sent, and a probe is kept only when the answer is
  clear (a gap far above, or far below, the tolerance).

Host-side only; the probes themselves cross to the child as
:class:`~autograder.engine.protocol.testfn.TestFunction` (source text and data).
"""

from __future__ import annotations

import builtins
import keyword
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..engine.protocol.testfn import TestFunction

__all__ = ["Probe", "Gaps", "draw_structural", "random_perm", "gaps", "with_identity", "readings",
           "draw_invariant"]

#: A clear "no": the rows differ by at least this much (outputs are at most a few units).
CLEAR_GAP = 1e-2
#: A clear "yes": roundoff only, far below the default ``atol=1e-8``.
ROUNDOFF = 1e-10
DEFAULT_ATOL = 1e-8
#: Draws before a generator gives up: far more than it ever needs (a grader error, not a hang).
DRAWS = 500

_FIRST = "abcdefghijklmnopqrstuvwxyz"
_REST = _FIRST + "0123456789_"
_RESERVED = {"np", "math"} | set(dir(builtins))
_LETTERS = bytes.maketrans(bytes(range(len(_REST))), _REST.encode())


@dataclass(frozen=True)
class Gaps:
    """Largest entrywise differences of ``f(X[perm])`` from three right-hand sides."""

    equivariant: float  # f(X)[perm]: what the checker must compare with
    invariant: float    # f(X): the "invariance" misreading
    inverse: float      # f(X)[argsort(perm)]: the inverse permutation
    smallest: float     # min |f(X)|: how large rtol·|b| gets


@dataclass(frozen=True)
class Probe:
    """One call the check makes: ``checker(fn, X, perm[, atol=...])`` must return ``expected``."""

    fn: TestFunction
    X: np.ndarray
    perm: np.ndarray
    expected: bool
    gaps: Gaps
    atol: float | None = None  # None: the checker's default (1e-8)
    kind: str = "structure"
    _readings: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def tolerance(self) -> float:
        return DEFAULT_ATOL if self.atol is None else self.atol


def gaps(f: Callable, X: np.ndarray, perm: np.ndarray) -> Gaps:
    """Measure how far ``f(X[perm])`` is from ``f(X)[perm]`` (and the two misreadings)."""
    with np.errstate(all="ignore"):
        lhs, out = np.asarray(f(X[perm])), np.asarray(f(X))

    def worst(rhs: np.ndarray) -> float:
        return float(np.max(np.abs(lhs - rhs)))
    return Gaps(worst(out[perm]), worst(out), worst(out[np.argsort(perm)]),
                float(np.min(np.abs(out))))


def random_perm(rng: np.random.Generator, n: int, *, involution: bool | None = None) -> np.ndarray:
    """A random non-identity permutation of ``n``; ``involution`` True: a single swap,
    False: one that is not its own inverse, None: either."""
    if n < 2 or (involution is False and n < 3):
        raise ValueError(f"no such permutation of {n}")
    if involution:
        i, j = (int(v) for v in rng.choice(n, size=2, replace=False))
        perm = np.arange(n)
        perm[[i, j]] = perm[[j, i]]
        return perm
    while True:
        perm = rng.permutation(n)
        if (perm == np.arange(n)).all():
            continue
        if involution is False and (perm[perm] == np.arange(n)).all():
            continue
        return perm


# ------------------------------------------------------------------ writing a probe


@dataclass
class _Source:
    """A probe's source under construction: random names, constants bound as data."""

    rng: np.random.Generator
    lines: list[str] = field(default_factory=list)
    data: dict = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)
    taken: set[str] = field(default_factory=set)
    letters: str = ""

    def name(self) -> str:
        while True:
            if len(self.letters) < 8:  # one draw from the generator per 256 letters
                codes = self.rng.integers(0, len(_REST), 256, dtype=np.uint8)
                self.letters = codes.tobytes().translate(_LETTERS).decode()
            size = 2 + _REST.index(self.letters[0]) % 5
            text = _FIRST[_REST.index(self.letters[1]) % len(_FIRST)] + self.letters[2:size]
            self.letters = self.letters[size:]
            if text not in self.taken and text not in _RESERVED and not keyword.iskeyword(text):
                self.taken.add(text)
                return text

    def const(self, value: object) -> str:
        key = self.name()
        self.data[key] = value
        return key

    def assign(self, expression: str) -> str:
        target = self.name()
        self.lines.append(f"{target} = {expression}")
        return target


#: A step: (source, current variable, width, rows available, breaks?) -> (variable, width).
#: ``breaks`` asks the step to depend on positions (True) or not (False); steps that
#: cannot depend on positions ignore it.
Step = Callable[[_Source, str, int, int, bool], tuple[str, int]]


def _linear(s: _Source, x: str, w: int, rows: int, breaks: bool) -> tuple[str, int]:
    out = int(s.rng.integers(2, 6))
    A = s.const(s.rng.standard_normal((w, out)) / np.sqrt(w))
    b = s.const(s.rng.normal(0, 0.5, out))
    s.labels.append("逐行线性变换")
    return s.assign(f"{x} @ {A} + {b}"), out


_ELEMENTWISE = (("np.tanh({x})", "tanh"), ("np.sin({x})", "sin"), ("np.arctan({x})", "arctan"),
                ("{x} * np.exp(-{x} * {x} / {c})", "x·exp(−x²/c)"),
                ("np.maximum({x}, {c} - 1.5)", "max(x, c)"))


def _elementwise(s: _Source, x: str, w: int, rows: int, breaks: bool) -> tuple[str, int]:
    template, label = _ELEMENTWISE[int(s.rng.integers(len(_ELEMENTWISE)))]
    c = s.const(float(s.rng.uniform(1.0, 2.0)))
    s.labels.append(f"逐元素的 {label}")
    return s.assign(template.format(x=x, c=c)), w


_AXIS_OPS = (("np.cumsum({x}, axis={a})", "累加"), ("np.sort({x}, axis={a})", "排序"),
             ("np.flip({x}, axis={a})", "倒序"), ("np.roll({x}, {k}, axis={a})", "循环移位"))


def _along_axis(s: _Source, x: str, w: int, rows: int, breaks: bool) -> tuple[str, int]:
    """An operation along axis 0 (the sequence: positions matter) or 1 (each row alone)."""
    template, label = _AXIS_OPS[int(s.rng.integers(len(_AXIS_OPS)))]
    axis = 0 if breaks else 1
    a, k = s.const(axis), s.const(int(s.rng.integers(1, 3)))
    s.labels.append(f"沿{'序列' if axis == 0 else '特征'}方向（axis={axis}）{label}")
    return s.assign(template.format(x=x, a=a, k=k)), w


def _softmax_axis(s: _Source, x: str, w: int, rows: int, breaks: bool) -> tuple[str, int]:
    """softmax along either axis: equivariant both ways (axis 0 treats positions alike)."""
    axis = int(s.rng.integers(2))
    a = s.const(axis)
    e = s.assign(f"np.exp({x} - {x}.max(axis={a}, keepdims=True))")
    s.labels.append(f"沿 axis={axis} 的 softmax")
    return s.assign(f"{e} / {e}.sum(axis={a}, keepdims=True)"), w


_POOLS = (("{x}.mean(axis={a})", "均值"), ("{x}.max(axis={a})", "最大值"),
          ("np.sort({x}, axis={a})[{k}]", "排序后的某一行"), ("np.cumsum({x}, axis={a})[-1]", "总和"))


def _pool(s: _Source, x: str, w: int, rows: int, breaks: bool) -> tuple[str, int]:
    """Add a summary of all rows to each row: the same for every order (equivariant)."""
    template, label = _POOLS[int(s.rng.integers(len(_POOLS)))]
    a, k = s.const(0), s.const(int(s.rng.integers(0, 4)))
    c = s.const(float(s.rng.uniform(0.3, 1.0)))
    s.labels.append(f"每一行加上全部行的{label}")
    return s.assign(f"{x} + {c} * {template.format(x=x, a=a, k=k)}"), w


def _table(s: _Source, x: str, w: int, rows: int, breaks: bool) -> tuple[str, int]:
    """Add (or multiply by) row ``i`` of a table: positions matter unless its rows agree."""
    shape = (rows, w) if s.rng.integers(2) else (rows, 1)
    distinct = s.rng.uniform(0.2, 1.0, shape)  # drawn either way: the rest of the probe
    table = distinct if breaks else np.repeat(distinct[:1], rows, axis=0)  # stays the same
    T = s.const(table)
    if s.rng.integers(2):
        s.labels.append("每一行加上表中同一位置的一行")
        return s.assign(f"{x} + {T}[:len({x})]"), w
    s.labels.append("每一行乘以表中同一位置的数")
    return s.assign(f"{x} * {T}[:len({x})]"), w


def _sinusoid(s: _Source, x: str, w: int, rows: int, breaks: bool) -> tuple[str, int]:
    """A sinusoidal position signal; zero frequencies make it the same at every position."""
    freq = s.rng.uniform(0.3, 1.5, w) * breaks  # drawn either way, zero unless it breaks
    f, phase = s.const(freq), s.const(s.rng.uniform(0, np.pi, w))
    amp = s.const(float(s.rng.uniform(0.5, 1.0)))
    p = s.assign(f"np.arange(len({x}))[:, None] * {f} + {phase}")
    s.labels.append("加上随位置变化的正弦信号" if breaks else "加上正弦信号")
    return s.assign(f"{x} + {amp} * np.sin({p})"), w


def _attention(s: _Source, x: str, w: int, rows: int, breaks: bool) -> tuple[str, int]:
    """Self-attention whose mask is a table (causal when ``breaks``) or-ed with a content rule."""
    out = int(s.rng.integers(2, 5))
    Wq, Wk, Wv = (s.const(s.rng.standard_normal((w, d)) / np.sqrt(w))
                  for d in (out, out, out))
    full, margin = bool(s.rng.integers(2)), float(s.rng.uniform(0.3, 1.5))  # drawn either way
    if breaks:
        table, margin, label = np.tril(np.ones((rows, rows), dtype=bool)), -1.0, "因果掩码的自注意力"
    else:
        table = np.full((rows, rows), full)
        label = "自注意力" if full else "自注意力（按内容取舍）"
    M, t = s.const(table), s.const(margin)
    q, k, v = s.assign(f"{x} @ {Wq}"), s.assign(f"{x} @ {Wk}"), s.assign(f"{x} @ {Wv}")
    n = s.assign(f"len({x})")
    sc = s.assign(f"{q} @ {k}.T / np.sqrt({k}.shape[-1])")
    kept = s.assign(f"np.where({M}[:{n}, :{n}] | ({sc} >= {sc}.max(axis=1, keepdims=True) - {t}),"
                    f" {sc}, -np.inf)")
    e = s.assign(f"np.exp({kept} - {kept}.max(axis=1, keepdims=True))")
    s.labels.append(label)
    return s.assign(f"{e} / {e}.sum(axis=1, keepdims=True) @ {v}"), out


#: Steps that never depend on positions, and steps that may (``breaks``).
NEUTRAL: tuple[Step, ...] = (_linear, _elementwise, _softmax_axis, _pool)
BREAKABLE: tuple[Step, ...] = (_along_axis, _table, _sinusoid, _attention)


def _assemble(rng: np.random.Generator, width: int, rows: int, breaks: bool,
              finish: Callable[[_Source, str, int], str], first: Step | None = None) -> TestFunction:
    """A probe: 1-3 neutral steps and 1-2 breakable ones (the first one ``first`` if
    given, and really breaking if ``breaks``), shuffled, then ``finish``."""
    s = _Source(rng)
    fname, arg = s.name(), s.name()
    cur = s.assign(f"np.asarray({arg}, dtype=float)")
    count = int(rng.integers(1, 3))
    steps: list[tuple[Step, bool]] = [(BREAKABLE[int(rng.integers(len(BREAKABLE)))], breaks and i == 0)
                                      for i in range(count)]
    if first is not None:
        steps[0] = (first, breaks)
    steps += [(NEUTRAL[int(rng.integers(len(NEUTRAL)))], False) for _ in range(int(rng.integers(1, 4)))]
    w = width
    for index in rng.permutation(len(steps)):
        step, really = steps[int(index)]
        cur, w = step(s, cur, w, rows, really)
    result = finish(s, cur, w)
    body = "\n".join(f"    {line}" for line in [*s.lines, f"return {result}"])
    return TestFunction(f"def {fname}({arg}):\n{body}\n", " → ".join(s.labels), fname, s.data)


def _bounded(s: _Source, cur: str, w: int) -> str:
    """Outputs of at most a few units: rtol·|b| stays far below a clear gap."""
    c = s.const(float(s.rng.uniform(0.5, 3.0)))
    return f"{c} * np.tanh({cur})"


def draw_structural(rng: np.random.Generator, X: np.ndarray, *, breaks: bool,
                    perm: np.ndarray, rounding: bool | None = None) -> Probe:
    """A probe with a clear answer on ``X`` and ``perm`` (equivariant unless ``breaks``).

    The answer is measured; an equivariant probe is kept only if it is neither invariant
    nor equivariant under the inverse permutation (so both misreadings answer wrongly).
    ``rounding`` True: an equivariant self-attention whose two sides differ by rounding
    only, as the lecture's attention does (exact equality fails it); False: two sides
    equal to the last bit; None: either."""
    rows = X.shape[0] + int(rng.integers(0, 4))
    for _ in range(DRAWS):
        fn = _assemble(rng, X.shape[1], rows, breaks, _bounded, _attention if rounding else None)
        g = gaps(fn, X, perm)
        if not np.isfinite([g.equivariant, g.invariant, g.inverse]).all():
            continue
        if breaks:
            if g.equivariant >= CLEAR_GAP:
                return Probe(fn, X, perm, False, g)
            continue
        if rounding is not None and (g.equivariant > 0.0) != rounding:
            continue
        if g.equivariant <= ROUNDOFF and min(g.invariant, g.inverse) >= CLEAR_GAP:
            return Probe(fn, X, perm, True, g)
    raise RuntimeError(f"no clear structural probe in {DRAWS} draws")


def _sorted_rows(s: _Source, cur: str, w: int) -> str:
    """Finish: sort along the sequence (axis from data): the same for every order of the
    input (invariant), so not equivariant."""
    a = s.const(0)
    s.labels.append("沿序列方向（axis=0）排序")
    return _bounded(s, s.assign(f"np.sort({cur}, axis={a})"), w)


def draw_invariant(rng: np.random.Generator, X: np.ndarray, perm: np.ndarray) -> Probe:
    """A probe that is permutation *invariant* but not equivariant: the answer is False,
    and a checker that compares with f(X) says True."""
    rows = X.shape[0] + int(rng.integers(0, 4))
    for _ in range(DRAWS):
        fn = _assemble(rng, X.shape[1], rows, False, _sorted_rows)
        g = gaps(fn, X, perm)
        if np.isfinite(g.equivariant) and g.equivariant >= CLEAR_GAP and g.invariant <= ROUNDOFF:
            return Probe(fn, X, perm, False, g, kind="invariant")
    raise RuntimeError(f"no clear invariant probe in {DRAWS} draws")


def with_identity(probe: Probe) -> Probe:
    """The same function under the identity permutation: every function passes that."""
    perm = np.arange(probe.X.shape[0])
    return Probe(probe.fn, probe.X, perm, True, gaps(probe.fn, probe.X, perm), probe.atol, "identity")


def readings(probe: Probe) -> dict[str, bool]:
    """What a checker answers on ``probe`` if it compares correctly (``correct``) or in one
    of the known wrong ways (keys of :data:`autograder.bank.q3.READINGS`). Computed once
    per probe, with plain comparisons (``np.allclose`` costs ten times as much)."""
    if probe._readings:
        return probe._readings
    with np.errstate(all="ignore"):
        lhs, out = np.asarray(probe.fn(probe.X[probe.perm])), np.asarray(probe.fn(probe.X))
    tol, rhs = probe.tolerance, out[probe.perm]

    def within(b: np.ndarray, bound: float | np.ndarray) -> bool:
        return bool(lhs.shape == b.shape and (np.abs(lhs - b) <= bound).all())
    probe._readings.update({
        "correct": within(rhs, tol), "invariant": within(out, tol),
        "inverse": within(out[np.argsort(probe.perm)], tol),
        "rtol_kept": within(rhs, tol + 1e-5 * np.abs(rhs)),
        "atol_ignored": within(rhs, DEFAULT_ATOL),
        "exact": bool(np.array_equal(lhs, rhs))})
    return probe._readings
