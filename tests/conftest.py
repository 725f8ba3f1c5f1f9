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


@pytest.fixture(scope="session")
def sample_batch(tmp_path_factory):
    """The sample class graded once (``tests/sample_batch.py``); the modules using it are
    one group in :data:`_GROUPS`, so one worker grades it."""
    from sample_batch import grade_sample_batch

    return grade_sample_batch(tmp_path_factory.mktemp("samples"))


#: Test modules slowest first (``--durations=0`` summed per module, a whole run): xdist
#: hands out whole modules (or groups, below) in this order, each worker taking the next
#: when it is almost done, so the longest go first and the short ones fill both workers'
#: ends. (test_hostile, whose cells have 2 s, goes before test_hostile_cpu's hog.)
_SLOW_FIRST = ("test_samples", "test_nbgrader_parity", "test_visible", "test_bank_q4",
               "test_bank_q2", "test_bank_q1", "test_bank_q5", "test_nbgrader_exchange",
               "test_grade", "test_gradescope", "test_hostile", "test_demo",
               "test_hostile_class", "test_hostile_cpu", "test_nbgrader_commands",
               "test_checkd", "test_selfcheck_everywhere", "test_bank_q3", "test_build", "test_gradescope_hostile", "test_protection",
               "test_hostile_decoding", "test_hostile_checks", "test_lms",
               "test_hostile_edges_batch", "test_browser_pages", "test_engine", "test_layering",
               "test_memory", "test_parts", "test_selfcheck_cell", "test_report",
               "test_hostile_decoding_batch", "test_feedback_page", "test_guard",
               "test_studentuser", "test_outputs_safety", "test_prose", "test_integrity")

#: Modules that share a session fixture run on one worker, as one unit: a module -> its
#: group (every other module is a group of its own).
_GROUPS = {"test_samples": "samples", "test_nbgrader_parity": "samples",
           # the solutions run in-process (helpers.solution_namespace, once per worker:
           # q2's and q5's demos take seconds)
           "test_hostile_checks": "solutions", "test_prose": "solutions",
           "test_api_names": "solutions", "test_release_q4": "solutions",
           # each sample student's visible run (helpers.visible_failures, once per worker)
           "test_visible": "visible", "test_bank_q1": "visible", "test_bank_q2": "visible",
           "test_bank_q4": "visible", "test_bank_q5": "visible"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    def rank(item):
        name = item.module.__name__ if item.module else ""
        return _SLOW_FIRST.index(name) if name in _SLOW_FIRST else len(_SLOW_FIRST)

    items.sort(key=rank)  # stable: each module keeps its own order


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` with :data:`_GROUPS` kept together and the order above kept
    (xdist's own loadfile would reorder the modules by their number of tests)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            stem = module.rsplit("/", 1)[-1].removesuffix(".py")
            return _GROUPS.get(stem, module)

    config.option.loadscopereorder = False
    return ModuleGroups(config, log)
