"""How the CPU is shared between children: each gets a fair, bounded share.

The kernel shares CPU time between runnable threads (with autogroups, between
sessions): a submission that starts 60 busy processes, each in a session of its own,
leaves a neighbour's single thread about 1/30 of a core, and an honest cell runs out of
time. Where the grader may make cgroups, each child's PID 1 (before it runs student
code, with every process it will start) gets a cpu cgroup of its own: cgroups side by
side share the CPU equally however many processes each holds, and each is capped at
:attr:`CpuPlan.cores` cores, its share of the machine (the CPUs this process may use
over the batch's workers, at least one). The order tried, as :mod:`.memcg` does:

1. cgroup v2 ``cpu.max`` in the child's memory cgroup (v2 puts a process in one cgroup
   only), when the cpu controller can be handed down to the batch's folder;
2. cgroup v1 ``cpu.cfs_quota_us`` (and equal ``cpu.shares``) in a folder of the cpu
   hierarchy below the grader's own cpu cgroup;
3. otherwise what every child has (:func:`autograder.engine.child.sandbox.apply_limits`):
   ``RLIMIT_CPU`` per process and ``RLIMIT_NPROC`` per user, so a bounded number of busy
   processes for a bounded time; the batch's log says it is no fair share.

:func:`plan` decides in the parent; :func:`.memcg.spawn` calls :meth:`CpuPlan.confine`.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from .memcg import (
    ChildCgroup,
    MemoryPlan,
    _proc,
    _read,
    _remove_tree,
    _write,
    find_hierarchy,
    remove_when_empty,
)

__all__ = ["CpuPlan", "plan", "PERIOD"]

log = logging.getLogger("autograder.engine")

#: The accounting period of the quota, in microseconds (the kernel's default).
PERIOD = 100_000
_PREFIX = "autograder-"


@dataclass
class CpuPlan:
    """The batch's choice: ``mechanism`` ``cgroup2``, ``cgroup1`` or ``rlimits``;
    ``folder``: the batch's own v1 cpu cgroup (children's go below it)."""

    mechanism: str
    cores: float = 1.0
    folder: Path | None = None
    why: str = ""
    _made: int = 0
    _children: list[Path] = field(default_factory=list)

    @property
    def quota(self) -> int:
        return max(1000, int(self.cores * PERIOD))

    def describe(self) -> str:
        share = f"at most {self.cores:g} core(s) per child, children sharing the CPU equally"
        if self.mechanism == "cgroup2":
            return f"cpu: a cgroup v2 cpu.max per child (in its memory cgroup): {share}"
        if self.mechanism == "cgroup1":
            return f"cpu: a cgroup v1 cpu.cfs_quota_us per child under {self.folder}: {share}"
        return (f"cpu: no cpu cgroup ({self.why}); each process is limited in CPU seconds "
                "and each child in processes, but a busy child is NOT held to a fair share")

    def confine(self, pid: int, memory: ChildCgroup | None) -> None:
        """Give child ``pid`` (its PID 1, before student code) its share. ``OSError``
        when the kernel refuses: the child then runs with the rlimits alone."""
        if self.mechanism == "cgroup2" and memory is not None and memory.version == 2:
            _write(memory.folder / "cpu.max", f"{self.quota} {PERIOD}")
        elif self.mechanism == "cgroup1" and self.folder is not None:
            self._children = [c for c in self._children if not _gone(c)]
            self._made += 1
            folder = self.folder / f"child-{os.getpid()}-{self._made}"
            folder.mkdir()
            self._children.append(folder)
            _write(folder / "cpu.cfs_period_us", str(PERIOD))
            _write(folder / "cpu.cfs_quota_us", str(self.quota))
            _write(folder / "cgroup.procs", str(pid))

    def close(self) -> None:
        """At the batch's end: remove every v1 cgroup it made (the children are gone)."""
        if self.folder is not None:
            _remove_tree(self.folder, 1)


def _gone(folder: Path) -> bool:
    """Remove a retired child's v1 cpu cgroup once it is empty; False while it is not."""
    return remove_when_empty(folder)


def _cores(workers: int) -> float:
    """One child's share of the CPUs this process may use, at least one core."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1.0, cpus / max(1, workers))


def _v2(memory: MemoryPlan) -> str:
    """Hand the cpu controller down to the batch's v2 folder; empty, or why not."""
    if memory.mechanism != "cgroup2" or memory.folder is None:
        return "no cgroup v2 memory folder to share"
    try:
        for folder in (memory.folder.parent, memory.folder):
            if "cpu" not in _read(folder / "cgroup.subtree_control").split():
                _write(folder / "cgroup.subtree_control", "+cpu")
    except OSError as err:
        return f"cgroup v2 cpu controller not delegated: {err.strerror or err}"
    return ""


def _v1_folder() -> Path:
    """A new v1 cpu cgroup for this batch below the grader's own (empty ones a dead
    grader left are removed first, never killing)."""
    h = find_hierarchy(_proc("mountinfo"), _proc("cgroup"), version=1, controller="cpu")
    if h is None:
        raise OSError(errno.ENOENT, "no cgroup v1 cpu hierarchy")
    for old in h.folder.glob(f"{_PREFIX}*"):
        owner = old.name[len(_PREFIX):].split("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            _remove_tree(old, 1, wait=0, kill=False)
    folder = h.folder / f"{_PREFIX}{os.getpid()}-{time.monotonic_ns()}"
    folder.mkdir()
    if not (folder / "cpu.cfs_quota_us").exists():
        with contextlib.suppress(OSError):
            folder.rmdir()
        raise OSError(errno.ENOENT, "no cpu.cfs_quota_us in a new v1 cgroup")
    return folder


def plan(memory: MemoryPlan, *, workers: int, cgroups: bool = True) -> CpuPlan:
    """Choose how this batch shares the CPU between its children (module docstring)."""
    cores = _cores(workers)
    if not cgroups:
        return CpuPlan("rlimits", cores, why="cgroups turned off")
    why = _v2(memory)
    if not why:
        return CpuPlan("cgroup2", cores)
    try:
        return CpuPlan("cgroup1", cores, _v1_folder())
    except OSError as err:
        return CpuPlan("rlimits", cores, why=f"{why}; cgroup v1: {err.strerror or err}")
