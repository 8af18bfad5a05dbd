"""What the documentation names exists: every repository path, every `protomcp` command and
every flag written after one (docs move with the code)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from protomcp_host.cli.main import main as cli

pytestmark = pytest.mark.fast  # starts no process

ROOT = Path(__file__).resolve().parents[1]
DOCS = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    ROOT / "tests" / "README.md",
    ROOT / "benchmarks" / "README.md",
    *(ROOT / "docs").rglob("*.md"),
]
TOP_FOLDERS = "tests|protomcp_host|protomcp_sdk|benchmarks|examples|scripts|docs|proto|\\.ci"
REPO_PATH = re.compile(rf"(?<![\w/.-])(?:{TOP_FOLDERS})/[\w./-]*[\w/]")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
# `protomcp CMD` starting a line of a code block or a code span; the rest of it is its arguments.
COMMAND_LINE = re.compile(r"^\s*(?:\$ )?protomcp ([a-z][a-z-]*)\b(?!:)(.*)$", re.MULTILINE)
COMMAND_SPAN = re.compile(r"`protomcp ([a-z][a-z-]*)\b(?!:)([^`\n]*)`")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def named_paths(text: str) -> list[str]:
    """The repository paths in `text`, but those npm installs (node_modules) and globs."""
    return [path for path in REPO_PATH.findall(text) if "node_modules" not in path and "*" not in path]


def named_commands(text: str) -> list[tuple[str, list[str]]]:
    """Each `protomcp CMD ...` in `text`'s code: the command and the flags written after it."""
    blocks = FENCE.findall(text)
    prose = FENCE.sub("", text)
    found = [match for block in blocks for match in COMMAND_LINE.findall(block)]
    found += COMMAND_SPAN.findall(prose)
    return [(command, FLAG.findall(rest)) for command, rest in found]


def _flags(command: click.Command) -> set[str]:
    names = {"--help"}
    for param in command.params:
        names.update(param.opts, param.secondary_opts)
    return names


COMMANDS = dict(cli.commands) if isinstance(cli, click.Group) else {}


def test_the_patterns_find_paths_commands_and_flags() -> None:
    text = (
        "see `tests/scale/test_scale_cluster.py`), or tests/claude_code and protomcp_host/calls.\n"
        "Not: ../tests/x, my-tests/y.\n"
        "```\nprotomcp run tools.py --transport http --port 8000   # serves\n```\n"
        "Run `protomcp dev --ui` and read `protomcp logs`; protomcp is not a command here."
    )
    assert named_paths(text) == [
        "tests/scale/test_scale_cluster.py",
        "tests/claude_code",
        "protomcp_host/calls",
    ]
    assert named_commands(text) == [("run", ["--transport", "--port"]), ("dev", ["--ui"]), ("logs", [])]


def test_the_command_check_can_fail() -> None:
    assert "serve-forever" not in COMMANDS
    assert "--no-such-flag" not in _flags(COMMANDS["run"])


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: str(doc.relative_to(ROOT)))
def test_every_path_a_doc_names_exists(doc: Path) -> None:
    missing = [path for path in named_paths(doc.read_text(encoding="utf-8")) if not (ROOT / path).exists()]
    assert not missing, f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: str(doc.relative_to(ROOT)))
def test_every_command_and_flag_a_doc_names_exists(doc: Path) -> None:
    wrong = []
    for command, flags in named_commands(doc.read_text(encoding="utf-8")):
        if command not in COMMANDS:
            wrong.append(f"protomcp {command}")
            continue
        wrong += [f"protomcp {command} {flag}" for flag in flags if flag not in _flags(COMMANDS[command])]
    assert not wrong, f"{doc.relative_to(ROOT)} names commands or flags that do not exist: {wrong}"
