"""The documents name only what exists: module paths, commands and their options.

README.md is for users (short, linked to its Chinese twin on the first line of each); the
rest lives in docs/. Every ``autograder/...`` path, every ``autograder <command>`` and every
``--option`` written next to one must be real, so a moved module or a renamed option fails
here instead of misleading a reader.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from autograder.cli import main

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", ROOT / "README.zh.md",
               *(p for p in (ROOT / "docs").glob("*.md"))])
PATH = re.compile(r"(?<![\w/.-])((?:autograder|tests|benchmarks|source|docs)/[\w./-]*\w)")
#: Named in the docs but not paths of this repository: the review message's words, the
#: Gradescope bundle's own salt file.
NOT_OURS = {"autograder/nbgrader", "source/salt"}
CODE = re.compile(r"```.*?```|`[^`\n]+`", re.S)
COMMAND = re.compile(r"\bautograder ([a-z][a-z-]+)((?: +(?:--?[a-z][\w-]*|[A-Z_./<>\[\]a-z0-9-]+))*)")


def _commands() -> dict[str, set[str]]:
    """Each subcommand of the CLI with its option names."""
    return {name: {opt for p in cmd.params for opt in getattr(p, "opts", [])} | {"--help"}
            for name, cmd in main.commands.items()}


def test_the_readmes_are_short_and_link_each_other():
    english, chinese = (ROOT / n for n in ("README.md", "README.zh.md"))
    assert len(english.read_text(encoding="utf-8").splitlines()) <= 160
    assert "README.zh.md" in english.read_text(encoding="utf-8").splitlines()[0]
    assert "README.md" in chinese.read_text(encoding="utf-8").splitlines()[0]
    for page in ("reference.md", "security.md", "benchmarks.md", "AUTHORING.md"):
        assert (ROOT / "docs" / page).is_file(), page


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_path_a_document_names_exists(doc):
    text = doc.read_text(encoding="utf-8")
    named = {m.rstrip(".") for m in PATH.findall(text)} - NOT_OURS
    missing = sorted(m for m in named if "*" not in m and "<" not in m and "qN" not in m
                     and not (ROOT / m).exists())
    assert not missing, f"{doc.name} names paths that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_command_and_option_a_document_names_exists(doc):
    commands, wrong = _commands(), []
    code = "\n".join(CODE.findall(doc.read_text(encoding="utf-8")))
    for name, rest in COMMAND.findall(code):
        if name not in commands:
            wrong.append(f"autograder {name}")
            continue
        wrong += [f"autograder {name} {o}" for o in re.findall(r"(?<!\w)--[a-z][\w-]*", rest)
                  if o not in commands[name]]
    assert not wrong, f"{doc.name} names what the CLI does not have: {sorted(set(wrong))}"


def test_the_checks_catch_a_wrong_name(tmp_path):
    """The two checks above fail on a made-up path, command and option."""
    commands = _commands()
    text = "see autograder/engine/nowhere.py; run `autograder grde` or `autograder grade --fast`"
    assert [m for m in PATH.findall(text) if not (ROOT / m).exists()]
    found = COMMAND.findall("\n".join(CODE.findall(text)))
    assert any(n not in commands for n, _ in found)
    assert any("--fast" in rest and "--fast" not in commands.get(n, set()) for n, rest in found)


def test_every_command_is_in_the_reference():
    reference = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    absent = [name for name in main.commands if f"autograder {name}" not in reference]
    assert not absent, f"docs/reference.md does not describe: {absent}"
    assert CliRunner().invoke(main, ["--help"]).exit_code == 0


def test_ci_runs_the_readme_s_test_command_verbatim():
    """The README's command, then only the smoke job (the wheel on the oldest and the
    newest supported Python, .ci/smoke.sh)."""
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    ci = next(line for line in lines if line.startswith("python3 -m venv .venv"))
    assert "pytest" in ci and lines[lines.index(ci) + 1:] == ["bash .ci/smoke.sh"]
    assert ci in (ROOT / "README.md").read_text(encoding="utf-8")
    assert ci in (ROOT / "README.zh.md").read_text(encoding="utf-8")
