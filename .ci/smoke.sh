#!/usr/bin/env bash
# Smoke job: the package as students and graders install it, on the oldest and the newest
# supported Python (3.10 and 3.13, from pyenv's versions in the machine image). For each:
# a fresh venv, `pip install` of the wheel, `autograder check` on a right notebook
# (exit 0, full total) and on the unanswered release (exit 1, total 0), and one small
# `autograder grade` of both. Fails loudly when an interpreter is missing.
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

smoke() {  # $1 minor version
  local python venv course started
  python="$(interpreter "$1")"
  started=$SECONDS
  venv="$work/venv-$1"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install -q "$wheel" >"$work/pip-$1.log" 2>&1 \
    || { cat "$work/pip-$1.log"; fail "pip install on $("$python" --version)"; }
  mkdir -p "$work/right" "$work/wrong"
  cp "$repo/solutions/$assignment/$assignment.ipynb" "$work/right/"
  cp "$repo/release/$assignment/$assignment.ipynb" "$work/wrong/"
  expect_check "$venv" "right/$assignment.ipynb" 0 "总分：20 / 20 分"
  expect_check "$venv" "wrong/$assignment.ipynb" 1 "总分：0 / 20 分"
  course="$work/course-$1"
  for who in right wrong; do
    mkdir -p "$course/submitted/$who/$assignment"
    cp "$work/$who/$assignment.ipynb" "$course/submitted/$who/$assignment/"
  done
  (cd "$course" && "$venv/bin/autograder" grade submitted/ --out grades/ >/dev/null) \
    || fail "grade on Python $1"
  grep -q "^right,$assignment,ok,20.0,20.0" "$course/grades/scores.csv" \
    && grep -q "^wrong,$assignment,ok,0.0,20.0" "$course/grades/scores.csv" \
    || { cat "$course/grades/scores.csv"; fail "grade scores on Python $1"; }
  echo "smoke: $("$python" --version): install, check (right 20/20, wrong 0/20), grade: ok" \
       "in $((SECONDS - started)) s"
}

# the wheel students are handed (README: pip wheel --no-deps -w dist .), built once
python3 -m pip wheel -q --no-deps -w "$work/dist" "$repo" >"$work/wheel.log" 2>&1 \
  || { cat "$work/wheel.log"; fail "pip wheel"; }
wheel="$(ls "$work"/dist/*.whl)"
if [ $# -eq 0 ]; then set -- 3.10 3.13; fi
for minor in "$@"; do smoke "$minor"; done
echo "smoke: $# passed, 0 failed"  # a failure exits above, naming what failed
