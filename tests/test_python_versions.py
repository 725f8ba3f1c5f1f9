"""Python 3.10 is supported: no syntax, regular expression or module of 3.11+ in the package.

The real proof is the smoke job (.ci/smoke.sh) on the oldest and newest interpreter; these
tests catch the same mistakes in the ordinary run, on whatever Python runs it.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

from autograder.engine.child import openfiles
from autograder.engine.protocol import jsonguard

PACKAGE = Path(__file__).resolve().parents[1] / "autograder"
SOURCES = sorted(PACKAGE.rglob("*.py"))
#: Possessive quantifiers and atomic groups: regular expressions Python 3.10 rejects.
NEWER_REGEX = re.compile(r"(?<!\\)[*+?}]\+|\(\?>")
#: Modules and names that arrived in Python 3.11+ (an import of them needs a fallback).
NEWER_NAMES = {("typing", "Self"), ("typing", "LiteralString"), ("typing", "Never"),
               ("typing", "assert_never"), ("typing", "reveal_type"), ("datetime", "UTC"),
               ("itertools", "batched"), ("enum", "StrEnum"), ("asyncio", "TaskGroup")}
NEWER_ATTRIBUTES = {"add_note", "batched"}  # Path.walk (3.12) looks like os.walk: not here


def _patterns(tree: ast.AST):
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
                and node.args and isinstance(node.args[0], ast.Constant)):
            yield node.args[0].value


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_package_parses_and_compiles_its_patterns_as_python_3_10(path):
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, feature_version=(3, 10))  # except*, 3.12 generics: SyntaxError
    for pattern in _patterns(tree):
        text = pattern.decode("latin-1") if isinstance(pattern, bytes) else pattern
        assert not NEWER_REGEX.search(text), f"{path.name}: {pattern!r} needs Python 3.11"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_or_name_of_python_3_11_without_a_fallback(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    guarded = {id(n) for t in ast.walk(tree) if isinstance(t, ast.Try)
               if any(isinstance(h.type, ast.Name) and h.type.id == "ImportError"
                      for h in t.handlers) for n in ast.walk(t)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and id(node) not in guarded:
            assert "tomllib" not in {a.name for a in node.names}, f"{path.name}: tomllib"
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                assert (node.module, alias.name) not in NEWER_NAMES, \
                    f"{path.name}: from {node.module} import {alias.name}"
        if isinstance(node, ast.Name):
            assert node.id not in {"ExceptionGroup", "BaseExceptionGroup"}, path.name
        if isinstance(node, ast.Attribute) and node.attr in NEWER_ATTRIBUTES:
            pytest.fail(f"{path.name}: .{node.attr} is Python 3.11+")


def test_the_string_pattern_is_the_possessive_one_on_every_input():
    """The unrolled pattern cuts out exactly what the possessive one did (3.11+ here)."""
    possessive = rb'"(?:[^"\\]++|\\.)*+"?'
    try:
        reference = re.compile(possessive, re.DOTALL)
    except re.error:
        pytest.skip("this Python has no possessive quantifiers")
    import random

    rng = random.Random(28)
    for _ in range(3000):
        text = bytes(rng.choice(b'"\\a[,\n') for _ in range(rng.randrange(24)))
        assert jsonguard._STRING.sub(b"0", text) == reference.sub(b"0", text), text


def test_a_file_the_zygote_closed_after_listing_it_is_skipped(tmp_path):
    """Python 3.10: matplotlib lets a font go between the listing and the fork. Reopening
    it took its very number and dup2(fd, fd) failed, so no child started."""
    kept, gone = tmp_path / "kept.ttf", tmp_path / "gone.ttf"
    kept.write_bytes(b"x" * 10)
    gone.write_bytes(b"y")
    fd_kept = os.open(kept, os.O_RDONLY)
    fd_gone = os.open(gone, os.O_RDONLY)
    try:
        os.lseek(fd_kept, 4, os.SEEK_SET)
        files = {fd_kept: str(kept), fd_gone: str(gone)}
        os.close(fd_gone)
        openfiles.reopen_privately(files)
        assert os.lseek(fd_kept, 0, os.SEEK_CUR) == 4
        with pytest.raises(OSError):
            os.fstat(fd_gone)
    finally:
        os.close(fd_kept)


def test_a_due_date_in_utc_with_z_is_read_on_every_python():
    """``--due 2026-12-01T15:59Z``: Python 3.10's ``fromisoformat`` refuses the ``Z``."""
    from datetime import datetime

    from autograder.grading.report_rows import parse_due

    due = parse_due(["2026-12-01T15:59Z", "q1_value_scaling=2026-12-01T23:59+08:00"])
    assert due[None] == due["q1_value_scaling"] == datetime(2026, 12, 1, 15, 59)
