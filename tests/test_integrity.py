"""Tampering with the grader is flagged; ordinary solutions are not."""

from __future__ import annotations

import pytest

from autograder.engine.host.integrity import (
    MAX_CELL,
    MAX_TOTAL,
    TOO_DEEP,
    TOO_LONG,
    scan_cells,
    scan_source,
)


@pytest.mark.parametrize("source, reason", [
    ("import autograder.bank\nautograder.bank.run_check = lambda *a, **k: None", "导入了评分程序"),
    ("np.allclose = lambda *a, **k: True", "np.allclose"),
    ("numpy.testing.assert_allclose = print", "numpy.testing.assert_allclose"),
    ("setattr(np, 'isclose', lambda *a: True)", "setattr on np"),
    ("def run_check(*a, **k):\n    pass\nrun_check = run_check", "run_check"),
    ("import sys\nsys.modules['autograder'] = None", "sys.modules"),
    ("import os\nos._exit(0)", "os._exit"),
    ("from nbgrader import utils", "导入了评分程序"),
    # issue 29.2: the same rebinding through an alias, a module's namespace, or an import by name
    ("import numpy as N\n_c = N.allclose\nN.allclose = lambda a, b, **k: True", "N.allclose"),
    ("from numpy import testing as T\nT.assert_allclose = print", "T.assert_allclose"),
    ("import numpy as N\nvars(N)['isclose'] = lambda *a, **k: True", "vars(N)['isclose']"),
    ("np.__dict__['allclose'] = lambda *a, **k: True", "np.__dict__['allclose']"),
    ("vars(np).update(allclose=lambda *a, **k: True)", "changes vars(np)"),
    ("import importlib\nimportlib.import_module('autograder.bank.lib.reference')", "按名字导入"),
    ("import importlib\nimportlib.import_module('auto' + 'grader.bank.lib.reference')", "按名字导入"),
    ("ref = __import__('autograder')", "按名字导入"),
])
def test_tampering_is_flagged(source, reason):
    assert any(reason in r for r in scan_source(source))


@pytest.mark.parametrize("source", [
    "def softmax(z, axis=-1):\n    e = np.exp(z - z.max(axis=axis, keepdims=True))\n    return e / e.sum(axis=axis, keepdims=True)",
    "import numpy as np\nimport sympy as sp\nc = sp.Symbol('c')\nx = np.eye(2)\nx[0, 0] = 3",
    "%matplotlib inline\nimport matplotlib.pyplot as plt",
    "def broken(:\n    pass",
    "import numpy as N\nok = N.allclose(N.eye(2), N.eye(2))\nimport importlib\nm = importlib.import_module('scipy')",
])
def test_ordinary_code_is_not_flagged(source):
    assert scan_source(source) == []


def test_reasons_are_collected_once_across_cells():
    cells = ["np.allclose = None", "np.allclose = None", "import os\nos._exit(1)"]
    assert len(scan_cells(cells)) == 2


def test_code_hidden_behind_what_the_parser_cannot_take_is_flagged_line_by_line():
    """``1+1+…`` with 3000 terms: RecursionError in ast.parse (the batch ended on it)."""
    source = "_padding = " + "+".join(["1"] * 3000) + "\nimport autograder.bank\nx = 1"
    reasons = scan_source(source)
    assert TOO_DEEP in reasons and any("导入了评分程序" in r for r in reasons)
    assert scan_source("x = " + "not " * 5000 + "1") == [TOO_DEEP]


def test_what_is_too_long_to_scan_says_so():
    assert scan_source("x = 1\n" * (MAX_CELL // 6 + 1)) == [TOO_LONG]
    cells = ["x = 1\n" * (MAX_CELL // 6 - 10)] * (MAX_TOTAL // MAX_CELL + 2)
    assert scan_cells(cells + ["import autograder"]) == [TOO_LONG]


def test_a_long_rebound_name_is_quoted_short():
    (reason,) = scan_source("np." + "a" * 10_000 + " = 1")
    assert len(reason) < 300


def test_a_text_scanned_before_is_not_parsed_again(monkeypatch):
    """A worker scans each distinct cell once per batch (a cell left as released, or
    answered alike); each answer is a fresh list, and long cells are not kept."""
    from autograder.engine.host import integrity

    parsed = []
    real = integrity._parse
    monkeypatch.setattr(integrity, "_parse", lambda text: parsed.append(text) or real(text))
    cell = "import sys\nsys.modules['numpy'] = None\nprint('scanned once')\n"
    first, again = integrity.scan_source(cell), integrity.scan_source(cell)
    assert first == again and first and len(parsed) == 1
    first.append("changed by the caller")
    assert integrity.scan_source(cell) == again
    long_cell = cell + "#" * 9000
    integrity.scan_source(long_cell), integrity.scan_source(long_cell)
    assert len(parsed) == 3
