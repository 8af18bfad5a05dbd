"""`call` with key=value, progress and logs (on a terminal and not), readable `list`, --name
and --instructions."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

import pytest

from protomcp_host.cli.show import parse_pairs, signature
from protomcp_sdk.testing import Client
from tests.support.hosts import EXAMPLES, HOST

SLOW = '''"""Counting tools. Call count with a small n."""
from protomcp_sdk import Context, tool

@tool
def count(n: int, word: str, ctx: Context) -> str:
    for i in range(n):
        ctx.report_progress(i + 1, n, f"step {i + 1}")
        ctx.info(f"did {i + 1}")
    return word * n
'''


@pytest.fixture
def slow(tmp_path: Path) -> Path:
    file = tmp_path / "counting.py"
    file.write_text(SLOW)
    return file


def test_call_on_a_terminal_shows_a_progress_bar_and_logs(slow: Path) -> None:
    leader, follower = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100"}
    try:
        proc = subprocess.Popen(
            [*HOST, "call", str(slow), "count", "n=3", "word=007"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=follower,
            env=env,
        )
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        out, _ = proc.communicate(timeout=60)
    finally:
        os.close(leader)
    assert proc.returncode == 0
    assert out == b"007007007\n"  # "007" stays text: the parameter is a string
    terminal = seen.decode(errors="replace")
    assert "3/3" in terminal and "step 3" in terminal and "━" in terminal  # rich's bar
    assert "[info count] did 1" in terminal and "[info count] did 3" in terminal


def test_call_without_a_terminal_prints_plain_lines(slow: Path) -> None:
    done = subprocess.run(
        [*HOST, "call", str(slow), "count", "n=2", "--args", '{"word": "ab"}'],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "abab\n"
    assert "progress 1/2: step 1\n[info count] did 1\nprogress 2/2: step 2\n" in done.stderr
    bad = subprocess.run(
        [*HOST, "call", str(slow), "count", "n=two", "word=x"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert bad.returncode == 1 and "n" in bad.stdout and "integer" in bad.stdout


def test_key_value_parsing_follows_the_schema() -> None:
    schema = {
        "properties": {
            "name": {"type": "string"},
            "mode": {"enum": ["1", "2"]},
            "n": {"type": "integer"},
            "tags": {"anyOf": [{"type": "array"}, {"type": "null"}]},
            "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        }
    }
    pairs = ["name=42", "mode=1", "n=42", 'tags=["a"]', "maybe=true", "other=not json", "empty="]
    assert parse_pairs(pairs, schema) == {
        "name": "42",
        "mode": "1",
        "n": 42,
        "tags": ["a"],
        "maybe": "true",
        "other": "not json",
        "empty": "",
    }
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_pairs(["oops"], schema)


def test_list_prints_readable_signatures() -> None:
    done = subprocess.run(
        [*HOST, "list", str(EXAMPLES / "notes.py")],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "add_note(title: str, body: str = '', priority: 'low'|'normal'|'high' = 'normal', "
        "tags: list[str] | None = None)"
    ) in done.stdout
    assert "list_notes(tag: str | None = None, status: 'open'|'done'|'all' = 'open')" in done.stdout


def test_signature_of_nested_types() -> None:
    schema = {
        "properties": {
            "point": {"$ref": "#/$defs/Point"},
            "scores": {"type": "object", "additionalProperties": {"type": "number"}},
            "when": {"type": "string", "format": "date-time"},
            "flag": {"type": "boolean", "default": False},
        },
        "required": ["point", "scores", "when"],
        "$defs": {"Point": {"type": "object", "title": "Point"}},
    }
    assert (
        signature(schema)
        == "(point: Point, scores: dict[str, float], when: str (date-time), flag: bool = False)"
    )


async def test_name_and_instructions_reach_initialize(slow: Path) -> None:
    async with Client(slow) as c:
        assert c.server_info["name"] == "protomcp"
        assert c.instructions == "Counting tools. Call count with a small n."  # the module docstring
    async with Client(slow, options=("--name", "counter", "--instructions", "Be brief.")) as c:
        assert c.server_info["name"] == "counter" and c.instructions == "Be brief."
