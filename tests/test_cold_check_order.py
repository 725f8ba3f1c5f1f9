"""A cold ``autograder check`` starts its zygote before it reads the notebook when the
file name says which assignment it is: the zygote's imports are the check's critical
path, and reading the notebook first (importing nbformat) put 0.15 s in front of them."""

from __future__ import annotations

import pytest

from autograder.errors import CourseError
from autograder.integrations.selfcheck import check

A = "q1_value_scaling"


class _Stop(Exception):
    pass


@pytest.fixture
def order(monkeypatch):
    seen: list[str] = []
    read = check._read

    def fake_zygote(**kwargs):
        seen.append("zygote")
        raise _Stop

    monkeypatch.setattr(check, "check_zygote", fake_zygote)
    monkeypatch.setattr(check, "_read", lambda path: seen.append("read") or read(path))
    monkeypatch.setattr("autograder.engine.host.plainchild.zygote_missing", lambda: "")
    return seen


def test_a_named_notebook_starts_the_zygote_before_it_is_read(tmp_path, order):
    notebook = tmp_path / f"{A}-alice.ipynb"
    notebook.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    with pytest.raises(_Stop):
        check.run_check_notebook(notebook=notebook)
    assert order == ["zygote"]


def test_an_unnamed_notebook_is_read_first_to_tell_which_it_is(tmp_path, order):
    notebook = tmp_path / "mine.ipynb"
    notebook.write_text('{"cells": [], "metadata": {"autograder": {"source": "source/'
                        f'{A}/{A}.ipynb"}}}}, "nbformat": 4, "nbformat_minor": 5}}')
    with pytest.raises(_Stop):
        check.run_check_notebook(notebook=notebook)
    assert order == ["read", "zygote"]


def test_a_missing_notebook_is_said_before_any_child_starts(tmp_path, order):
    with pytest.raises(CourseError, match="does not exist"):
        check.run_check_notebook(notebook=tmp_path / f"{A}.ipynb")
    assert order == ["read"]
