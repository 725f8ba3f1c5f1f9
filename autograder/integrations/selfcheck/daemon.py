"""A warm ``autograder check``: one background process per user keeps the checks and a
zygote loaded, so a student's second and later checks skip every start-up cost.

The first ``autograder check`` runs cold and then starts ``python -m autograder.integrations.selfcheck.daemon``
in the background; later checks send it the notebook's path over a Unix socket in a
folder only the user can open, and print what it answers. It grades exactly as the cold
path does (the same pipeline, a fresh sandboxed child per notebook), restarts itself
when the installed package changes, and exits after :data:`IDLE_SECONDS` unused.
Set ``AUTOGRADER_CHECK_DAEMON=0`` to always run cold. Only where the sandbox's zygote runs
(Linux); elsewhere every check runs cold in a plain child.

Its folder is ``$XDG_RUNTIME_DIR/attention-autograder-<uid>`` or, without a runtime folder,
``~/.cache/attention-autograder`` (never a name in a shared ``/tmp`` that another user
could create first), and it runs with a safe import path in that folder: no module another
user can write (the shared temporary folder, a notebook's folder) is ever imported.

One daemon per user at a time: a daemon serves only while it holds ``checkd.lock`` in
that folder. Two checks started together may both start one; the second finds the lock
held and leaves as soon as the first answers for the same package (a first that answers
"stale" is on its way out, so the second waits for the lock instead).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

from ...errors import CourseError

__all__ = ["ask", "start", "stop", "ping", "serve", "package_key", "socket_path", "IDLE_SECONDS"]

IDLE_SECONDS = 900
#: Seconds a starting daemon waits for the lock while another holds it and does not
#: answer for this package (it is still warming up, or closing after answering "stale").
LOCK_WAIT = 15.0
log = logging.getLogger("autograder.integrations.selfcheck.daemon")


#: Longest socket path every Unix accepts (Linux 108 bytes, macOS 104, with the NUL).
MAX_SOCKET_PATH = 100


def enabled() -> bool:
    """Whether checks use the daemon: not turned off, and the sandbox's zygote runs here."""
    from ...engine.host.plainchild import zygote_missing

    return os.environ.get("AUTOGRADER_CHECK_DAEMON", "1") != "0" and not zygote_missing()


def _folder() -> Path:
    """The daemon's private folder: in the login's runtime folder, else in the home."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        folder = Path(runtime) / f"attention-autograder-{os.getuid()}"
    else:
        folder = Path.home() / ".cache" / "attention-autograder"
        folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if not folder.is_dir() or folder.is_symlink() or info.st_uid != os.getuid() \
            or info.st_mode & 0o077:
        raise PermissionError(f"{folder} is not private to this user")
    if len(str(folder / "check.sock")) > MAX_SOCKET_PATH:
        raise OSError(f"{folder} is too long a path for a socket")
    return folder


def socket_path() -> Path:
    return _folder() / "check.sock"


def package_key() -> str:
    """Changes whenever the installed package (code or manifests) changes."""
    from ... import __version__
    from ...settings import PACKAGE_DIR as root

    digest = hashlib.sha256(__version__.encode())
    for path in sorted([*root.rglob("*.py"), *root.glob("manifests/*.json")]):
        stat = path.stat()
        digest.update(f"{path.relative_to(root)}:{stat.st_mtime_ns}:{stat.st_size}".encode())
    return digest.hexdigest()[:16]


def _exchange(request: dict, timeout: float) -> dict | None:
    """One request to the daemon; ``None`` when no daemon answers."""
    try:
        path = socket_path()
    except OSError:
        return None
    if not path.exists():
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        try:
            sock.connect(str(path))
            sock.settimeout(timeout)
            sock.sendall(json.dumps(request).encode() + b"\n")
            data = sock.makefile("rb").readline()
        except OSError:
            return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def ask(notebook: Path, assignment: str | None, timeout: float) -> list | None:
    """The outcomes from a warm daemon, or ``None`` (no daemon, or an outdated one)."""
    from .check import Checked, Outcome

    answer = _exchange({"key": package_key(), "notebook": str(Path(notebook).resolve()),
                        "assignment": assignment, "timeout": timeout}, timeout=3600)
    if not answer or "outcomes" not in answer:
        if answer and answer.get("error"):
            raise CourseError(answer["error"])
        return None
    return Checked([Outcome(**o) for o in answer["outcomes"]], str(answer.get("mode", "")))


def ping(key: str | None = None, timeout: float = 2.0) -> int | None:
    """The PID of the daemon serving package ``key`` (this one by default), or ``None``."""
    answer = _exchange({"key": key or package_key(), "ping": True}, timeout=timeout)
    return answer.get("pid") if answer and answer.get("pong") else None


def stop() -> bool:
    """Ask the daemon (of any package version) to exit; whether one answered."""
    return bool(_exchange({"stop": True}, timeout=5.0))


def start() -> None:
    """Start the daemon in the background (its own session; its log beside its socket;
    its private folder as working folder and a safe import path: ``-m`` would put the
    working folder first on ``sys.path``)."""
    from ...engine.host.pythonpath import safe_env, safe_python

    try:
        folder = _folder()
    except OSError:
        return
    env = safe_env()
    with open(folder / "checkd.log", "ab") as logfile:
        subprocess.Popen([*safe_python(), "-m", "autograder.integrations.selfcheck.daemon",
                          package_key()],
                         stdin=subprocess.DEVNULL, stdout=logfile, stderr=logfile,
                         start_new_session=True, cwd=folder, env=env)


def _answer(request: dict, key: str, zygote) -> dict:
    from .check import run_check_notebook

    if request.get("stop"):
        return {"stopping": True}
    if request.get("key") != key:
        return {"stale": True}
    if request.get("ping"):
        return {"pong": True, "pid": os.getpid()}
    if not isinstance(request.get("notebook"), str):
        return {"error": "the request names no notebook"}
    try:
        outcomes = run_check_notebook(notebook=Path(request["notebook"]),
                                      assignment=request.get("assignment"),
                                      timeout=request.get("timeout"), zygote=zygote)
    except CourseError as err:
        return {"error": str(err)}
    return {"outcomes": [asdict(o) for o in outcomes], "mode": getattr(outcomes, "mode", "")}


def _request(conn: socket.socket) -> dict:
    try:
        request = json.loads(conn.makefile("rb").readline() or b"{}")
    except (ValueError, OSError):  # garbage, or a client that hung up
        return {}
    return request if isinstance(request, dict) else {}


def _lock(key: str) -> int | None:
    """Hold the daemon lock (a descriptor, kept open for the daemon's life), or ``None``
    when a daemon for this package already serves."""
    import fcntl  # Unix only: the daemon runs only where the zygote does

    fd = os.open(_folder() / "checkd.lock", os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            pass
        holder = ping(key)
        if holder or time.monotonic() > deadline:
            log.info("another daemon holds the lock (%s): leaving",
                     f"PID {holder}" if holder else "no answer")
            os.close(fd)
            return None
        time.sleep(0.1)


def serve(key: str) -> int:
    """The daemon: take the lock, bind the socket, warm up, answer until idle, outdated
    or asked to stop."""
    sys.modules.setdefault("rfc3987_syntax", None)  # see autograder/cli.py
    logging.basicConfig(level=logging.INFO, format="%(asctime)s checkd[%(process)d] %(message)s")
    try:
        lock = _lock(key)
    except OSError as err:
        log.error("cannot take the daemon lock: %s", err)
        return 1
    if lock is None:
        return 0
    # a plain ``kill`` (logout, a session manager) ends it as an idle timeout would:
    # socket, zygote and the zygote's folder removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        return _serve_locked(key)
    finally:
        os.close(lock)  # after the socket is gone: the next daemon binds a fresh one


def _serve_locked(key: str) -> int:
    from ...bank import checks_for
    from ...settings import ASSIGNMENTS
    from .check import check_zygote

    path = socket_path()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        path.unlink(missing_ok=True)  # a crashed daemon's; no live one holds the lock
        server.bind(str(path))
    except OSError as err:
        log.error("cannot bind %s: %s", path, err)
        return 1
    server.listen()
    log.info("serving %s for package %s", path, key)
    zygote = check_zygote(warm=True, tokenizer=True)
    try:
        for a in ASSIGNMENTS:
            checks_for(a)
        server.settimeout(IDLE_SECONDS)
        while True:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                return 0
            with conn:
                answer = _answer(_request(conn), key, zygote)
                try:
                    conn.sendall(json.dumps(answer, ensure_ascii=False).encode() + b"\n")
                except OSError as err:  # the client gave up waiting: serve the next one
                    log.warning("client left before its answer: %s", err)
            if answer.get("stale") or answer.get("stopping"):
                log.info("exiting: %s", "outdated package" if answer.get("stale") else "asked to stop")
                return 0
    finally:
        path.unlink(missing_ok=True)
        server.close()
        zygote.close()


if __name__ == "__main__":  # pragma: no cover - started by `autograder check`
    sys.exit(serve(sys.argv[1]))
