"""Every registered check, fed every hostile value of ``tests/hostile_decoding.py`` in
place of each of its values (and, for a function, a function returning each, or its own
results spoiled in one place): the outcome is the student's failure, never a grader error
and never a pass (a hostile *context* keyword, an earlier answer the check judges this one
against, may leave a right answer passing, never erring). And a census of what the honest solutions send, against the budgets.

The registry is iterated (``bank.checks_for`` for every assignment, keywords read from
each check's signature), so checks added later are covered without editing this file.
"""

from __future__ import annotations

import json

import pytest
from hostile_decoding import SPOILERS, VALUES, spoiled

from autograder import bank
from autograder.bank import runner
from autograder.engine.protocol import budgets, codec, jsonguard
from autograder.settings import ASSIGNMENTS

# ------------------------------------------------------------------ every registered check


def _honest(assignment: str) -> dict[str, object]:
    from helpers import solution_namespace

    return vars(solution_namespace(assignment))


_HONEST: dict[str, dict] = {}


def _known(status: str, check: str, keyword: str, tricks: list[str]) -> dict:
    return {(check, keyword, f"function returning {t}"): status for t in tricks}


#: (check, keyword, trick) -> the outcome a bank module still gives instead of "failed"
#: (these are the checks' own code, reported to the lead). Strict: once a check is fixed
#: its entry must go, and a new offender fails the test.
KNOWN: dict[tuple[str, str, str], str] = {
}


def _all_checks() -> list[bank.Check]:
    return [c for a in ASSIGNMENTS for c in bank.checks_for(a)]


def _keywords(check: bank.Check) -> list[str]:
    import inspect

    return [p.name for p in inspect.signature(check.func).parameters.values()
            if p.kind is p.KEYWORD_ONLY]


def _variables(check: bank.Check) -> dict[str, str]:
    """keyword -> variable, as the assignment's manifest calls the check (else the same)."""
    from autograder.engine.host.manifest import load

    for spec in (s for s in load(check.assignment).cells if s.is_test):
        for call in spec.checks:
            if call.name == check.name:
                return dict(call.values)
    return {k: k for k in _keywords(check)}


def _returning(value):
    return lambda *args, **kwargs: value


def _spoiling(func, how: str):
    """``func`` with its results spoiled; ``.spoiled`` says whether any result could be
    (a bool cannot: such a case proves nothing and is skipped)."""
    def spoiling(*args, **kwargs):
        result = func(*args, **kwargs)
        worse = spoiled(result, how)
        spoiling.spoiled = spoiling.spoiled or worse is not None
        return result if worse is None else worse

    spoiling.spoiled = False
    return spoiling


def _cases(honest: object) -> list[tuple[str, object]]:
    """(label, hostile value) in place of ``honest``: every value of the corpus, the
    honest value spoiled in one place, and for a function, one returning each of those."""
    cases = [(trick, make()) for trick, make in VALUES.items()]
    cases += [(f"spoiled {how}", worse) for how in SPOILERS
              if (worse := spoiled(honest, how)) is not None]
    if callable(honest):
        cases += [(f"function returning {trick}", _returning(make()))
                  for trick, make in VALUES.items()]
        cases += [(f"function returning its result spoiled {how}", _spoiling(honest, how))
                  for how in SPOILERS]
    return cases


@pytest.mark.parametrize("name", [c.name for c in _all_checks()])
def test_every_check_fails_every_hostile_value(name):
    check = bank.get_check(name)
    if check.assignment not in _HONEST:
        _HONEST[check.assignment] = _honest(check.assignment)
    honest = _HONEST[check.assignment]
    variables = _variables(check)
    values = {k: honest.get(variables.get(k, k)) for k in _keywords(check)}
    # (these values pass the check: the census below asserts it for every check)
    wrong = []
    for keyword in values:
        for label, hostile in _cases(values[keyword]):
            outcome = runner.evaluate(name, {**values, keyword: hostile})
            if getattr(hostile, "spoiled", True) is False:
                continue  # no result of that function could be spoiled so
            expected = KNOWN.get((name, keyword, label), "failed")
            if keyword in check.context and outcome.status == "passed":
                continue  # an earlier answer it is judged against: a right answer may pass
            if outcome.status != expected:
                last = outcome.detail.strip().splitlines()[-1:] or [outcome.message]
                wrong.append(f"{name} {keyword}={label}: {outcome.status}: {last[0][:200]}")
    assert not wrong, "\n".join(wrong)


# ------------------------------------------------------------------ the honest census


def test_honest_values_sit_well_inside_every_budget(monkeypatch):
    """The solution of every assignment through every check, recording what crosses: every
    check passes on it (so the property test's failures are the hostile values' doing),
    its SymPy classes are all in the reader's allowlist and each size is at most a quarter
    of its budget (the solutions' largest: SymPy text 2.6 kB, each shared subexpression
    written once, 9407 syntax nodes spelled out, 891 exact bits, exponent 72; header
    4.6 kB, 20 values, depth 5; before sharing the text was 24 kB, the header 35 kB)."""
    import ast

    from autograder.engine.host import sympy_reader as srepr
    from autograder.engine.host.sympy_budget import size_of

    seen: dict[str, float] = {}
    classes: set[str] = set()

    def note(key: str, value: float) -> None:
        seen[key] = max(seen.get(key, 0), value)

    reader, encoder = srepr.from_srepr, codec.encode_for_host

    def read(text):
        tree = ast.parse(text, mode="eval")
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
        classes.update(c.func.id for c in calls if isinstance(c.func, ast.Name))
        definitions, body = srepr._shared(tree.body)
        sizes = []
        for node in [*definitions, body]:
            sizes.append(size_of(node, sizes))
        note("text_chars", len(text))
        note("nodes", srepr.expanded_size(definitions, body)[0] if definitions
             else sum(1 for _ in ast.walk(tree)))
        note("bits", max(size.bits for size in sizes))
        note("exponent", max(size.exponent for size in sizes))
        return reader(text)

    def encode(value, blobs, handles, depth=0):
        out = encoder(value, blobs, handles, depth)
        if depth == 0:
            header = json.dumps({"id": 1, "value": out}).encode()
            json_depth, items = jsonguard.measure(header)
            note("json_bytes", len(header))
            note("json_depth", json_depth)
            note("json_items", items)
            note("array_bytes", max(map(len, blobs), default=0))
        return out

    monkeypatch.setattr(srepr, "from_srepr", read)
    monkeypatch.setattr(codec, "encode_for_host", encode)
    for check in _all_checks():
        if check.assignment not in _HONEST:
            _HONEST[check.assignment] = _honest(check.assignment)
        variables = _variables(check)
        values = {k: _HONEST[check.assignment].get(variables.get(k, k)) for k in _keywords(check)}
        assert runner.evaluate(check.name, values).status == "passed", check.name
    allowed = set(srepr.NODES) | set(srepr.SHARING) | {
        "Integer", "Rational", "Float", "Symbol", "Dummy", "MutableDenseMatrix",
        "ImmutableDenseMatrix", "Function"}
    assert classes and classes <= allowed, classes - allowed
    limits = {"text_chars": budgets.SYMPY.text_chars, "nodes": budgets.SYMPY.nodes,
              "bits": budgets.SYMPY.bits, "exponent": budgets.SYMPY.exponent,
              "json_bytes": budgets.VALUE_FRAME.json_bytes,
              "json_depth": budgets.VALUE_FRAME.json_depth,
              "json_items": budgets.VALUE_FRAME.json_items,
              "array_bytes": budgets.VALUE.array_bytes}
    assert set(seen) == set(limits)
    assert all(seen[k] <= limits[k] / 4 for k in limits), {k: (seen[k], limits[k]) for k in limits}
