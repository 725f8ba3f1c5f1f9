"""A seccomp filter that refuses named system calls with an error number.

Used in the child (before the student's code runs) to refuse what the other limits do
not count, and by tests that play a container refusing namespaces, as Docker's default
profile does. The filter is a classic-BPF program, installed with
``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)`` after ``no_new_privs``; it is inherited by
every process the caller starts and cannot be removed.

Only x86_64 and aarch64 are known; elsewhere :func:`deny` raises :class:`OSError`, and the
caller decides whether that is fatal.
"""

from __future__ import annotations

import ctypes
import errno as errnos
import platform

__all__ = ["SYSCALLS", "deny", "supported"]

#: System call numbers per machine (``uname -m``) for the calls this package refuses.
SYSCALLS: dict[str, dict[str, int]] = {
    "x86_64": {"memfd_create": 319, "memfd_secret": 447, "shmget": 29, "shmat": 30,
               "unshare": 272, "mount": 165, "pivot_root": 155, "setns": 308,
               "umount2": 166, "clone3": 435},
    "aarch64": {"memfd_create": 279, "memfd_secret": 447, "shmget": 194, "shmat": 196,
                "unshare": 97, "mount": 40, "pivot_root": 41, "setns": 268,
                "umount2": 39, "clone3": 435},
}
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
#: x86_64's x32 ABI numbers carry this bit; refused wholesale (nothing here uses them).
_X32_BIT = 0x40000000

_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_RET_ALLOW, _RET_ERRNO, _RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
_NR_OFFSET, _ARCH_OFFSET = 0, 4


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def supported() -> bool:
    """Whether this machine's system call numbers are known here."""
    return platform.machine() in SYSCALLS


def _program(machine: str, refused: dict[str, int]) -> list[tuple[int, int, int, int]]:
    """(code, jt, jf, k) instructions: a foreign architecture is killed, x32 calls and
    each refused call answer their error number, everything else is allowed."""
    numbers = SYSCALLS[machine]
    unknown = sorted(set(refused) - set(numbers))
    if unknown:
        raise OSError(f"unknown system call(s) on {machine}: {', '.join(unknown)}")
    prog = [(_LD_W_ABS, 0, 0, _ARCH_OFFSET),
            (_JEQ_K, 1, 0, _AUDIT_ARCH[machine]),
            (_RET_K, 0, 0, _RET_KILL_PROCESS),
            (_LD_W_ABS, 0, 0, _NR_OFFSET)]
    if machine == "x86_64":
        prog += [(_JGE_K, 0, 1, _X32_BIT), (_RET_K, 0, 0, _RET_ERRNO | errnos.ENOSYS)]
    for name, error in sorted(refused.items()):
        prog += [(_JEQ_K, 0, 1, numbers[name]), (_RET_K, 0, 0, _RET_ERRNO | (error & 0xFFFF))]
    prog.append((_RET_K, 0, 0, _RET_ALLOW))
    return prog


def deny(refused: dict[str, int]) -> None:
    """Make each system call named in ``refused`` fail with its error number, for this
    process and everything it starts, for good. Sets ``no_new_privs`` (required without
    ``CAP_SYS_ADMIN``). Raises :class:`OSError` if the kernel refuses the filter."""
    machine = platform.machine()
    if machine not in SYSCALLS:
        raise OSError(f"seccomp: system call numbers of {machine} are unknown")
    prog = _program(machine, refused)
    filters = (_Filter * len(prog))(*(_Filter(*ins) for ins in prog))
    program = _Program(len(prog), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    for args in ((_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0),
                 (_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(program), 0, 0)):
        if libc.prctl(*(ctypes.c_ulong(a) for a in args)) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"seccomp: prctl{args[:2]}: {errnos.errorcode.get(err, err)}")

