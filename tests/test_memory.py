"""A child's memory counts shared memory: a cgroup per child, else a seccomp filter.

The bombs (``tests/hostile_class.py``'s harness) print how much they held. Run in a
child with no bound on shared memory they hold far past the limit (so the measurement
can fail); in a child refusing shared memory, or confined to a cgroup, they do not.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from hostile_class import HOARD, held_mb

from autograder.engine.child.sandbox import address_space_limit, tmpfs_bytes
from autograder.engine.host import memcg
from autograder.engine.host.zygote_link import Zygote
from autograder.engine.protocol.limits import SandboxLimits, SharedMemory

COUNTED, REFUSED, UNBOUNDED = SharedMemory.COUNTED, SharedMemory.REFUSED, SharedMemory.UNBOUNDED


LIMIT_MB = 256
CHUNK_MB = 32  # what the bombs' holder takes before its first step
BOMBS = {"memfd": "hoard(memfd_step, 768)", "shm": "hoard(shm_step, 768)",
         "tmpfs_then_heap": "hoard(tmpfs_then_heap, 768)"}


@pytest.fixture(scope="module")
def zygote():
    z = Zygote(figures=False, warm=False, tokenizer=False)
    yield z
    z.close()


def _limits(shared_memory: str) -> SandboxLimits:
    return SandboxLimits(memory=LIMIT_MB << 20, shared_memory=shared_memory)


def _bomb(child, bomb: str) -> str:
    reply = child.run(HOARD + BOMBS[bomb], seconds=60)
    return "".join(o.get("text", "") + str(o.get("evalue", "")) for o in reply["outputs"])


def test_unbounded_shared_memory_is_held_far_past_the_limit(zygote):
    """The control: without a cgroup or the filter, RLIMIT_AS does not see these."""
    child = zygote.spawn(_limits(UNBOUNDED))
    try:
        for bomb in ("memfd", "shm"):
            assert held_mb(_bomb(child, bomb)) == 768, bomb
    finally:
        child.close()


@pytest.mark.parametrize("bomb", ["memfd", "shm"])
def test_without_a_cgroup_shared_memory_is_refused(zygote, bomb):
    child = zygote.spawn(_limits(REFUSED))
    try:
        text = _bomb(child, bomb)
        assert held_mb(text) == CHUNK_MB and "Operation not permitted" in text, text
    finally:
        child.close()


def test_without_a_cgroup_the_tmpfs_counts_in_the_address_space(zygote):
    child = zygote.spawn(_limits(REFUSED))
    try:
        text = _bomb(child, "tmpfs_then_heap")
        assert held_mb(text) <= LIMIT_MB and "MemoryError" in text, text
    finally:
        child.close()


@pytest.fixture
def cgroups():
    plan = memcg.plan()
    if plan.folder is None:
        pytest.skip(plan.describe())
    yield plan
    plan.close()
    assert not plan.folder.exists()


@pytest.mark.parametrize("bomb", list(BOMBS))
def test_a_cgroup_holds_each_bomb_to_the_limit(zygote, cgroups, bomb):
    child, cgroup = memcg.spawn(zygote, _limits(COUNTED), cgroups)
    try:
        held = held_mb(_bomb(child, bomb))
        assert held is not None and held <= LIMIT_MB, held
        assert cgroup.oom_kills() >= 1 and cgroup.peak() <= LIMIT_MB << 20
    finally:
        zygote.retire(child)
        cgroups.release(cgroup)


def test_the_filter_is_in_pid_1_only(zygote, cgroups):
    """A child the batch counts by cgroup is not filtered (nor is the zygote it came
    from): memfd_create works there, and its memory is the cgroup's."""
    child, cgroup = memcg.spawn(zygote, _limits(COUNTED), cgroups)
    try:
        text = child.run("import os\nos.close(os.memfd_create('fine'))\nprint('made')",
                         seconds=10)["outputs"][0]["text"]
        assert text == "made\n"
    finally:
        zygote.retire(child)
        cgroups.release(cgroup)


def test_a_child_the_kernel_will_not_confine_refuses_shared_memory_instead(zygote, tmp_path):
    broken = memcg.MemoryPlan("cgroup1", tmp_path / "no-such-cgroup")
    child, cgroup = memcg.spawn(zygote, _limits(COUNTED), broken, who="test")
    try:
        assert cgroup is None
        assert held_mb(_bomb(child, "memfd")) == CHUNK_MB
    finally:
        child.close()


def test_the_tmpfs_comes_out_of_the_address_space_only_without_a_cgroup():
    limits = SandboxLimits(memory=512 << 20, file_bytes=64 << 20)
    assert tmpfs_bytes(limits) == 64 << 20
    assert tmpfs_bytes(SandboxLimits(memory=256 << 20)) == 32 << 20  # an eighth at most
    base = 1 << 30
    assert address_space_limit(limits, base) == base + (512 - 128 << 20)
    counted = SandboxLimits(memory=512 << 20, shared_memory=COUNTED)
    assert address_space_limit(counted, base) == base + (512 << 20)


MOUNTINFO = """\
25 30 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
32 25 0:27 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
33 25 0:28 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 25 0:35 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""


def test_the_hierarchies_are_found_from_proc():
    cgroup = "4:memory:/grading/box\n8:pids:/\n0::/user.slice/grader.scope\n"
    assert memcg.find_hierarchy(MOUNTINFO, cgroup, version=1) == \
        memcg.Hierarchy(1, Path("/sys/fs/cgroup/memory/grading/box"))
    assert memcg.find_hierarchy(MOUNTINFO, cgroup, version=2) == \
        memcg.Hierarchy(2, Path("/sys/fs/cgroup/unified/user.slice/grader.scope"))
    # a container sees its own cgroup as the mount's root
    inside = "29 28 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
    assert memcg.find_hierarchy(inside, "0::/docker/abc\n", version=2) == \
        memcg.Hierarchy(2, Path("/sys/fs/cgroup"))
    assert memcg.find_hierarchy(MOUNTINFO, "8:pids:/\n", version=1) is None


def test_without_cgroups_the_plan_is_the_filter_and_says_so():
    plan = memcg.plan(cgroups=False)
    assert (plan.mechanism, plan.shared_memory) == ("seccomp", REFUSED)
    assert "memfd_create" in plan.describe() and "turned off" in plan.describe()


def test_a_v2_hierarchy_gets_memory_max_and_no_swap(tmp_path):
    """cgroup v2 is not on this machine: the files the plan writes, in a plain folder."""
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("memory\n")
    h = memcg.Hierarchy(2, tmp_path)
    assert memcg._delegated(h)
    stale = tmp_path / "autograder-999999999-1"  # a grader that died: no such process
    (stale / "child-999999999-1").mkdir(parents=True)
    folder = memcg._batch_folder(h)
    assert not stale.exists()
    assert (folder / "cgroup.subtree_control").read_text() == "+memory"
    plan = memcg.MemoryPlan("cgroup2", folder)
    child = folder / f"child-{os.getpid()}-1"
    child.mkdir()  # the kernel makes a cgroup's files; here the test does
    (child / "memory.swap.max").write_text("max")
    cgroup = memcg.ChildCgroup(child, 2)
    memcg._limit(cgroup, 123 << 20)
    assert (child / "memory.max").read_text() == str(123 << 20)
    assert (child / "memory.swap.max").read_text() == "0"
    (child / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    assert cgroup.oom_kills() == 1 and plan.shared_memory == COUNTED


def test_a_busy_cgroup_is_removed_later(tmp_path, monkeypatch):
    cgroup = memcg.ChildCgroup(tmp_path / "busy", 1)
    cgroup.folder.mkdir()
    real = Path.rmdir

    def busy(self):
        if self == cgroup.folder:
            raise OSError(errno.EBUSY, "busy")
        return real(self)

    monkeypatch.setattr(Path, "rmdir", busy)
    plan = memcg.MemoryPlan("cgroup1", tmp_path)
    plan.release(cgroup)
    assert plan._leftover == [cgroup]
    monkeypatch.setattr(Path, "rmdir", real)
    plan.sweep()
    assert plan._leftover == [] and not cgroup.folder.exists()
