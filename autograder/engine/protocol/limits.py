"""What the host tells the zygote about a child, and what the zygote answers.

:class:`SandboxLimits` travel with every spawn request (as JSON: :func:`dataclasses.asdict`);
:class:`SharedMemory` says how the child's memory outside its address space is bounded;
:class:`Protection` is what the zygote's ready message reports its children get.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...settings import Word

__all__ = ["SandboxLimits", "SharedMemory", "Protection"]


class SharedMemory(Word):
    """What a child does about memory no address space shows (memfd files, System V
    segments, its tmpfs): ``counted`` by a memory cgroup the host put it in
    (:mod:`autograder.engine.host.memcg`), ``refused`` by a seccomp filter (tmpfs sizes
    taken out of the address-space limit), or ``unbounded`` where neither is possible."""

    COUNTED = "counted"
    REFUSED = "refused"
    UNBOUNDED = "unbounded"


class Protection(Word):
    """What the zygote's children get: Linux namespaces; a separate unprivileged user per
    child (a root grader without namespaces); or nothing beyond limits (the grader's own
    user)."""

    NAMESPACES = "namespaces"
    SEPARATE_USER = "separate-user"
    NONE = "none"


@dataclass(frozen=True)
class SandboxLimits:
    """Per-submission limits: bytes of memory beyond the zygote's, CPU seconds,
    processes, bytes per file (and at most of each tmpfs), open files, and how shared
    memory is bounded."""

    memory: int = 2 << 30
    cpu_seconds: int = 600
    processes: int = 64
    file_bytes: int = 64 << 20
    open_files: int = 256
    shared_memory: str = SharedMemory.REFUSED
