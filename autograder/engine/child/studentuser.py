"""Without namespaces, a grader running as root runs each child as a user of its own.

Where the kernel refuses namespaces (Docker's default seccomp profile refuses
``unshare``, and Gradescope's containers are Docker containers), the child would
otherwise run as root beside the grader: able to read the bundle's salt, write
``results/`` and kill the grader. Here, the zygote (root) gives each child a separate,
unprivileged uid and gid (:class:`Users`): the child then reads only what every user may
read, cannot signal the grader or another child, holds no capability and sets
``no_new_privs`` (:func:`become`). Its home is its own; when it ends, every process of
its uid is killed (:func:`end_processes`) and what it left in the world-writable
folders is removed (:func:`remove_owned`), so the next child given that uid finds
nothing of it.

Ids: the account :data:`~.settings.STUDENT_USER` (setup.sh creates it) and the numeric
ids ``STUDENT_UID ... STUDENT_UID + STUDENT_SLOTS - 1``, each used only while no other
account or group claims it and no process runs under it. Two graders on one machine (two
zygotes) never hand out the same id at once: a zygote takes an id only with a lock on its
file in a root-only folder (:func:`_claim`), held until the child's reaper exits; where
no such folder can be made, there are no separate users (said by :meth:`Users.find`).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import grp
import os
import pwd
import shutil
import signal
import stat
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...settings import STUDENT_SLOTS, STUDENT_UID, STUDENT_USER

__all__ = ["StudentUser", "Users", "become", "end_processes", "remove_owned", "readable_by",
           "unreadable_python", "really_root", "WORLD_WRITABLE"]

#: Folders every user may write in; what a child's uid leaves there is removed.
WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm")
_CAP_CHOWN, _CAP_SETGID, _CAP_SETUID = 0, 6, 7
_PR_CAPBSET_DROP, _PR_SET_SECUREBITS, _PR_SET_NO_NEW_PRIVS, _PR_CAP_AMBIENT = 24, 28, 38, 47
_PR_SET_DUMPABLE = 4
#: NOROOT, NOROOT_LOCKED, KEEP_CAPS_LOCKED: uid 0 gains nothing by exec, and the kernel
#: clears every capability when the uid changes (NO_SETUID_FIXUP stays off for that).
_SECUREBITS = 0x1 | 0x2 | 0x20

_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class StudentUser:
    """The ids one child runs as."""

    uid: int
    gid: int


def _status(pid: str = "self") -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}


def _mapped(number: int, table: str) -> bool:
    """Whether ``number`` exists in this user namespace (a rootless container maps few)."""
    for line in Path(f"/proc/self/{table}").read_text().splitlines():
        inside, _outside, count = (int(x) for x in line.split())
        if inside <= number < inside + count:
            return True
    return False


def _claimed(uid: int, gid: int) -> bool:
    """Whether an account or group other than :data:`STUDENT_USER`'s has these ids."""
    for lookup, number in ((pwd.getpwuid, uid), (grp.getgrgid, gid)):
        try:
            entry = lookup(number)
        except KeyError:
            continue
        if entry[0] != STUDENT_USER:
            return True
    return False


def _running_uids() -> set[int]:
    """Every uid (real, effective, saved, filesystem) a live process runs under now (a
    zombie runs nothing: it only waits for its parent to reap it)."""
    found: set[int] = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                status = _status(entry.name)
                if not status["State"].startswith("Z"):
                    found.update(int(x) for x in status["Uid"].split())
            except (OSError, KeyError, ValueError):
                continue  # gone meanwhile
    return found


def _lock_folder() -> Path:
    """A folder only root may write, for the ids' lock files (a student's own folder of
    that name is never used)."""
    for base in ("/run/lock", "/run", tempfile.gettempdir()):
        folder = Path(base) / "autograder-uids"
        with contextlib.suppress(OSError):
            folder.mkdir(mode=0o700, exist_ok=True)
            info = folder.lstat()
            if stat.S_ISDIR(info.st_mode) and info.st_uid == 0 and not info.st_mode & 0o077:
                return folder
    raise OSError("no folder only root may write for the student ids' locks")


def _claim(folder: Path, uid: int) -> int | None:
    """A lock on ``uid``'s file in ``folder`` held by this process, as an open descriptor
    (closing it releases the lock); None while another grader holds it. A POSIX record
    lock: a fork does not inherit it, so no child can release it."""
    fd = os.open(folder / str(uid), os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                 0o600)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


class Users:
    """The ids the zygote hands out, one per live child."""

    def __init__(self, candidates: list[StudentUser], locks: Path | None = None) -> None:
        self.candidates = candidates
        self.locks = locks or _lock_folder()  # where the ids' lock files are
        self._held: dict[StudentUser, int] = {}  # -> the reaper's pid
        self._locks: dict[StudentUser, int] = {}  # -> the descriptor holding its lock

    @classmethod
    def find(cls) -> tuple[Users | None, str]:
        """The ids usable here, or ``None`` and why there are none."""
        if os.geteuid() != 0:
            return None, "the grader does not run as root"
        caps = int(_status()["CapEff"], 16)
        if not all(caps >> c & 1 for c in (_CAP_CHOWN, _CAP_SETGID, _CAP_SETUID)):
            return None, "the grader lacks CAP_SETUID, CAP_SETGID or CAP_CHOWN"
        wanted = []
        try:
            named = pwd.getpwnam(STUDENT_USER)
            wanted.append(StudentUser(named.pw_uid, named.pw_gid))
        except KeyError:
            pass
        wanted += [StudentUser(STUDENT_UID + i, STUDENT_UID + i) for i in range(STUDENT_SLOTS)]
        usable = [u for u in dict.fromkeys(wanted) if u.uid != 0 and u.gid != 0
                  and not _claimed(u.uid, u.gid)
                  and _mapped(u.uid, "uid_map") and _mapped(u.gid, "gid_map")]
        if not usable:
            return None, f"no uid from {STUDENT_UID} on is free in this user namespace"
        try:
            return cls(usable, _lock_folder()), ""
        except OSError as err:
            return None, str(err)

    def describe(self) -> str:
        ids = sorted({u.uid for u in self.candidates})
        span = f"{ids[0]}" if len(ids) == 1 else f"{ids[0]}-{ids[-1]}"
        return f"uid {span}"

    def take(self) -> StudentUser | None:
        """Ids no live child holds, no other grader has locked and no process runs under,
        or ``None``."""
        self._held = {u: pid for u, pid in self._held.items() if _alive(pid)}
        for user in [u for u in self._locks if u not in self._held]:
            os.close(self._locks.pop(user))
        for user in self.candidates:
            if user in self._held:
                continue
            try:
                fd = _claim(self.locks, user.uid)
            except OSError:
                return None
            if fd is None:
                continue
            # looked at once the lock is held, so a process of an id another grader has
            # just given up is seen (its children's processes end with them, so this
            # usually looks once)
            if user.uid in _running_uids():
                os.close(fd)
                continue
            self._locks[user] = fd
            return user
        return None

    def lock_fds(self) -> list[int]:
        """The descriptors of the locks held: a child closes its copies."""
        return list(self._locks.values())

    def hold(self, user: StudentUser, reaper: int) -> None:
        """``user`` is taken until ``reaper`` (the child's zygote fork) exits."""
        self._held[user] = reaper


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _prctl(option: int, arg: int, what: str) -> None:
    if _libc.prctl(option, arg, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def become(user: StudentUser) -> None:
    """In the child, while still root: become ``user`` for good, with no capability,
    ``no_new_privs`` and not dumpable (no other process of its uid may trace it). Raises
    ``OSError`` if any step does not hold: such a child must not run."""
    _prctl(_PR_SET_SECUREBITS, _SECUREBITS, "securebits")
    for cap in range(64):  # nothing an exec could raise again
        if _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # past the kernel's last capability
    _prctl(_PR_CAP_AMBIENT, 4, "clear the ambient capabilities")
    os.setgroups([])
    os.setresgid(user.gid, user.gid, user.gid)
    os.setresuid(user.uid, user.uid, user.uid)
    _prctl(_PR_SET_NO_NEW_PRIVS, 1, "no_new_privs")
    _prctl(_PR_SET_DUMPABLE, 0, "not dumpable")
    status = _status()
    held = (os.getresuid(), os.getresgid(), os.getgroups(), status["CapEff"], status["CapPrm"])
    if held != ((user.uid,) * 3, (user.gid,) * 3, [], "0" * 16, "0" * 16):
        raise OSError(f"the child did not become uid {user.uid}: {held}")
    try:
        os.setuid(0)
    except PermissionError:
        return
    raise OSError("the child could become root again")


def end_processes(user: StudentUser, *, reap: bool = False, rounds: int = 20) -> bool:
    """Kill every process running under ``user``'s uid (the child's own, and any it
    detached); ``True`` once none is left. ``reap``: the caller is the subreaper the
    killed ones were re-parented to, and waits for them (PID 1 of a container may not)."""
    for _round in range(rounds):
        if user.uid not in _running_uids():
            break
        helper = os.fork()
        if helper == 0:  # kill(-1) as the uid itself reaches exactly its processes
            try:
                os.setresuid(user.uid, user.uid, user.uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(helper, 0)
    while reap:
        try:
            reap = os.waitpid(-1, os.WNOHANG)[0] != 0
        except ChildProcessError:
            break
    return user.uid not in _running_uids()


def remove_owned(user: StudentUser, folders: tuple[str, ...] = WORLD_WRITABLE) -> list[str]:
    """Remove what ``user`` created at the top of the world-writable ``folders`` (its
    processes must be gone); returns the paths that could not be removed."""
    left = []
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
                if info.st_uid != user.uid:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    _open_up(entry.path)
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
            except OSError:
                left.append(entry.path)
    return left


def _open_up(top: str) -> None:
    """Let root's rmtree descend folders the student closed (never following a link)."""
    for folder, subfolders, _files in os.walk(top):
        for name in subfolders:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                with contextlib.suppress(OSError):  # root without CAP_FOWNER
                    os.chmod(path, 0o700)


def readable_by(path: Path, user: StudentUser) -> bool:
    """Whether ``user`` may reach and read ``path`` by its mode bits (ACLs aside)."""
    path = Path(path).resolve()
    try:
        final = 0o5 if stat.S_ISDIR(path.stat().st_mode) else 0o4
    except OSError:
        return False
    return first_stop(path, user, final) is None


def first_stop(path: Path, user: StudentUser, final: int) -> Path | None:
    """The first folder on the way to ``path`` (or ``path`` itself, needing the mode bits
    ``final``) whose mode bits stop ``user``; None when it gets through (ACLs aside)."""
    path = Path(path).resolve()
    for step in [*reversed(path.parents), path]:
        try:
            info = step.stat()
        except OSError:
            return step
        shift = 6 if info.st_uid == user.uid else 3 if info.st_gid == user.gid else 0
        need = final if step == path else 0o1
        if (info.st_mode >> shift) & need != need:
            return step
    return None


def unreadable_python(user: StudentUser) -> list[str]:
    """The folders of this Python installation ``user`` cannot read (student code could
    then import only what the zygote imported already)."""
    paths = sysconfig.get_paths()
    folders = dict.fromkeys(paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib"))
    return [f for f in folders if Path(f).is_dir() and not readable_by(Path(f), user)]


def really_root() -> bool:
    """Whether this process is uid 0 of the machine's (or its container's) own ids, not
    of a user namespace that maps uid 0 to an ordinary user outside."""
    if os.geteuid() != 0:
        return False
    try:
        lines = Path("/proc/self/uid_map").read_text().split("\n")
    except OSError:
        return True
    return any(line.split()[:2] == ["0", "0"] for line in lines if line.strip())
