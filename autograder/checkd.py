"""A warm ``autograder check``: one background process per user keeps the checks and a
zygote loaded, so a student's second and later checks skip every start-up cost.

The first ``autograder check`` runs cold and then starts ``python -m autograder.checkd``
in the background; later checks send it the notebook's path over a Unix socket in a
folder only the user can open, and print what it answers. It grades exactly as the cold
path does (the same pipeline, a fresh sandboxed child per notebook), restarts itself
when the installed package changes, and exits after :data:`IDLE_SECONDS` unused.
Set ``AUTOGRADER_CHECK_DAEMON=0`` to always run cold.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

__all__ = ["ask", "start", "serve", "package_key", "socket_path", "IDLE_SECONDS"]

IDLE_SECONDS = 900
log = logging.getLogger("autograder.checkd")


def enabled() -> bool:
    return os.environ.get("AUTOGRADER_CHECK_DAEMON", "1") != "0" and hasattr(socket, "AF_UNIX")


def _folder() -> Path:
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir())
    folder = base / f"attention-autograder-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.stat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise PermissionError(f"{folder} is not private to this user")
    return folder


def socket_path() -> Path:
    return _folder() / "check.sock"


def package_key() -> str:
    """Changes whenever the installed package (code or manifests) changes."""
    import autograder

    root = Path(autograder.__file__).parent
    digest = hashlib.sha256(autograder.__version__.encode())
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
    from .selfcheck import Outcome

    answer = _exchange({"key": package_key(), "notebook": str(Path(notebook).resolve()),
                        "assignment": assignment, "timeout": timeout}, timeout=3600)
    if not answer or "outcomes" not in answer:
        if answer and answer.get("error"):
            from .course import CourseError

            raise CourseError(answer["error"])
        return None
    return [Outcome(**o) for o in answer["outcomes"]]


def start() -> None:
    """Start the daemon in the background (its own session; its log beside its socket)."""
    try:
        folder = _folder()
    except OSError:
        return
    with open(folder / "checkd.log", "ab") as logfile:
        subprocess.Popen([sys.executable, "-m", "autograder.checkd", package_key()],
                         stdin=subprocess.DEVNULL, stdout=logfile, stderr=logfile,
                         start_new_session=True, cwd=tempfile.gettempdir())


def _answer(request: dict, key: str, zygote) -> dict:
    from .course import CourseError
    from .selfcheck import run_check_notebook

    if request.get("key") != key:
        return {"stale": True}
    try:
        outcomes = run_check_notebook(notebook=Path(request["notebook"]),
                                      assignment=request.get("assignment"),
                                      timeout=request.get("timeout"), zygote=zygote)
    except CourseError as err:
        return {"error": str(err)}
    return {"outcomes": [asdict(o) for o in outcomes]}


def serve(key: str) -> int:
    """The daemon: bind the socket, warm up, answer until idle or outdated."""
    sys.modules.setdefault("rfc3987_syntax", None)  # see autograder/cli.py
    from .bank import checks_for
    from .course import ASSIGNMENTS
    from .engine.proxy import Zygote

    path = socket_path()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        path.unlink(missing_ok=True)
        server.bind(str(path))
    except OSError:
        return 1
    server.listen()
    zygote = Zygote(figures=False, warm=True, tokenizer=True)
    for a in ASSIGNMENTS:
        checks_for(a)
    server.settimeout(IDLE_SECONDS)
    try:
        while True:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                return 0
            with conn:
                request = json.loads(conn.makefile("rb").readline() or b"{}")
                answer = _answer(request, key, zygote)
                conn.sendall(json.dumps(answer, ensure_ascii=False).encode() + b"\n")
            if answer.get("stale"):
                return 0
    finally:
        zygote.close()
        path.unlink(missing_ok=True)


if __name__ == "__main__":  # pragma: no cover - started by `autograder check`
    sys.exit(serve(sys.argv[1]))
