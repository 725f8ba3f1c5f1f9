"""Every check in these tests sees the student's values as the sandboxed engine delivers
them: through the wire format, functions as handles (:mod:`autograder.engine.loopback`)."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from autograder import bank
from autograder.engine.errors import StudentFault
from autograder.engine.loopback import crossing


@pytest.fixture(autouse=True)
def values_cross_the_boundary(monkeypatch):
    evaluate = bank.evaluate

    def across(name, values, **kwargs):
        try:
            crossed = {k: crossing(v) for k, v in values.items()}
        except StudentFault as err:  # refused by the host's reader, as the engine would
            check = bank.get_check(name)
            return bank.Outcome(name, check.title, "failed", str(err))
        return evaluate(name, crossed, **kwargs)

    monkeypatch.setattr(bank, "evaluate", across)


@pytest.fixture(scope="session", autouse=True)
def private_check_daemon():
    """``autograder check`` in these tests starts its warm daemon in a folder of this
    session's own (never one a user's daemon serves from) and stops it at the end."""
    from autograder import checkd

    folder = tempfile.mkdtemp(prefix="ag-")
    saved = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = folder
    yield
    checkd.stop()
    if saved is None:
        del os.environ["XDG_RUNTIME_DIR"]
    else:
        os.environ["XDG_RUNTIME_DIR"] = saved
    shutil.rmtree(folder, ignore_errors=True)


#: Modules that grade whole classes, slowest first: xdist hands out whole modules in
#: collection order, so starting with these keeps both workers busy to the end.
_SLOW_FIRST = ("test_samples", "test_nbgrader_parity", "test_browser_pages", "test_hostile",
               "test_hostile_class", "test_gradescope", "test_gradescope_hostile", "test_grade",
               "test_hostile_decoding_batch", "test_build", "test_demo", "test_lms",
               "test_memory", "test_hostile_decoding", "test_bank_q3")


def pytest_collection_modifyitems(session, config, items):
    def rank(item):
        name = item.module.__name__ if item.module else ""
        return _SLOW_FIRST.index(name) if name in _SLOW_FIRST else len(_SLOW_FIRST)

    items.sort(key=rank)  # stable: each module keeps its own order
