#!/usr/bin/env bash
# Smoke job: the package as students and graders install it, on the oldest and the newest
# supported Python (3.10 and 3.13, from pyenv's versions in the machine image). For each:
# a fresh venv, `pip install` of the wheel, `autograder check` on a right notebook
# (exit 0, full total) and on the unanswered release (exit 1, total 0), and one small
# `autograder grade` of both. Fails loudly when an interpreter is missing.
# Then, where the system Python is externally managed (Debian 12, Ubuntu 24.04): `pip` into
# it is refused, and the README's routes work: `%pip install` in a notebook whose kernel is
# a venv of it, then the check cell; and `autograder check` from that venv in a terminal.
# Usage: .ci/smoke.sh [MINOR ...]   (default: 3.10 3.13)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
versions="${PYENV_ROOT:-$HOME/.pyenv}/versions"
assignment=q1_value_scaling
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fail() { echo "smoke: FAILED: $*" >&2; exit 1; }

interpreter() {  # the newest installed patch release of Python $1
  local found
  found="$(ls -d "$versions/$1".* 2>/dev/null | sort -V | tail -n 1 || true)"
  [ -n "$found" ] && [ -x "$found/bin/python" ] \
    || fail "no Python $1.x under $versions (the smoke job needs pyenv's $1 from the machine image)"
  echo "$found/bin/python"
}

expect_check() {  # $1 venv, $2 notebook, $3 expected exit code, $4 expected total line
  local out code=0
  out="$(cd "$work" && AUTOGRADER_CHECK_DAEMON=0 "$1/bin/autograder" check "$2")" || code=$?
  [ "$code" -eq "$3" ] || { echo "$out"; fail "check $2 exited $code, expected $3"; }
  grep -q "$4" <<<"$out" || { echo "$out"; fail "check $2: no line '$4'"; }
}

warm_check() {  # $1 venv, $2 a home: the daemon started by a check answers the next one
  local out
  mkdir -p "$2"
  for _ in 1 2 3; do
    out="$(cd "$work" && env -u XDG_RUNTIME_DIR HOME="$2" "$1/bin/autograder" check \
      "right/$assignment.ipynb")" || { echo "$out"; fail "check with the daemon"; }
    [ -S "$2/.cache/attention-autograder/check.sock" ] && break
    sleep 2
  done
  out="$(cd "$work" && env -u XDG_RUNTIME_DIR HOME="$2" "$1/bin/autograder" check \
    "right/$assignment.ipynb")" || { echo "$out"; fail "check answered by the daemon"; }
  grep -q "总分：$total / $total 分" <<<"$out" || { echo "$out"; fail "the daemon's total"; }
  grep -q "serving" "$2/.cache/attention-autograder/checkd.log" || fail "no daemon served"
  env -u XDG_RUNTIME_DIR HOME="$2" "$1/bin/python" -c \
    "from autograder.integrations.selfcheck import daemon; daemon.stop()"
}

smoke() {  # $1 minor version
  local python venv course started
  python="$(interpreter "$1")"
  started=$SECONDS
  venv="$work/venv-$1"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install -q "$wheel" >"$work/pip-$1.log" 2>&1 \
    || { cat "$work/pip-$1.log"; fail "pip install on $("$python" --version)"; }
  # the assignment's automatic points, from the installed package's manifest
  total="$("$venv/bin/python" -c "from autograder.engine.host.manifest import load
print(int(load('$assignment').auto_max))")"
  mkdir -p "$work/right" "$work/wrong"
  cp "$repo/solutions/$assignment/$assignment.ipynb" "$work/right/"
  cp "$repo/release/$assignment/$assignment.ipynb" "$work/wrong/"
  expect_check "$venv" "right/$assignment.ipynb" 0 "总分：$total / $total 分"
  expect_check "$venv" "wrong/$assignment.ipynb" 1 "总分：0 / $total 分"
  warm_check "$venv" "$work/home-$1"
  # without what only Linux has (as on macOS, Windows): a plain child, the same total
  PYTHONPATH="$repo/tests/nolinux" expect_check "$venv" "wrong/$assignment.ipynb" 1 "总分：0 / $total 分"
  PYTHONPATH="$repo/tests/nolinux" expect_check "$venv" "right/$assignment.ipynb" 0 "运行方式：普通子进程"
  course="$work/course-$1"
  for who in right wrong; do
    mkdir -p "$course/submitted/$who/$assignment"
    cp "$work/$who/$assignment.ipynb" "$course/submitted/$who/$assignment/"
  done
  # a due date in UTC written with "Z", which Python 3.10's fromisoformat alone refuses
  (cd "$course" && "$venv/bin/autograder" grade submitted/ --out grades/ --due 2030-01-01T00:00Z \
    >/dev/null) \
    || fail "grade on Python $1"
  grep -q "^right,$assignment,ok,$total.0,$total.0" "$course/grades/scores.csv" \
    && grep -q "^wrong,$assignment,ok,0.0,$total.0" "$course/grades/scores.csv" \
    || { cat "$course/grades/scores.csv"; fail "grade scores on Python $1"; }
  echo "smoke: $("$python" --version): install, check (right $total/$total, wrong 0/$total, daemon, without Linux), grade: ok" \
       "in $((SECONDS - started)) s"
}

# the wheel students are handed (README: pip wheel --no-deps -w dist .), built once
python3 -m pip wheel -q --no-deps -w "$work/dist" "$repo" >"$work/wheel.log" 2>&1 \
  || { cat "$work/wheel.log"; fail "pip wheel"; }
wheel="$(ls "$work"/dist/*.whl)"
rm -rf "$repo/build"  # setuptools' staging folder (git-ignored)
system_python() {  # Debian's /usr/bin/python3: refused; then a venv of it as the kernel
  local python=/usr/bin/python3 kernel="$work/system-kernel" started
  started=$SECONDS
  if "$python" -m pip install -q "$wheel" >"$work/system-pip.log" 2>&1; then
    fail "pip into the externally managed $python was not refused"
  fi
  grep -q externally-managed-environment "$work/system-pip.log" || fail "pip refused, but not as PEP 668"
  # a kernel with only Jupyter's own packages: the notebook %pip-installs the wheel into it
  "$python" -m venv "$kernel"
  { "$kernel/bin/pip" install -q ipykernel nbclient \
    && "$kernel/bin/python" -m ipykernel install --prefix "$kernel" --name python3; } \
    >"$work/system-kernel.log" 2>&1 || { cat "$work/system-kernel.log"; fail "a kernel of $python"; }
  JUPYTER_PATH="$kernel/share/jupyter" AUTOGRADER_CHECK_DAEMON=0 "$kernel/bin/python" \
    "$repo/.ci/student_notebook.py" "$wheel" "$work/right/$assignment.ipynb" \
    "$repo/release/$assignment/$assignment.ipynb" "$work/student" >"$work/student.out" 2>&1 \
    || { cat "$work/student.out"; fail "%pip install and the check cell"; }
  grep -q "总分：$total / $total 分" "$work/student.out" || { cat "$work/student.out"; fail "check cell total"; }
  expect_check "$kernel" "wrong/$assignment.ipynb" 1 "总分：0 / $total 分"  # the same venv, in a terminal
  echo "smoke: $("$python" --version) (externally managed): pip refused; %pip in a venv kernel," \
       "check cell $total/$total, terminal check 0/$total: ok in $((SECONDS - started)) s"
}

if [ $# -eq 0 ]; then set -- 3.10 3.13; fi
for minor in "$@"; do smoke "$minor"; done
passed=$#
if compgen -G "/usr/lib/python3*/EXTERNALLY-MANAGED" >/dev/null && [ -x /usr/bin/python3 ]; then
  system_python
  passed=$((passed + 1))
else
  echo "smoke: no externally managed system Python here: that part skipped"
fi
echo "smoke: ${SECONDS} s in all"
echo "smoke: all $passed runs ok"  # a failure exits above, naming what failed; pytest's summary stays the suite's count
