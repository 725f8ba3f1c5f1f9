"""Run a command as inside a Docker container with Docker's default seccomp profile.

``python tests/nonamespaces.py [--partial] [--uid UID] COMMAND [ARG...]`` refuses
``unshare``, ``mount``, ``umount2``, ``pivot_root`` and ``setns`` with ``EPERM`` and
``clone3`` with ``ENOSYS`` (what Docker's profile answers), for this process and
everything it starts, then, with ``--uid``, drops to that uid and gid (an unprivileged
grader), and execs ``COMMAND``. ``--partial`` refuses only ``mount``, ``umount2`` and
``pivot_root`` (an AppArmor-style profile: user namespaces allowed, mounts not). Run with the interpreter and ``PYTHONPATH`` of the bundle under test: the
filter is :func:`autograder.engine.child.seccomp.deny`.
"""

from __future__ import annotations

import errno
import os
import sys

from autograder.engine.child import seccomp

#: What Docker's default profile answers for the calls the sandbox's namespaces need.
REFUSED = {"unshare": errno.EPERM, "mount": errno.EPERM, "umount2": errno.EPERM,
           "pivot_root": errno.EPERM, "setns": errno.EPERM, "clone3": errno.ENOSYS}
#: A partial sandbox: namespaces may be made, nothing mounted in them.
PARTIAL = {"mount": errno.EPERM, "umount2": errno.EPERM, "pivot_root": errno.EPERM}


def main(argv: list[str]) -> int:
    uid, refused = None, REFUSED
    if argv[:1] == ["--partial"]:
        refused, argv = PARTIAL, argv[1:]
    if argv[:1] == ["--uid"]:
        uid, argv = int(argv[1]), argv[2:]
    if not argv:
        print("usage: nonamespaces.py [--partial] [--uid UID] COMMAND [ARG...]", file=sys.stderr)
        return 2
    seccomp.deny(refused)
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    os.execvp(argv[0], argv)
    return 127  # pragma: no cover - execvp does not return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
