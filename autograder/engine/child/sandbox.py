"""The child's walls: Linux namespaces, a read-only view of the system, limits, no privileges.

Two stages, both run in processes that never held grader code beyond the engine itself:

1. :func:`enter_view` in the zygote (once): a new user and mount namespace whose root is
   an empty tmpfs holding read-only binds of the system and of the Python installation
   only. The course, the gradebook, other students' work, the output folder and the
   package's checks are simply not there; the package folder is covered by an empty
   tmpfs when it lies inside a bound tree (a non-editable install).
2. :func:`isolate_child` per submission: new mount, PID, network, IPC and UTS
   namespaces (no network interface is up; the child is PID 1 of its namespace, so every
   process it starts dies with it), a private ``/tmp`` and home on size-limited tmpfs,
   resource limits, and every capability dropped with ``no_new_privs`` set.

Where the kernel refuses namespaces, :func:`enter_view` reports what is missing and the
child still gets limits, its own session and a subreaper that kills what it leaves; a
root grader also runs it as a separate unprivileged user (:mod:`.studentuser`).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from ..protocol.limits import SandboxLimits, SharedMemory
from . import seccomp  # imported now: the package is not in the child's view

__all__ = ["View", "enter_view", "isolate_child", "drop_privileges", "tmpfs_bytes",
           "address_space_limit", "bound_shared_memory", "HOME", "MISSING_WITHOUT_NAMESPACES"]

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC = 1, 2, 4, 32, 4096, 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
PR_CAPBSET_DROP, PR_SET_SECUREBITS = 24, 28
PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 36, 38, 47
#: x86_64 / aarch64 numbers of the two system calls glibc does not wrap.
_SYSCALLS = {"x86_64": {"pivot_root": 155, "capset": 126},
             "aarch64": {"pivot_root": 41, "capset": 91}}

#: Where the child's code runs and its data files are written.
HOME = "/home/student"
MISSING_WITHOUT_NAMESPACES = (
    "the child can read files this user can read (the course, other submissions) and "
    "use the network; processes it detaches are killed by a best-effort subreaper")

#: The system calls that make memory outside the address space, refused without a cgroup.
SHARED_MEMORY_CALLS = ("memfd_create", "memfd_secret", "shmget", "shmat")

_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class View:
    """What the zygote achieved: ``isolated`` when namespaces are in force; ``tmp`` is
    the child's private temporary folder (``/tmp``, unless the Python installation
    itself lives under ``/tmp``, as a CI checkout's virtual environment may)."""

    isolated: bool
    missing: str = ""
    tmp: str = "/tmp"


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def _mount(source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    _check(_libc.mount(_c(source), _c(target), _c(fstype), ctypes.c_ulong(flags), _c(data)),
           f"mount {target}")


def _c(text: str | None) -> bytes | None:
    return text.encode() if text is not None else None


def _syscall(name: str, *args: object) -> int:
    number = _SYSCALLS.get(platform.machine(), {}).get(name)
    if number is None:
        raise OSError(f"{name}: unknown system call number on {platform.machine()}")
    return _libc.syscall(number, *args)


def _map_ids(uid: int, gid: int) -> None:
    """Map the namespace's root to the outer ids (the only mapping an unprivileged user may write)."""
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"0 {uid} 1")
    Path("/proc/self/gid_map").write_text(f"0 {gid} 1")


# ------------------------------------------------------------------ the zygote's view


def _bind_readonly(source: Path, root: Path) -> None:
    target = Path(str(root) + str(source))
    if source.is_dir():
        target.mkdir(parents=True, exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch(exist_ok=True)
    _mount(str(source), str(target), None, MS_BIND | MS_REC)
    _mount(None, str(target), None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_REC)


def _system_paths() -> list[Path]:
    """The system and Python trees the child may read."""
    paths = [Path("/usr"), Path(sys.base_prefix), Path(sys.prefix), Path(sys.exec_prefix)]
    for name in ("bin", "lib", "lib32", "lib64", "sbin"):
        p = Path("/") / name
        if p.is_dir() and not p.is_symlink():
            paths.append(p)
    for name in ("ld.so.cache", "ld.so.conf", "localtime", "nsswitch.conf"):
        p = Path("/etc") / name
        if p.is_file():
            paths.append(p.resolve())
    # a venv's python may be a symlink to an interpreter elsewhere
    paths.append(Path(os.path.realpath(sys.executable)).parent.parent)
    unique: list[Path] = []
    for p in sorted({p.resolve() for p in paths if p.exists()}, key=lambda p: len(p.parts)):
        if not any(p == u or u in p.parents for u in unique):
            unique.append(p)
    return unique


def enter_view(root: Path, hidden: list[Path]) -> View:
    """Move this (single-threaded) process into namespaces whose ``/`` shows only the
    system and Python trees, read-only; ``hidden`` folders are covered with empty tmpfs.

    Run by root, the namespace's root is mapped to ``nobody`` outside (and the mount
    namespace belongs to the outer user namespace, so nothing inside can mount over the
    view); run by another user, to that user.
    """
    uid, gid = os.getuid(), os.getgid()
    mapper = None
    try:
        if uid == 0:
            mapper = _IdMapper()
            _unshare(CLONE_NEWNS)
        else:
            _unshare(CLONE_NEWUSER | CLONE_NEWNS)
            _map_ids(uid, gid)
    except OSError as err:
        if mapper is not None:  # else every child inherits its pipes, and it lingers
            mapper.cancel()
        return View(False, f"{MISSING_WITHOUT_NAMESPACES} (namespaces refused: {err})")
    try:
        tmp = _build_root(root, hidden)
    except OSError as err:  # a partial sandbox (AppArmor-style): namespaces, but no mount
        if mapper is not None:
            mapper.cancel()
        return View(False, f"{MISSING_WITHOUT_NAMESPACES} (namespaces allowed but mounts "
                           f"refused: {err})")
    if uid == 0:
        _unshare(CLONE_NEWUSER)
        mapper.map_to_nobody()
    return View(True, tmp=tmp)


class _IdMapper:
    """For root: a helper forked *before* the namespaces, which still sees the host's
    ``/proc`` and writes the new user namespace's id maps (0 inside = nobody outside)."""

    NOBODY = 65534

    def __init__(self) -> None:
        self.target = os.getpid()
        self.go_r, self.go_w = os.pipe()
        self.done_r, self.done_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            code = 1
            try:
                os.read(self.go_r, 1)
                for name, value in (("setgroups", "deny"), ("uid_map", f"0 {self.NOBODY} 1"),
                                    ("gid_map", f"0 {self.NOBODY} 1")):
                    Path(f"/proc/{self.target}/{name}").write_text(value)
                code = 0
            finally:
                os.write(self.done_w, bytes([code]))
                os._exit(code)

    def cancel(self) -> None:
        """No namespace after all: end the helper and close its pipes."""
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        for fd in (self.go_r, self.go_w, self.done_r, self.done_w):
            os.close(fd)

    def map_to_nobody(self) -> None:
        os.write(self.go_w, b"x")
        ok = os.read(self.done_r, 1) == b"\x00"
        os.waitpid(self.pid, 0)
        for fd in (self.go_r, self.go_w, self.done_r, self.done_w):
            os.close(fd)
        if not ok:
            raise OSError("could not write the user namespace's id maps")
        os.setresgid(0, 0, 0)  # become the namespace's root, i.e. nobody outside
        os.setresuid(0, 0, 0)


def _build_root(root: Path, hidden: list[Path]) -> str:
    """The new root, pivoted into; returns the folder children get as their ``/tmp``."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    root.mkdir(parents=True, exist_ok=True)
    _mount("tmpfs", str(root), "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    bound = _system_paths()
    for path in bound:
        _bind_readonly(path, root)
    # a tmpfs over /tmp would hide an installation bound beneath it
    tmp = "/tmp" if not any(Path("/tmp") in p.parents for p in bound) else "/sandbox-tmp"
    for link in ("bin", "lib", "lib32", "lib64", "sbin"):
        p = Path("/") / link
        if p.is_symlink():
            (root / link).symlink_to(os.readlink(p))
    for device in ("null", "zero", "random", "urandom"):
        target = root / "dev" / device
        target.parent.mkdir(exist_ok=True)
        target.touch()
        _mount(f"/dev/{device}", str(target), None, MS_BIND)
    for path in hidden:
        target = Path(str(root) + str(path.resolve()))
        if target.is_dir():
            _mount("tmpfs", str(target), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k")
    for folder in (tmp.lstrip("/"), HOME.lstrip("/"), ".old"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    _check(_syscall("pivot_root", str(root).encode(), str(root / ".old").encode()), "pivot_root")
    os.chdir("/")
    _check(_libc.umount2(b"/.old", MNT_DETACH), "umount the old root")
    os.rmdir("/.old")
    _mount(None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    return tmp


# ------------------------------------------------------------------ one child


def isolate_child(view: View) -> None:
    """In a fresh fork of the zygote: new namespaces for this submission. The caller
    must fork once more; that grandchild is PID 1 of the new PID namespace."""
    if view.isolated:
        _unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)
    else:
        os.setsid()
        _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def private_folders(view: View, limits: SandboxLimits) -> None:
    """A fresh, size-limited temporary folder and home for this child (in its own mount
    namespace)."""
    if not view.isolated:
        return
    size = tmpfs_bytes(limits)
    for folder in (view.tmp, HOME):
        _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777")


#: The child's tmpfs folders (``/tmp`` and its home), each of :func:`tmpfs_bytes`.
TMPFS_FOLDERS = 2


def tmpfs_bytes(limits: SandboxLimits) -> int:
    """Size of each of the child's tmpfs folders: a file's limit, and at most an eighth
    of the memory, so both fit in the budget whatever counts them."""
    return max(1 << 20, min(limits.file_bytes, limits.memory // 8))


def address_space_limit(limits: SandboxLimits, base_address_space: int) -> int:
    """``RLIMIT_AS``: the zygote's own mappings plus the memory budget; without a
    cgroup, what the tmpfs folders may hold comes out of that budget (no address space
    shows a tmpfs file's pages)."""
    memory = limits.memory
    if limits.shared_memory != SharedMemory.COUNTED:
        memory -= TMPFS_FOLDERS * tmpfs_bytes(limits)
    return base_address_space + max(memory, 16 << 20)


def bound_shared_memory(limits: SandboxLimits) -> None:
    """In the student's PID 1, last thing before it serves: without a cgroup counting
    it, refuse every system call that makes memory outside the address space
    (``OSError`` if the kernel refuses the filter: such a child must not run). The
    module is imported with this one, while the package is still in view."""
    if limits.shared_memory == SharedMemory.REFUSED:
        seccomp.deny({name: errno.EPERM for name in SHARED_MEMORY_CALLS})


def apply_limits(limits: SandboxLimits, base_address_space: int) -> None:
    """Resource limits; the address-space limit counts what the zygote already maps."""
    memory = address_space_limit(limits, base_address_space)
    for which, value in ((resource.RLIMIT_AS, memory), (resource.RLIMIT_CORE, 0),
                         (resource.RLIMIT_FSIZE, limits.file_bytes),
                         (resource.RLIMIT_NOFILE, limits.open_files),
                         (resource.RLIMIT_NPROC, limits.processes)):
        resource.setrlimit(which, (value, value))
    cpu = limits.cpu_seconds
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))


def drop_privileges() -> None:
    """No capabilities now or after any exec, and no way to gain them back."""
    secure = 0x1 | 0x2 | 0x4 | 0x8  # NOROOT, NOROOT_LOCKED, NO_SETUID_FIXUP(_LOCKED)
    _libc.prctl(PR_SET_SECUREBITS, secure, 0, 0, 0)
    for cap in range(64):
        _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    _libc.prctl(PR_CAP_AMBIENT, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()
    _syscall("capset", ctypes.byref(header), ctypes.byref(data))
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def address_space() -> int:
    """Bytes of address space this process maps now (read before ``/proc`` goes away)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def kill_leftovers() -> None:
    """Without a PID namespace: kill every process re-parented to this subreaper."""
    me = os.getpid()
    for _round in range(20):
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                    found.append(int(entry.name))
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
