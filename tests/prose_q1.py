"""Numbers in q1_value_scaling's prose: given as they are, or computed from the solution."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from helpers import solution_namespace

A = "q1_value_scaling"


def _solution():
    if not hasattr(_solution, "ns"):
        _solution.ns = solution_namespace(A)
    return _solution.ns


def _r3(value: float) -> str:
    return f"{value:.3f}"


def _source():
    import nbformat
    from helpers import ROOT

    return nbformat.read(ROOT / "source" / A / f"{A}.ipynb", as_version=4)


def part_minutes() -> dict[str, int]:
    """Part id -> the minutes its first cell declares (tests/test_bank_q1.py checks that
    the intro's table adds up to the core's)."""
    found: dict[str, int] = {}
    for cell in _source().cells:
        meta = cell.metadata.get("autograder", {})
        if "minutes" in meta:
            found[meta["part"]] = meta["minutes"]
    return found


def core_solution_lines() -> int:
    """Lines of code inside the solution regions of the core's code cells (what a student
    writes; comments and blank lines left out)."""
    import re

    from autograder.engine.host.hidden import SOLUTION_BEGIN, SOLUTION_END

    count = 0
    for cell in _source().cells:
        if cell.cell_type != "code" or cell.metadata.get("autograder", {}).get("part", "core") != "core":
            continue
        for region in re.findall(rf"{SOLUTION_BEGIN}(.*?){SOLUTION_END}", cell.source, re.S):
            count += sum(1 for ln in region.splitlines()
                         if ln.strip() and not ln.strip().startswith(("#", '"""')))
    return count


#: Inputs, section numbers and indices the prose states: the hidden c of the
#: value-scaling check lies in [0.25, 0.5] or [2, 4] (autograder/bank/q1.py, value_scaling;
#: tests/test_bank_q1.py records the c it draws); 3.1 and 3.2 are sub-section numbers;
#: 11 is the index of $w_{11}$.
GIVEN: set[str] = {"0.25", "0.5", "3.1", "3.2", "11"}

FIGURES: dict[str, Callable[[], str]] = {
    # the core's time, as the intro's metadata declares it, and its lines of solution code
    # (the intro states both as 35)
    "35": lambda: "/".join(sorted({str(part_minutes()["core"]), str(core_solution_lines())})),
    # extension A's time, as its heading's metadata declares it
    "20": lambda: str(part_minutes()["ext-temperature"]),
    # output_3I / output_2I
    "1.5": lambda: f"{_solution().output_3I[0, 0] / _solution().output_2I[0, 0]:.6g}",
    # position 1's output with W_v = 3I, from the exact weights
    "2.009": lambda: _r3(_solution().output_3I[0, 0]),
    "0.991": lambda: _r3(_solution().output_3I[0, 1]),
    # the same from the lecture's rounded weights 0.670 / 0.330 times 3
    "2.010": lambda: _r3(3 * 0.670),
    "0.990": lambda: _r3(3 * 0.330),
    # 苹果's output in sentence A (B is its mirror image) and its largest weight (on 公司)
    "2.152": lambda: _r3(_solution().apple_A[0]),
    "0.284": lambda: _r3(_solution().apple_A[1]),
    "0.576": lambda: _r3(_solution().apple_weights_A.max()),
    # position 1's weight on itself with W_q = 3I
    "0.893": lambda: _r3(_solution().weights_3Wq[0, 0]),
    # 1/sqrt(2) as a float (the prose warns against writing it)
    "0.7071": lambda: f"{1 / np.sqrt(2):.4f}",
    # the limit c -> 0 of position 1's weights with W_q = c·I: uniform over the two positions
    "0.5": lambda: f"{_solution().position1_max_weight(0.0):g}",
}
