"""Fixtures of every test: a private warm-check daemon, and the slow modules first.

(The bank's unit tests have one of their own: ``tests/bank/conftest.py``.)"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest


@pytest.fixture(scope="session", autouse=True)
def private_check_daemon():
    """``autograder check`` in these tests starts its warm daemon in a folder of this
    session's own (never one a user's daemon serves from) and stops it at the end."""
    from autograder.integrations.selfcheck import daemon as checkd

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
