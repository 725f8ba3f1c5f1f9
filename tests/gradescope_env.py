"""A Gradescope-like machine for tests that run student code as another user.

The separate user of :mod:`autograder.engine.child.studentuser` reads only what every user
may read, so these tests need what a real image has and a developer's checkout may
lack: a folder every user may enter (pytest's own is closed to all but its owner), a
Python installation every user may read (``readable_python``: a small virtual
environment on a system interpreter of the same version, seeing this environment's
packages but not its editable install of this package, nor that install's finder), and the bundle installed and
closed as setup.sh does (``install``: the wheel unpacked, then
``gradescope_run --prepare``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from autograder.engine.child.studentuser import StudentUser, readable_by
from autograder.settings import STUDENT_UID

HERE = Path(__file__).resolve().parent
LAUNCHER = HERE / "nonamespaces.py"
STUDENT = StudentUser(STUDENT_UID, STUDENT_UID)
NOBODY = 65534


@contextlib.contextmanager
def exclusive(factory: pytest.TempPathFactory) -> Iterator[None]:
    """One module at a time runs children as student users (pytest-xdist runs modules side
    by side): a module's checks for leftovers of its uids then see only its own. The lock
    lives in pytest's own folder for this user, above every worker's (never in /tmp,
    where a student could have put a link in its place)."""
    base = factory.getbasetemp()
    folder = next((p for p in base.parents if p.name.startswith("pytest-of-")), base.parent)
    fd = os.open(folder / "student-users.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("a separate user needs a grader running as root (as Gradescope runs it)")


def open_base(prefix: str) -> Path:
    """A new folder under /tmp that every user may enter (remove it with shutil.rmtree)."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    base.chmod(0o755)
    if not readable_by(base, STUDENT):
        shutil.rmtree(base)
        pytest.skip(f"{tempfile.gettempdir()} is closed to other users")
    return base


@contextlib.contextmanager
def student_base(factory: pytest.TempPathFactory, prefix: str) -> Iterator[Path]:
    """A module's folder every user may enter (:func:`open_base`), for a root grader only,
    held under the :func:`exclusive` lock and removed at the end."""
    require_root()
    with exclusive(factory):
        base = open_base(prefix)
        try:
            yield base
        finally:
            shutil.rmtree(base, ignore_errors=True)


def _interpreters() -> list[Path]:
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return [Path(sys._base_executable), Path("/usr/bin") / minor, Path("/usr/local/bin") / minor]


def readable_python(base: Path) -> Path:
    """A Python every user may read, with this environment's packages (``base/py``)."""
    packages = [Path(p) for p in dict.fromkeys(sysconfig.get_paths()[k]
                                              for k in ("purelib", "platlib"))]
    for folder in packages:
        if (folder / "autograder").is_dir():
            pytest.fail(f"{folder} holds a copy of autograder that student code could import: "
                        "install the package editable (pip install -e .) to run these tests")
        if not readable_by(folder, STUDENT):
            pytest.skip(f"{folder} is closed to other users")
    for interpreter in _interpreters():
        if interpreter.is_file() and readable_by(interpreter.resolve(), STUDENT):
            venv = base / "py"
            done = subprocess.run([str(interpreter), "-m", "venv", "--without-pip", str(venv)],
                                  capture_output=True, text=True)
            python = venv / "bin" / "python"
            if done.returncode != 0 or not python.exists():
                continue
            site = subprocess.run([str(python), "-c", "import sysconfig; print("
                                   "sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True).stdout.strip()
            (Path(site) / "outer.pth").write_text(f"{_without_editable(packages, base)}\n")
            probe = subprocess.run([str(python), "-c", "import numpy, sympy, IPython, sysconfig;"
                                    "print(sysconfig.get_paths()['stdlib'])"],
                                   capture_output=True, text=True)
            if probe.returncode == 0 and readable_by(Path(probe.stdout.strip()), STUDENT):
                return python
    pytest.skip("no Python installation here that every user may read")


def _without_editable(packages: list[Path], base: Path) -> Path:
    """This environment's packages as links in ``base/packages``, without an editable
    install's finder: importable from ``sys.path``, it would lead a child to this
    checkout (open to every user), which no deployed image holds."""
    shadow = base / "packages"
    shadow.mkdir(mode=0o755, exist_ok=True)
    for folder in packages:
        for entry in folder.iterdir():
            if not entry.name.startswith("__editable__") and not (shadow / entry.name).exists():
                (shadow / entry.name).symlink_to(entry)
    return shadow


def install(bundle: Path, base: Path, python: Path, *, close: bool = True) -> tuple[Path, Path]:
    """Unpack the bundle (``base/bundle``) and its wheel (``base/site``), then (``close``)
    close them as setup.sh does. Returns (source folder, site folder)."""
    base.mkdir(mode=0o755, exist_ok=True)
    source, site = base / "bundle", base / "site"
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(source)
    for script in ("setup.sh", "run_autograder"):  # extractall drops the modes
        (source / script).chmod(0o755)
    with zipfile.ZipFile(next((source / "wheels").glob("*.whl"))) as zf:
        zf.extractall(site)
    for folder in [site, *site.rglob("*")]:  # as pip installs: readable by every user
        folder.chmod(0o755 if folder.is_dir() else 0o644)
    if close:
        done = subprocess.run([str(python), "-m", "autograder.integrations.gradescope.run", "--prepare",
                               str(source)], env={**os.environ, "PYTHONPATH": str(site)},
                              capture_output=True, text=True, cwd=base)
        assert done.returncode == 0, done.stderr
    return source, site


def make_root(base: Path, source: Path, name: str, files: dict[str, bytes],
              extra_source: dict[str, bytes] | None = None) -> Path:
    """``base/name`` laid out as Gradescope's ``/autograder`` (run_autograder copied to the
    top, as Gradescope does); ``extra_source`` adds files to ``source/``. Every folder is
    left open to every user (the root even writable), as if Gradescope's copy had lost
    the modes setup.sh gave them: the grader must close them itself."""
    root = base / name
    root.mkdir()
    root.chmod(0o777)
    shutil.copytree(source, root / "source")
    for filename, data in (extra_source or {}).items():
        (root / "source" / filename).write_bytes(data)
    for path in [root / "source", *(root / "source").rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    shutil.copy2(source / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    for filename, data in files.items():
        (root / "submission" / filename).write_bytes(data)
    return root


def launch(root: Path, site: Path, python: Path, *, uid: int | None = None) -> subprocess.Popen:
    """``run_autograder`` under the launcher that refuses namespaces (as ``uid``, if given),
    in a session of its own, its output in ``<root>.log``; see :func:`finish`."""
    env = {**os.environ, "GRADESCOPE_ROOT": str(root), "AUTOGRADER_PYTHON": str(python),
           "PYTHONPATH": str(site)}
    command = [str(python), str(LAUNCHER), *(["--uid", str(uid)] if uid is not None else []),
               "bash", str(root / "run_autograder")]
    with open(f"{root}.log", "w") as log:
        return subprocess.Popen(command, cwd=root, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)


def _session(sid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":  # session id, state
                found.append(int(entry.name))
    return found


def finish(proc: subprocess.Popen, root: Path, timeout: float = 240) -> tuple[str, list[int]]:
    """Wait for ``run_autograder`` (killing its session past ``timeout``); returns its
    output and the grader processes still alive once it ended (then killed)."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    left = _session(proc.pid)
    if left:  # the group still has members, so its id is still this run's
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
    return Path(f"{root}.log").read_text(), left
