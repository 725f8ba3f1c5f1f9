"""An interpreter without what only Linux has: loaded as ``sitecustomize`` (this folder on
``PYTHONPATH``), it removes ``fcntl``, ``resource``, ``os.fork``, ``os.unshare``,
``socket.AF_UNIX`` (and the descriptor passing over it) and ``/proc``, as on macOS or
Windows, and what Windows also lacks of what the check's own code uses: ``O_NOFOLLOW``,
``O_NONBLOCK``, the interval timer and ``SIGALRM``, ``killpg``, ``getuid``. The check
must still run, the same report, through a plain child.
"""

import builtins
import io
import os
import signal
import socket
import sys

for _module in ("fcntl", "resource"):
    sys.modules[_module] = None  # `import fcntl` raises ImportError
for _owner, _names in ((os, ("fork", "forkpty", "unshare", "setns", "register_at_fork",
                             "O_NOFOLLOW", "O_NONBLOCK", "killpg", "getuid")),
                       (socket, ("AF_UNIX", "SOCK_SEQPACKET", "send_fds", "recv_fds")),
                       (signal, ("setitimer", "getitimer", "SIGALRM", "ITIMER_REAL"))):
    for _name in _names:
        if hasattr(_owner, _name):
            delattr(_owner, _name)


class _NoProc:
    """``function`` refusing paths under ``/proc`` (an object, not a function: Python
    3.10's pathlib keeps ``os.stat`` as a class attribute, where a function would bind)."""

    def __init__(self, function):
        self.function = function

    def __call__(self, path, *args, **kwargs):
        text = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else ""
        if text == "/proc" or text.startswith("/proc/"):
            raise FileNotFoundError(2, "No such file or directory (no /proc here)", text)
        return self.function(path, *args, **kwargs)


builtins.open = io.open = _NoProc(io.open)
for _name in ("open", "listdir", "scandir", "stat", "lstat", "readlink"):
    setattr(os, _name, _NoProc(getattr(os, _name)))
