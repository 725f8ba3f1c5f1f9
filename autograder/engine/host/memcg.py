"""How a child's memory is bounded, shared memory included: chosen once per batch.

``RLIMIT_AS`` counts what a process maps, not what it holds: ``memfd_create`` files,
System V segments (touched, then detached) and files on the child's tmpfs hold memory
that no address space shows. Where this machine lets the grader make cgroups, each
child's PID 1 gets a memory cgroup of its own, whose limit counts every page the child
and its processes charge (anonymous, shared, tmpfs), so the kernel stops it at
``--memory``. The order tried:

1. cgroup v2 (``memory.max``), in a folder below the grader's own cgroup, when the
   memory controller is delegated there;
2. cgroup v1 (``memory.limit_in_bytes``), when the memory hierarchy is writable;
3. otherwise the child refuses ``memfd_create``/``memfd_secret``/``shmget``/``shmat``
   with a seccomp filter (:func:`.sandbox.refuse_shared_memory`) and its tmpfs sizes are
   taken out of its address-space limit (:func:`.sandbox.address_space_limit`).

:func:`plan` decides in the parent (logged once per batch); each worker puts its child
into a cgroup with :meth:`MemoryPlan.confine` before the child runs any student code.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..child import seccomp
from ..protocol.limits import SharedMemory

__all__ = ["MemoryPlan", "ChildCgroup", "Hierarchy", "plan", "find_hierarchy", "spawn",
           "settle"]

log = logging.getLogger("autograder.engine")

#: Seconds the batch's end waits for the last children's cgroups to empty.
EMPTY_WAIT = 10.0
_PREFIX = "autograder-"


@dataclass(frozen=True)
class Hierarchy:
    """Where this process's memory cgroup is: ``version`` 1 or 2, ``folder`` its path."""

    version: int
    folder: Path


def _mounts(mountinfo: str) -> list[tuple[str, str, str, set[str]]]:
    """(root, mount point, fstype, super options) of each line of ``/proc/self/mountinfo``."""
    found = []
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if sep and len(fields) >= 5 and len(tail) >= 3:
            found.append((fields[3], fields[4], tail[0], set(tail[2].split(","))))
    return found


def _inside(mount_root: str, mount_point: str, own: str) -> Path | None:
    """The folder of cgroup ``own`` under a mount of the hierarchy's ``mount_root``."""
    if own != mount_root and not own.startswith(mount_root.rstrip("/") + "/"):
        return None
    rel = own[len(mount_root.rstrip("/")):].lstrip("/")
    return Path(mount_point) / rel if rel else Path(mount_point)


def find_hierarchy(mountinfo: str, cgroup: str, *, version: int,
                   controller: str = "memory") -> Hierarchy | None:
    """This process's cgroup folder in hierarchy ``version`` (1 or 2; in v1, the one of
    ``controller``), from the text of ``/proc/self/mountinfo`` and ``/proc/self/cgroup``;
    None where there is none."""
    for line in cgroup.splitlines():
        number, _, rest = line.partition(":")
        controllers, _, own = rest.partition(":")
        wanted = (version == 2 and number == "0" and controllers == "") or \
            (version == 1 and controller in controllers.split(","))
        if not wanted:
            continue
        for root, point, fstype, options in _mounts(mountinfo):
            if (version == 2 and fstype == "cgroup2") or \
                    (version == 1 and fstype == "cgroup" and controller in options):
                folder = _inside(root, point, own)
                if folder is not None:
                    return Hierarchy(version, folder)
    return None


def _write(path: Path, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _field(text: str, name: str) -> int:
    """``name N`` from a flat-keyed cgroup file (memory.events, memory.oom_control)."""
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == name and value.strip().isdigit():
            return int(value)
    return 0


@dataclass
class ChildCgroup:
    """One child's memory cgroup: its limit, its peak and its OOM kills."""

    folder: Path
    version: int

    def peak(self) -> int | None:
        """Most bytes charged at once (None where the kernel does not say)."""
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        text = _read(self.folder / name).strip()
        return int(text) if text.isdigit() else None

    def oom_kills(self) -> int:
        """Processes the kernel killed for going past the limit."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        return _field(_read(self.folder / name), "oom_kill")

    def kill(self) -> None:
        """SIGKILL whatever is still in the cgroup (processes a namespace did not end)."""
        if self.version == 2 and (self.folder / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                _write(self.folder / "cgroup.kill", "1")
            return
        for pid in _read(self.folder / "cgroup.procs").split():
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)

    def remove(self) -> bool:
        """Remove the folder once its processes are gone; False while some remain."""
        return remove_when_empty(self.folder)


def remove_when_empty(folder: Path) -> bool:
    """Remove a cgroup folder once no process is left in it (True, also when it is already
    gone); False while the kernel still counts one (EBUSY)."""
    try:
        folder.rmdir()
    except FileNotFoundError:
        return True
    except OSError as err:
        if err.errno == errno.EBUSY:
            return False
        raise
    return True


@dataclass
class MemoryPlan:
    """The batch's choice. ``mechanism``: ``cgroup2``, ``cgroup1``, ``seccomp`` or
    ``none``; ``folder``: the batch's own cgroup (children's cgroups go below it)."""

    mechanism: str
    folder: Path | None = None
    why: str = ""
    _made: int = 0
    _leftover: list[ChildCgroup] = field(default_factory=list)
    #: How the children share the CPU (a :class:`.cpushare.CpuPlan`, set by the pool).
    cpu: Any = None

    @property
    def shared_memory(self) -> str:
        """What the child does about shared memory (:class:`~autograder.engine.protocol.limits.SharedMemory`)."""
        if self.folder is not None:
            return SharedMemory.COUNTED
        return SharedMemory.REFUSED if self.mechanism == "seccomp" else SharedMemory.UNBOUNDED

    def describe(self) -> str:
        if self.mechanism == "cgroup2":
            how = f"a cgroup v2 memory.max per child under {self.folder}"
        elif self.mechanism == "cgroup1":
            how = f"a cgroup v1 memory.limit_in_bytes per child under {self.folder}"
        elif self.mechanism == "seccomp":
            return ("memory: no usable memory cgroup" + (f" ({self.why})" if self.why else "")
                    + "; the child refuses memfd_create, memfd_secret, shmget and shmat "
                    "(seccomp) and its tmpfs sizes come out of its address-space limit")
        else:
            return ("memory: shared memory is NOT bounded (no memory cgroup, and seccomp is "
                    f"unavailable: {self.why}); only the address space is limited")
        return f"memory: {how}, counting shared memory and the child's tmpfs"

    def confine(self, pid: int, limit: int) -> ChildCgroup | None:
        """Put process ``pid`` (a child's PID 1, before it runs student code) in a new
        cgroup limited to ``limit`` bytes; None when this plan has no cgroups. Raises
        ``OSError`` when the kernel refuses: the caller must not run that child so."""
        if self.folder is None:
            return None
        self.sweep()
        self._made += 1
        folder = self.folder / f"child-{os.getpid()}-{self._made}"
        folder.mkdir()
        cgroup = ChildCgroup(folder, 2 if self.mechanism == "cgroup2" else 1)
        try:
            _limit(cgroup, limit)
            _write(folder / "cgroup.procs", str(pid))
        except OSError:
            cgroup.remove()
            raise
        return cgroup

    def release(self, cgroup: ChildCgroup | None) -> None:
        """A child is retired: remove its cgroup now or, while it empties, later."""
        if cgroup is not None and not cgroup.remove():
            self._leftover.append(cgroup)

    def sweep(self) -> None:
        """Remove the cgroups of retired children that have emptied since."""
        self._leftover = [c for c in self._leftover if not c.remove()]

    def close(self) -> None:
        """At the batch's end (its children are gone): remove every cgroup it made."""
        if self.cpu is not None:
            self.cpu.close()
        if self.folder is None:
            return
        _remove_tree(self.folder, 2 if self.mechanism == "cgroup2" else 1)


def _limit(cgroup: ChildCgroup, limit: int) -> None:
    if cgroup.version == 2:
        _write(cgroup.folder / "memory.max", str(limit))
        if (cgroup.folder / "memory.swap.max").exists():
            _write(cgroup.folder / "memory.swap.max", "0")
        return
    _write(cgroup.folder / "memory.limit_in_bytes", str(limit))
    if (cgroup.folder / "memory.memsw.limit_in_bytes").exists():  # swap counts too
        _write(cgroup.folder / "memory.memsw.limit_in_bytes", str(limit))


def _remove_tree(folder: Path, version: int, wait: float = EMPTY_WAIT, *,
                 kill: bool = True) -> None:
    """Remove ``folder``'s child cgroups (with ``kill``, killing what is left in them
    first), then ``folder``."""
    deadline = time.monotonic() + wait
    children = [ChildCgroup(p, version) for p in folder.iterdir() if p.is_dir()] \
        if folder.is_dir() else []
    while children:
        for c in children if kill else ():
            c.kill()
        children = [c for c in children if not c.remove()]
        if not children or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    for c in children if kill else ():
        log.warning("memory: the cgroup %s still has processes; left in place", c.folder)
    if not children:
        with contextlib.suppress(OSError):
            folder.rmdir()


def _proc(name: str) -> str:
    return _read(Path("/proc/self") / name)


def _batch_folder(h: Hierarchy) -> Path:
    """A new cgroup for this batch below ``h``. Empty ones a dead grader left are
    removed (never killing: a grader in another PID namespace may look dead from here)."""
    for old in h.folder.glob(f"{_PREFIX}*"):
        owner = old.name[len(_PREFIX):].split("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            _remove_tree(old, h.version, wait=0, kill=False)
    folder = h.folder / f"{_PREFIX}{os.getpid()}-{time.monotonic_ns()}"
    folder.mkdir()
    try:
        if h.version == 2:
            _write(folder / "cgroup.subtree_control", "+memory")
        elif not (folder / "memory.limit_in_bytes").exists():
            raise OSError(errno.ENOENT, "no memory.limit_in_bytes in a new v1 cgroup")
    except OSError:
        with contextlib.suppress(OSError):
            folder.rmdir()
        raise
    return folder


def _delegated(h: Hierarchy) -> bool:
    """v2: the memory controller reaches the grader's cgroup and can be handed down."""
    if "memory" not in _read(h.folder / "cgroup.controllers").split():
        return False
    if "memory" in _read(h.folder / "cgroup.subtree_control").split():
        return True
    try:  # allowed in the root cgroup or a cgroup without processes of its own
        _write(h.folder / "cgroup.subtree_control", "+memory")
    except OSError:
        return False
    return True


def _seccomp_works() -> str:
    """Empty when the child can refuse system calls; else why not."""
    if not seccomp.supported():
        return f"system call numbers of {os.uname().machine} unknown"
    if "Seccomp:" not in _proc("status"):
        return "this kernel has no seccomp"
    return ""


def plan(*, cgroups: bool = True) -> MemoryPlan:
    """Choose how this batch bounds its children's memory (see the module docstring);
    ``cgroups=False`` skips straight to the seccomp filter."""
    why = "turned off" if not cgroups else ""
    mountinfo, own = _proc("mountinfo"), _proc("cgroup")
    for version in ((2, 1) if cgroups else ()):
        h = find_hierarchy(mountinfo, own, version=version)
        if h is None or (version == 2 and not _delegated(h)):
            continue
        try:
            return MemoryPlan(f"cgroup{version}", _batch_folder(h))
        except OSError as err:
            why = f"cgroup v{version} not writable: {err.strerror or err}"
    why = why or "no memory controller this process may use"
    missing = _seccomp_works()
    if missing:
        return MemoryPlan("none", why=f"{why}; {missing}")
    return MemoryPlan("seccomp", why=why)


def spawn(zygote, limits, memory: MemoryPlan | None, *, who: str = ""):
    """A child of ``zygote`` (a :class:`.zygote_link.ZygoteLink`) for ``limits``, in a cgroup
    of its own when ``memory`` has them: ``(child, cgroup or None)``. A child the kernel
    will not put in a cgroup is retired, and one refusing shared memory runs instead."""
    child, cgroup = zygote.spawn(limits), None
    if memory is not None and limits.shared_memory == SharedMemory.COUNTED:
        try:
            cgroup = memory.confine(child.pid, limits.memory)
        except OSError as err:
            log.warning("memory: child %d could not be put in a cgroup (%s); %s runs in a "
                        "child refusing shared memory instead", child.pid, err, who)
            zygote.retire(child)
            child = zygote.spawn(replace(limits, shared_memory=SharedMemory.REFUSED))
    if memory is not None and memory.cpu is not None:
        try:  # its fair share of the CPU (.cpushare), before it runs student code
            memory.cpu.confine(child.pid, cgroup)
        except OSError as err:
            log.warning("cpu: child %d has no cpu share (%s); %s runs with its CPU "
                        "rlimits alone", child.pid, err, who)
    return child, cgroup


def settle(memory: MemoryPlan | None, cgroup: ChildCgroup | None) -> tuple[int | None, bool]:
    """After a child is retired: its peak bytes and whether the kernel killed it for its
    limit; its cgroup is then released."""
    if memory is None or cgroup is None:
        return None, False
    peak, killed = cgroup.peak(), cgroup.oom_kills() > 0
    memory.release(cgroup)
    return peak, killed
