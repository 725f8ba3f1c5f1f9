"""How well student code is walled off on this machine: decided once, before any child runs.

Every entry point asks :func:`decide` once and reads the one :class:`Verdict` it returns
(``autograder grade``, the Gradescope runner, ``autograder doctor``); the pool then starts
its zygote for that level and refuses to grade if the zygote achieves another. Levels:

- ``namespaces``: the zygote's view (:func:`..child.sandbox.enter_view`) can be entered
  here; probed in a fork, which then exits, so the grader itself stays where it is.
- ``separate-user``: no namespaces (or mounts refused inside them), but the grader is
  root: each child runs as an unprivileged uid of its own. It holds only where that uid
  can read the Python installation (else every import fails) and cannot reach the
  grader's package (checks and reference: every copy on ``sys.path``) nor the folders
  the caller names as ``private`` (the course, earlier results, the submissions).
- ``none``: the child runs as the grader's own user and reads what it reads.

A root grader never falls to ``none``: where the separate user cannot work, the verdict
is ``blocked`` and names the one path to fix. ``none`` is refused unless the instructor
accepts it (``--unprotected``, ``c.Autograder.allow_unprotected``).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ...errors import Unprotected
from ...settings import PACKAGE_DIR, STUDENT_UID
from ..child import sandbox, studentuser
from ..protocol.limits import Protection

__all__ = ["Verdict", "decide", "UNPROTECTED"]

#: Seconds the namespace probe may take (entering the view takes milliseconds).
PROBE_SECONDS = 30.0
#: How every output marks a run graded at level ``none``.
UNPROTECTED = "none (unprotected)"
WAYS_OUT = ("grade as root or where user namespaces are allowed (see docs/security.md), or "
            "accept it with --unprotected (c.Autograder.allow_unprotected = True); "
            "`autograder doctor` shows what this machine allows")


@dataclass(frozen=True)
class Verdict:
    """``level``: what children get here; ``why``: how that was found, in words;
    ``blocked``: a root grader whose children cannot run as a separate user, and the
    path to fix (such a machine never grades, whatever the settings)."""

    level: Protection
    why: str
    blocked: str = ""

    @property
    def marker(self) -> str:
        """The level as outputs print it (``none`` is marked unprotected)."""
        return UNPROTECTED if self.level == Protection.NONE else str(self.level)

    def line(self) -> str:
        """One console line."""
        if self.blocked:
            return f"protection: refused as root ({self.blocked})"
        return f"protection: {self.marker} ({self.why})"

    def refusal(self, allow_unprotected: bool) -> str:
        """Why grading must not start here (empty: it may)."""
        if self.blocked:
            return (f"student code never runs as root, and as root without namespaces each "
                    f"child needs a separate user, but {self.blocked}")
        if self.level == Protection.NONE and not allow_unprotected:
            return (f"protection here is none ({self.why}), so student code would run as "
                    "your own user and could read the course, its salt and every other "
                    f"student's work: {WAYS_OUT}")
        return ""

    def require(self, allow_unprotected: bool) -> None:
        """Raise :class:`Unprotected` (one line, exit code 2) where grading must not start."""
        refusal = self.refusal(allow_unprotected)
        if refusal:
            raise Unprotected(refusal)


def decide(*, isolate: bool = True, private: Iterable[Path] = (), secrets: bool = True) -> Verdict:
    """What grading would get here; ``isolate=False`` skips namespaces (a grader that
    is itself one container per submission); ``private``: folders students must not
    reach under a separate user; ``secrets=False``: the run holds none (a student's
    self-check: public checks, practice salt), so the package may stay readable."""
    refused = _namespaces() if isolate else "namespaces turned off"
    if not refused:
        return Verdict(Protection.NAMESPACES, "Linux namespaces: the child sees only the "
                       "system and Python, read-only, with no network")
    if os.geteuid() != 0:
        return Verdict(Protection.NONE, f"{refused}, and the grader does not run as root, "
                       "so no separate user either")
    users, why_not = studentuser.Users.find()
    if users is None:
        return Verdict(Protection.NONE, refused, blocked=f"{why_not}: grade where user "
                       "namespaces are allowed, or as a root holding CAP_SETUID, CAP_SETGID "
                       f"and CAP_CHOWN with uids from {STUDENT_UID} on free")
    blocked = _separate_user_blocked(users.candidates[0], private, secrets)
    return Verdict(Protection.SEPARATE_USER, f"{refused}; each child runs as a separate "
                   f"user ({users.describe()}) that cannot read the grader's package or the "
                   "course", blocked=blocked)


def _namespaces() -> str:
    """Empty where the zygote's view can be entered here, else why not."""
    root = Path(tempfile.mkdtemp(prefix="autograder-probe-"))
    r, w = os.pipe()
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the fork reports through the pipe
            code = 1
            try:
                os.close(r)
                view = sandbox.enter_view(root, [])
                os.write(w, b"ok" if view.isolated else view.missing.encode()[:2000])
                code = 0
            except BaseException as err:  # noqa: BLE001 - whatever it is, it is the answer
                os.write(w, f"the sandbox failed ({type(err).__name__}: {err})".encode()[:2000])
            finally:
                os._exit(code)
        os.close(w)
        # read once the fork is gone, not until EOF: a helper it forked may hold the pipe
        if not _exited(pid, PROBE_SECONDS):
            os.close(r)
            return f"the namespace probe did not finish within {PROBE_SECONDS:g} s"
        os.set_blocking(r, False)
        with os.fdopen(r, "rb") as fh:
            said = (fh.read() or b"").decode("utf-8", "replace")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if said == "ok":
        return ""
    said = said.removeprefix(sandbox.MISSING_WITHOUT_NAMESPACES).strip(" ()")
    return said or "the namespace probe died"


def _exited(pid: int, seconds: float) -> bool:
    """Wait up to ``seconds`` for ``pid`` to exit (killed and reaped past that)."""
    deadline = time.monotonic() + seconds
    while os.waitpid(pid, os.WNOHANG)[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return False
        time.sleep(0.002)
    return True


def _separate_user_blocked(user: studentuser.StudentUser, private: Iterable[Path],
                           secrets: bool = True) -> str:
    """Empty when ``user`` can read the Python installation and reach none of the
    grader's copies and ``private`` folders; else what is wrong and the one fix."""
    for folder in studentuser.unreadable_python(user):
        stop = studentuser.first_stop(Path(folder), user, 0o5) or Path(folder)
        return (f"uid {user.uid} cannot read the Python installation {folder} (stopped at "
                f"{stop}{_mode(stop)}): install the "
                "grader's Python where every user may read it (e.g. a venv under /opt), or "
                f"`chmod o+x {stop}`")
    reachable = [p for p in [*(grader_copies() if secrets else []), *map(_existing, private)]
                 if studentuser.first_stop(p, user, 0o1 if p.is_dir() else 0o4) is None]
    top = sorted({p for p in reachable if not any(q in p.parents for q in reachable)})
    if top:
        paths = " ".join(map(str, top))
        return (f"uid {user.uid} could read {paths} (the checks and reference, the course, "
                f"its results): close them with `chmod o-rwx {paths}` (the Gradescope "
                "bundle's setup.sh closes its copy so)")
    return ""


def _mode(path: Path) -> str:
    """``, mode 0700``; empty where even root cannot stat it (it went away meanwhile)."""
    try:
        return f", mode {stat.S_IMODE(path.stat().st_mode):04o}"
    except OSError:
        return ""


def grader_copies() -> list[Path]:
    """Every folder a child could import the grader's package from: this one, any copy
    on ``sys.path``, and where an editable install's finder (importable too) points."""
    found = [PACKAGE_DIR]
    for entry in sys.path:
        folder = Path(entry or ".")
        if (folder / "autograder" / "bank").is_dir():
            found.append((folder / "autograder").resolve())
        for finder in folder.glob("__editable__*finder.py") if folder.is_dir() else ():
            text = finder.read_text(encoding="utf-8", errors="replace")
            found += [Path(p) for p in re.findall(r"""['"]autograder['"]: ['"]([^'"]+)""", text)]
    return list(dict.fromkeys(found))


def _existing(path: Path) -> Path:
    """``path``, or the folder it will be created in (with the usual open mode)."""
    path = Path(path).resolve()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
