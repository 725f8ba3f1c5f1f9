"""``autograder gradescope ASSIGNMENT``: a Gradescope autograder bundle (a zip).

Laid out as Gradescope's autograder specification asks
(https://gradescope-autograders.readthedocs.io/en/latest/specs/), at the zip's root:

- ``setup.sh``: run once as root when Gradescope builds the image. It installs uv (pinned),
  the Python version the pins were taken from, the pinned requirements
  (``requirements.txt``) and this package from the wheel in ``wheels/``, creates the
  unprivileged ``autograder-student`` (student code runs as it where namespaces are
  refused) and closes the package and this folder to every other user;
- ``run_autograder``: run for every submission; it starts
  ``python -m autograder.integrations.gradescope.run`` (see that module) on a private output path and
  installs that results.json only if it matches the digest the grader reports on
  descriptor 3 and nothing else appeared in ``results/``; otherwise (the grader died,
  was killed, or anything else wrote there) a results.json scoring 0 that says why;
- ``config.json``: the assignment and the limits; ``salt``: a secret salt made for this
  bundle (or the course's, with ``salt_file``), so the hidden inputs stay unknown to
  students. The zip is the instructor's: keep it private.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ... import __version__
from ...engine.host.manifest import load
from ...errors import CourseError
from ...grading.salt import new_salt, read_salt
from ...settings import (
    DEFAULT_VISIBILITY,
    DEFAULTS,
    STUDENT_UID,
    STUDENT_USER,
    VISIBILITIES,
    GradeSettings,
    check_assignment,
)
from .wheel import build_wheel, pinned_requirements, python_minor, write_zip

__all__ = ["Bundle", "make_bundle", "run_autograder_script", "UV_VERSION", "VENV", "FALLBACK"]

#: The uv release setup.sh installs (it then installs Python and the pinned packages).
UV_VERSION = "0.13.9"
#: Where setup.sh puts the grading environment inside Gradescope's image.
VENV = "/opt/attention-autograder"

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder image.
# It installs uv {uv}, Python {python}, the pinned packages and attention-autograder {version},
# creates the unprivileged user student code runs as where namespaces are refused, and
# closes the package (checks, reference) and this folder (salt) to every other user.
set -euo pipefail
SOURCE="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends python3 python3-venv ca-certificates
python3 -m venv /opt/uv
/opt/uv/bin/pip install -q "uv=={uv}"
export UV_PYTHON_INSTALL_DIR=/opt/uv/python
/opt/uv/bin/uv python install {python}
/opt/uv/bin/uv venv --python {python} {venv}
/opt/uv/bin/uv pip install --python {venv}/bin/python -r "$SOURCE/requirements.txt"
/opt/uv/bin/uv pip install --python {venv}/bin/python --no-deps "$SOURCE/wheels/{wheel}"
chmod -R a+rX /opt/uv/python {venv}  # student code imports from them as another user
getent group {user} >/dev/null || groupadd --system --gid {uid} {user}
getent passwd {user} >/dev/null || useradd --system --uid {uid} --gid {user} --no-log-init \\
  --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin {user}
{venv}/bin/python -m autograder.integrations.gradescope.run --prepare "$SOURCE"
# fail the build now, not at the first submission, if anything is missing
{venv}/bin/python -c "import autograder.integrations.gradescope.run, autograder.bank; \\
from autograder.engine.host.manifest import load; load('{assignment}')"
echo "attention-autograder {version} ready for {assignment}"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission (as root, working directory /autograder).
# GRADESCOPE_ROOT replaces /autograder; AUTOGRADER_PYTHON the interpreter setup.sh made.
# The grader writes results.json into a private folder and reports its SHA-256 on
# descriptor 3; only that file, unchanged, is installed in results/. Anything else that
# appears in results/ is discarded, and then, as when the grader dies, a 0 that says so.
# Everything runs inside main, which bash reads whole first: changing this file while a
# submission is graded changes nothing.
main() {{
  local root="${{GRADESCOPE_ROOT:-/autograder}}"
  local python="${{AUTOGRADER_PYTHON:-{venv}/bin/python}}"
  local private="" status=1 expected="" actual="" problem=""
  rm -rf "$root/results" && mkdir -p -m 0755 "$root/results"
  if private="$(mktemp -d)"; then
    PYTHONSAFEPATH=1 "$python" -m autograder.integrations.gradescope.run "$root" "$private/results.json" \\
      --digest-fd 3 3>"$private/digest"
    status=$?
    expected="$(head -c 64 "$private/digest" 2>/dev/null)"
    actual="$(sha256sum "$private/results.json" 2>/dev/null | cut -c1-64)"
  fi
  if [ -z "$private" ]; then
    problem="no private folder for the grader (mktemp failed)"
  elif [ -L "$root/results" ] || [ ! -d "$root/results" ]; then
    problem="results/ was replaced during grading (discarded)"
  elif [ -n "$(ls -A "$root/results" 2>/dev/null)" ]; then
    problem="a file the grader did not write appeared in results/ during grading (discarded)"
  elif [ "${{#expected}}" -ne 64 ]; then
    problem="the grader exited with status $status before it finished results.json"
  elif [ "$expected" != "$actual" ]; then
    problem="results.json does not match the digest the grader reported"
  fi
  rm -rf "$root/results"; mkdir -p -m 0755 "$root/results"
  if [ -z "$problem" ]; then
    cp "$private/results.json" "$root/results/results.json.partial" &&
      mv -f "$root/results/results.json.partial" "$root/results/results.json"
  else
    echo "run_autograder: $problem; results.json scores 0 and says so"
    printf '%s\\n' "{{\\"score\\": 0.0, \\"output\\": \\"{fallback}\\", \\"stdout_visibility\\": \\"hidden\\", \\"extra_data\\": {{\\"grader\\": \\"run_autograder: $problem\\"}}, \\"tests\\": []}}" \\
      > "$root/results/results.json"
  fi
  [ -n "$private" ] && rm -rf "$private"
}}
main "$@"; exit 0
"""

#: What a student reads when run_autograder could not use the grader's results.
FALLBACK = "评分程序未能正常完成评分（不是你的错误），本次暂记 0 分；教师会查看并重新评分。"


def run_autograder_script() -> str:
    """The bundle's ``run_autograder``."""
    return RUN_AUTOGRADER.format(venv=VENV, fallback=FALLBACK)


@dataclass(frozen=True)
class Bundle:
    """What :func:`make_bundle` wrote."""

    path: Path
    assignment: str
    size: int
    files: tuple[str, ...]
    requirements: int


def _config(assignment: str, settings: GradeSettings, visibility: str) -> dict:
    return {"assignment": assignment, "timeout": settings.timeout,
            "cell_timeout": settings.cell_timeout, "memory_mb": settings.memory_mb,
            "visibility": visibility, "version": __version__}


def _salt(salt_file: Path | None) -> str:
    if salt_file is None:
        return new_salt()
    return read_salt(salt_file, missing="give the course's .autograder-salt, or omit "
                                        "--salt-file for a new salt")


def _contents(assignment: str, settings: GradeSettings, visibility: str,
              salt_file: Path | None, work: Path) -> list[tuple[str, bytes, int]]:
    """(name in the zip, bytes, mode) of every file of the bundle."""
    wheel = build_wheel(work)
    pins = pinned_requirements()
    fill = {"uv": UV_VERSION, "python": python_minor(), "version": __version__,
            "venv": VENV, "wheel": wheel.name, "assignment": assignment,
            "user": STUDENT_USER, "uid": STUDENT_UID}
    config = json.dumps(_config(assignment, settings, visibility), indent=2) + "\n"
    return [("setup.sh", SETUP_SH.format(**fill).encode(), 0o755),
            ("run_autograder", run_autograder_script().encode(), 0o755),
            ("requirements.txt", ("\n".join(pins) + "\n").encode(), 0o644),
            ("config.json", config.encode(), 0o644),
            ("salt", (_salt(salt_file) + "\n").encode(), 0o600),
            (f"wheels/{wheel.name}", wheel.read_bytes(), 0o644)]


def make_bundle(*, assignment: str, out: Path, settings: GradeSettings = DEFAULTS,
                visibility: str = DEFAULT_VISIBILITY, salt_file: Path | None = None) -> Bundle:
    """Write the Gradescope autograder zip for ``assignment`` to ``out``."""
    check_assignment(assignment)
    if visibility not in VISIBILITIES:
        raise CourseError(f"unknown visibility {visibility!r}: choose one of "
                          f"{', '.join(VISIBILITIES)}")
    load(assignment)
    out = Path(out)
    if out.suffix != ".zip":
        raise CourseError(f"--out {out} must end in .zip: Gradescope uploads a zip file")
    with tempfile.TemporaryDirectory(prefix="gradescope-bundle-") as work:
        files = _contents(assignment, settings, visibility, salt_file, Path(work))
        write_zip(out, files)
    requirements = files[2][1].decode().count("\n")
    return Bundle(out, assignment, out.stat().st_size, tuple(n for n, _d, _m in files),
                  requirements)

