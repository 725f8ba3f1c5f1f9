"""One meaning per name: a function that several assignments ask for has one signature."""

from __future__ import annotations

import ast
from collections import defaultdict

import nbformat
from lecture import ASSIGNMENT_ORDER, ROOT

from autograder.engine.host.hidden import strip_markers


def _signatures() -> dict[str, dict[str, str]]:
    """Function name -> {assignment: its signature} over every solution cell."""
    found: dict[str, dict[str, str]] = defaultdict(dict)
    for a in ASSIGNMENT_ORDER:
        path = ROOT / "source" / a / f"{a}.ipynb"
        if not path.is_file():
            continue
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code" or not cell.metadata.get("nbgrader", {}).get("solution"):
                continue
            for node in ast.parse(strip_markers(cell.source)).body:
                if isinstance(node, ast.FunctionDef):
                    found[node.name][a] = ast.unparse(node.args)
    return found


def test_shared_function_names_have_one_signature():
    clashes = {name: sigs for name, sigs in _signatures().items() if len(set(sigs.values())) > 1}
    assert not clashes, f"one name, several signatures: {clashes}"


def _example_args(name: str):
    """Small fixed inputs for each function name that more than one assignment asks for."""
    import numpy as np

    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, -1.0]])
    eye = np.eye(2)
    return {
        "softmax": (np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 1.0]]),),
        "attention_weights": (X, X),
        "attention": (X, X, 2 * X),
        "self_attention": (X, eye, eye, 2 * eye),
    }.get(name)


def _same(a, b) -> bool:
    import numpy as np

    if isinstance(a, tuple) or isinstance(b, tuple):
        return (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)
                and all(_same(x, y) for x, y in zip(a, b)))
    return np.shape(a) == np.shape(b) and bool(np.allclose(a, b))


def test_shared_function_names_return_the_same_thing():
    from helpers import solution_namespace

    shared = {name: sorted(sigs) for name, sigs in _signatures().items() if len(sigs) > 1}
    for name, assignments in shared.items():
        args = _example_args(name)
        assert args is not None, f"{name} is asked for by {assignments}: add example inputs here"
        results = {a: getattr(solution_namespace(a), name)(*args) for a in assignments}
        first = results[assignments[0]]
        differ = [a for a in assignments[1:] if not _same(first, results[a])]
        assert not differ, f"{name} returns different things in {assignments[0]} and {differ}"
