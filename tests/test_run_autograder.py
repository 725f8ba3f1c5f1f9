"""The bundle's ``run_autograder`` installs only the results its own grader wrote.

A stand-in for the grader (a shell script as ``AUTOGRADER_PYTHON``) writes the results to
the private path it is given and their SHA-256 on descriptor 3, or misbehaves as a
grader killed mid-run, or a student who could write where the grader does, would. Each
case is the real ``run_autograder`` text; no Python, no sandbox: fast.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from autograder.integrations.gradescope.bundle import FALLBACK, run_autograder_script

HONEST = '{"score": 5.0, "output": "graded by the grader", "tests": []}'
FORGED = '{"score": 17.0, "output": "forged", "tests": []}'

#: The stand-in grader: $3 is the root, $4 the private results path, descriptor 3 the digest.
GRADER = r'''#!/usr/bin/env bash
root="$3"; out="$4"
honest() { printf '%s\n' "$HONEST" > "$out"; sha256sum "$out" | cut -c1-64 >&3; }
case "$MODE" in
  honest) honest ;;
  killed) printf '%s\n' "$HONEST" > "$out"; kill -KILL $$ ;;
  foreign) honest; printf '%s\n' "$FORGED" > "$root/results/results.json" ;;
  tampered) honest; printf '%s\n' "$FORGED" > "$out" ;;
  short-digest) printf '%s\n' "$FORGED" > "$out"; echo 0123456789abcdef >&3 ;;
  forged-digest) printf '%s\n' "$FORGED" > "$out"; printf '%064d\n' 0 >&3 ;;
  swap) honest; rm -rf "$root/results"; mkdir "$root/elsewhere"
        ln -s "$root/elsewhere" "$root/results" ;;
  append) honest
        printf '\necho %q > %q\n' "$FORGED" "$root/results/results.json" >> "$SCRIPT" ;;
  rewrite) honest  # in place, from where bash would read on in a plain script
        at=$(grep -b -m1 -F 'if [ -z "$private" ]' "$SCRIPT" | cut -d: -f1)
        { head -c "$at" "$SCRIPT"
          printf 'echo %q > %q; exit 0\n' "$FORGED" "$root/results/results.json"; } > "$4.new"
        cat "$4.new" > "$SCRIPT" ;;
esac
'''


def _run(tmp_path: Path, mode: str) -> tuple[dict, str, Path]:
    root, tmp = tmp_path / "autograder", tmp_path / "tmp"
    for folder in (root / "source", root / "submission", tmp):
        folder.mkdir(parents=True)
    script = root / "run_autograder"
    script.write_text(run_autograder_script())
    grader = tmp_path / "grader"
    grader.write_text(GRADER)
    grader.chmod(0o755)
    env = {**os.environ, "GRADESCOPE_ROOT": str(root), "AUTOGRADER_PYTHON": str(grader),
           "TMPDIR": str(tmp), "MODE": mode, "HONEST": HONEST, "FORGED": FORGED,
           "SCRIPT": str(script)}
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert list(tmp.iterdir()) == []  # the private folder is gone
    results = root / "results"
    assert results.is_dir() and not results.is_symlink()
    assert sorted(p.name for p in results.iterdir()) == ["results.json"]
    return json.loads((results / "results.json").read_text(encoding="utf-8")), done.stdout, root


def test_the_graders_own_results_are_installed_unchanged(tmp_path):
    data, stdout, _root = _run(tmp_path, "honest")
    assert data == json.loads(HONEST) and "run_autograder:" not in stdout


@pytest.mark.parametrize("mode,problem", [
    ("killed", "the grader exited with status 137 before it finished results.json"),
    ("foreign", "a file the grader did not write appeared in results/"),
    ("tampered", "results.json does not match the digest the grader reported"),
    ("short-digest", "the grader exited with status 0 before it finished"),
    ("forged-digest", "results.json does not match the digest the grader reported"),
])
def test_anything_else_ends_in_the_fallback_saying_why(tmp_path, mode, problem):
    data, stdout, _root = _run(tmp_path, mode)
    assert data["score"] == 0.0 and data["output"] == FALLBACK and data["tests"] == []
    assert problem in data["extra_data"]["grader"] and problem in stdout
    assert data["stdout_visibility"] == "hidden"


def test_a_results_folder_swapped_for_a_link_is_replaced_not_followed(tmp_path):
    data, stdout, root = _run(tmp_path, "swap")
    assert "results/ was replaced" in stdout and data["output"] == FALLBACK
    assert list((root / "elsewhere").iterdir()) == []


@pytest.mark.parametrize("mode", ["append", "rewrite"])
def test_changing_run_autograder_while_it_runs_changes_nothing(tmp_path, mode):
    """bash reads a script as it runs it; run_autograder's body is one function, read
    whole before it starts, so what is written into the file meanwhile never runs."""
    data, _stdout, _root = _run(tmp_path, mode)
    assert data == json.loads(HONEST)
