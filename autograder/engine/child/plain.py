"""A plain child: the notebook's runtime in an ordinary process, where the sandbox is missing.

``python -m autograder.engine.child.plain`` (started by :mod:`autograder.engine.host.plainchild`
for a student's own ``autograder check`` on macOS, Windows or a Linux where the zygote
cannot run) reads one line from standard input (the host's loopback port, a one-time
token and the :class:`~autograder.engine.protocol.limits.SandboxLimits`), applies the
limits this system offers, connects back, and answers the host's requests exactly as a
sandboxed child does (:func:`.runtime.serve`). Nothing Linux-only is imported: on a
system without :mod:`resource` the host's wall-clock limit (it kills the process) is
the only one.

This is not a sandbox: the student's code runs as the student, on the student's own
machine and on public practice inputs. Grading never uses it.
"""

from __future__ import annotations

import json
import os
import socket
import sys

from ..protocol import wire
from ..protocol.limits import SandboxLimits

__all__ = ["main", "apply_limits"]


def _address_space() -> int | None:
    """Bytes this process maps now (Linux's ``/proc``), or ``None`` where not known."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) << 10
    except (OSError, ValueError):
        return None
    return None


def apply_limits(limits: SandboxLimits) -> list[str]:
    """CPU time, file size and (where the address space is known) memory, as far as this
    system offers them; the names of those applied."""
    try:
        import resource
    except ImportError:  # Windows: the host's wall-clock limit only
        return []
    wanted = [("RLIMIT_CPU", limits.cpu_seconds), ("RLIMIT_FSIZE", limits.file_bytes)]
    base = _address_space()
    if base is not None:  # macOS does not enforce RLIMIT_AS, and its base is unknown
        wanted.append(("RLIMIT_AS", base + limits.memory))
    applied = []
    for name, value in wanted:
        which = getattr(resource, name, None)
        if which is None:
            continue
        try:
            hard = resource.getrlimit(which)[1]
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, hard))
            applied.append(name)
        except (OSError, ValueError):
            continue
    return applied


def main() -> int:
    request = json.loads(sys.stdin.readline())
    sys.stdin.close()
    from .runtime import prepare, serve

    kernel = prepare(figures=bool(request.get("figures", False)), warm=False)
    apply_limits(SandboxLimits(**request.get("limits", {})))
    for name in [n for n in os.environ if n.startswith("AUTOGRADER")]:
        del os.environ[name]
    sock = socket.create_connection(("127.0.0.1", int(request["port"])), timeout=30)
    sock.settimeout(None)
    wire.send(sock, {"token": str(request["token"]), "init": os.getpid()})
    serve(sock, kernel)
    return 0


if __name__ == "__main__":  # pragma: no cover - started by the host
    sys.exit(main())
