"""How long a student's ``autograder check`` takes on a shared hub: first and repeated checks.

The hub (made here, not timed): the wheel installed into a venv of the system Python
(readable by every user), an unprivileged student (``--uid``, default ``nobody``) with a
home of their own and no ``XDG_RUNTIME_DIR`` (as in a JupyterHub single-user server), and
no namespaces (``tests/nonamespaces.py``: Docker's default seccomp profile), or, with
``--namespaces``, a machine where the student may make user namespaces (a laptop or a
hub without the seccomp profile). Then, timed, wall clock of the whole command as the
student runs it:

1. ``autograder check`` with the daemon off (every check cold);
2. the first check with the daemon on (cold, then it starts the daemon);
3. ``--repeat`` checks from the terminal once the daemon serves;
4. the check cell as a student runs it, in one long-lived interpreter (the kernel): the
   daemon stopped, the first run (which starts it again), then ``--repeat`` runs.

Root only (it makes the hub's folders and drops to ``--uid``). Not a timed test: the
machine is shared, so the numbers move with its load (recorded before and after).
Usage::

    python benchmarks/selfcheck_hub.py [--uid 65534] [--repeat 3] [--namespaces]
        [--reserve-cpu 102400] [--results FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from reserve import release_cpu, reserve_cpu  # beside this script

from autograder.engine.host.manifest import load

ROOT = Path(__file__).resolve().parent.parent
A = "q1_value_scaling"
#: A kernel's session: the check cell run 1 + REPEAT times, each timed inside the kernel.
SESSION = f"""
import contextlib, io, json, sys, time
from autograder.integrations.selfcheck import daemon
from autograder.integrations.selfcheck.incell import check_here
daemon.stop()
times = []
for i in range(1 + int(sys.argv[1])):
    if i == 1:
        time.sleep(3)  # a student reads the first report before running the cell again
    out, started = io.StringIO(), time.monotonic()
    with contextlib.redirect_stdout(out):
        check_here({A!r})
    times.append(round(time.monotonic() - started, 2))
    if "总分：{{0}} / {{0}} 分".format(sys.argv[2]) not in out.getvalue():
        sys.exit(out.getvalue())
print(out.getvalue().strip())
print(json.dumps(times))
"""


def _hub(base: Path, uid: int) -> tuple[Path, Path]:
    """(the venv, the student's home with their notebook in it)."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(base / "dist"), str(ROOT)], check=True, capture_output=True)
    shutil.rmtree(ROOT / "build", ignore_errors=True)
    python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys._base_executable
    subprocess.run([python, "-m", "venv", str(base / "venv")], check=True)
    wheel = next((base / "dist").glob("*.whl"))
    subprocess.run([str(base / "venv/bin/pip"), "install", "-q", str(wheel)], check=True,
                   capture_output=True)
    home = base / "home"
    home.mkdir()
    shutil.copy(ROOT / "solutions" / A / f"{A}.ipynb", home / f"{A}.ipynb")
    for path in (home, home / f"{A}.ipynb"):
        os.chown(path, uid, uid)
    home.chmod(0o700)
    return base / "venv", home


def _as_student(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def _timed(command: list[str], uid: int, home: Path, **env: str) -> float:
    started = time.monotonic()
    if _NAMESPACES:
        wrapped, drop = command, (lambda: _as_student(uid))
    else:
        wrapped, drop = [sys.executable, str(ROOT / "tests" / "nonamespaces.py"), "--uid",
                         str(uid), *command], None
    done = subprocess.run(wrapped, cwd=home, capture_output=True, text=True, preexec_fn=drop,
                          env={"PATH": os.environ.get("PATH", ""), "HOME": str(home),
                               "LANG": "C.UTF-8", **env})
    seconds = time.monotonic() - started
    full = f"总分：{_TOTAL} / {_TOTAL} 分"
    if full not in done.stdout:
        sys.exit(f"the check did not report {full}:\n{done.stdout}\n{done.stderr}")
    _LAST[:] = done.stdout.strip().splitlines()[-1:]
    return round(seconds, 2)


_LAST: list[str] = []
_NAMESPACES = False  # set by --namespaces: the student runs without Docker's seccomp profile
_TOTAL = int(load("q1_value_scaling").auto_max)  # the last line of the last report: how the notebook ran


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uid", type=int, default=65534)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--reserve-cpu", type=int, default=0, metavar="SHARES",
                        help="run in a cpu cgroup of this weight (cgroup v1)")
    parser.add_argument("--namespaces", action="store_true",
                        help="the student may make user namespaces (no seccomp profile)")
    parser.add_argument("--results", type=Path, default=None,
                        help="default: benchmarks/selfcheck_hub.json, or selfcheck_laptop.json "
                             "with --namespaces")
    args = parser.parse_args()
    global _NAMESPACES
    _NAMESPACES = args.namespaces
    name = "selfcheck_laptop.json" if args.namespaces else "selfcheck_hub.json"
    args.results = args.results or ROOT / "benchmarks" / name
    if os.geteuid() != 0:
        sys.exit("run as root: it makes a student's home and drops to --uid")
    base = Path(tempfile.mkdtemp(prefix="ag-hub-bench-"))
    base.chmod(0o755)
    load_before = os.getloadavg()
    group = reserve_cpu(args.reserve_cpu) if args.reserve_cpu else None
    try:
        venv, home = _hub(base, args.uid)
        check = [str(venv / "bin/autograder"), "check", f"{A}.ipynb"]
        results = {"cold without daemon": _timed(check, args.uid, home, AUTOGRADER_CHECK_DAEMON="0"),
                   "first check (starts the daemon)": _timed(check, args.uid, home)}
        mode = _LAST[0]
        socket = home / ".cache" / "attention-autograder" / "check.sock"
        deadline = time.monotonic() + 60
        while not socket.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(3)  # the daemon warms up after it binds its socket
        results["repeated check, terminal"] = [_timed(check, args.uid, home)
                                               for _ in range(args.repeat)]
        cell = [str(venv / "bin/python"), "-c", SESSION, str(args.repeat), str(_TOTAL)]
        _timed(cell, args.uid, home)
        times = json.loads(_LAST[0])
        results["first check in a cell (starts the daemon)"] = times[0]
        results["repeated check, check cell"] = times[1:]
        _timed([str(venv / "bin/python"), "-c", "from autograder.integrations.selfcheck "
                f"import daemon; daemon.stop(); print('总分：{_TOTAL} / {_TOTAL} 分')"], args.uid, home)
    finally:
        release_cpu(group)
        shutil.rmtree(base, ignore_errors=True)
    record = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "python": subprocess.run([str(Path("/usr/bin/python3")), "--version"],
                                       capture_output=True, text=True).stdout.strip(),
              "load before": [round(x, 2) for x in load_before],
              "load after": [round(x, 2) for x in os.getloadavg()], "mode": mode,
              "cpu reserved": group is not None,
              "seconds": results}
    args.results.write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n",
                            encoding="utf-8")
    print(json.dumps(record, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
