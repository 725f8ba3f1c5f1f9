"""Fixtures of every test: a private warm-check daemon, and the slow modules first.

(The bank's unit tests have one of their own: ``tests/bank/conftest.py``.)"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import pytest

# The suite keeps Python's bytecode caches even where the environment turns them off
# (PYTHONDONTWRITEBYTECODE=1, as in some containers): else both workers recompile every
# test module's rewritten asserts (2.4 s of each worker's 4.8 s collection) and each of
# the suite's hundreds of subprocesses this package's modules, on every run. Set before
# the workers start and collect (this file is read first); children of the engine still
# get PYTHONDONTWRITEBYTECODE=1 from the engine itself.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


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


@pytest.fixture(scope="session", autouse=True)
def warm_zygotes():
    """Ends the zygotes ``tests/warm_zygote.py`` kept running for the batch fixtures."""
    yield
    if "warm_zygote" in sys.modules:
        sys.modules["warm_zygote"].close_all()


@pytest.fixture(scope="session")
def sample_batch(tmp_path_factory):
    """The sample class graded once (``tests/sample_batch.py``); the modules using it are
    one group in :data:`_GROUPS`, so one worker grades it."""
    import warm_zygote
    from sample_batch import grade_sample_batch

    with warm_zygote.shared():
        return grade_sample_batch(tmp_path_factory.mktemp("samples"))


#: Test modules slowest first (``--durations`` summed per module and per group, a whole
#: run; the modules made quicker since, measured alone): xdist hands out whole modules (or
#: groups, below) in this order, each worker taking the next when it is almost done, so
#: the longest go first and the short ones fill both workers' ends. A module not named
#: here goes last: name a slow one at its measured place.
_SLOW_FIRST = (
    "test_visible", "test_bank_q1", "test_bank_q4", "test_bank_q2", "test_bank_q5",  # 93 s
    "test_gradescope_hostile", "test_protection", "test_studentuser",  # 45 s
    "test_samples", "test_nbgrader_parity",  # 27 s
    "test_selfcheck_everywhere",  # 21 s
    "test_nbgrader_exchange", "test_browser_lab", "test_browser_pages", "test_gradescope",
    "test_hostile_cpu",  # 13 s, the hog's one test
    "test_demo", "test_grade", "test_hostile", "test_nbgrader_commands", "test_bank_q3",
    "test_hostile_checks", "test_prose", "test_api_names", "test_release_q4",
    "test_hostile_class", "test_hostile_decoding", "test_build", "test_selfcheck_cell",
    "test_checkd", "test_feedback_page", "test_hostile_decoding_batch",
    "test_hostile_edges_batch", "test_parts", "test_engine", "test_lms",
    "test_memory", "test_report", "test_bypass", "test_layering",
    "test_guard", "test_outputs_safety", "test_bank_core", "test_integrity")

#: Modules that share a session fixture, a per-process cache or a lock run on one worker,
#: as one unit: a module -> its group (every other module is a group of its own).
_GROUPS = {"test_samples": "samples", "test_nbgrader_parity": "samples",
           # the solutions run in-process (helpers.solution_namespace, once per worker:
           # q2's and q5's demos take seconds)
           "test_hostile_checks": "solutions", "test_prose": "solutions",
           "test_api_names": "solutions", "test_release_q4": "solutions",
           # each sample student's visible run (helpers.visible_failures, once per worker)
           "test_visible": "visible", "test_bank_q1": "visible", "test_bank_q2": "visible",
           "test_bank_q4": "visible", "test_bank_q5": "visible",
           # one module at a time runs children as student users (gradescope_env.exclusive):
           # on two workers the second waited for the first, a worker idle for 30 s
           "test_gradescope_hostile": "student-users", "test_protection": "student-users",
           "test_studentuser": "student-users"}


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
