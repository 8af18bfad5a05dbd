"""What a new user tripped over (issue 30): each test does what the user did."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_first_steps import run_host
from tests.support.hosts import ROOT

PRINTING = """from protomcp_sdk import tool

@tool
def hi(name: str) -> str:
    print("printing", name)
    return f"hi {name}"

def add(a: int, b: int) -> int:
    return a + b
"""


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    file = tmp_path / "tools.py"
    file.write_text(PRINTING)
    return file


def test_call_shows_what_the_tool_printed_once(tools_file: Path) -> None:
    done = run_host("call", str(tools_file), "hi", "name=bob", stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and done.stdout == "hi bob\n", done.stderr
    assert done.stderr.count("printing bob") == 1, done.stderr


def test_calling_a_function_left_without_tool_says_so(tools_file: Path) -> None:
    done = run_host("call", str(tools_file), "add", "a=1", "b=2", stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    hint = "tools.py defines add() but it is not a tool: put @tool on the line above its def"
    assert last == f"Error: Unknown tool: add ({hint})"
    nothing = run_host("call", str(tools_file), "nosuch", stdin=subprocess.DEVNULL)
    assert nothing.stderr.strip().splitlines()[-1] == "Error: Unknown tool: nosuch"


def test_python_tools_py_points_at_protomcp_dev(tools_file: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, "tools.py"],
        cwd=tools_file.parent,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0
    assert "tools.py defines MCP tools" in done.stderr and "protomcp dev tools.py" in done.stderr


def test_the_dev_banner_keeps_dev_inside_the_command(tools_file: Path) -> None:
    from protomcp_host.app import Host
    from protomcp_host.cli.banner import stdio_banner

    text = stdio_banner(Host([tools_file]), reload=True)
    assert f"`protomcp install claude-desktop {tools_file} --dev`" in text


FEATURES = """from protomcp_sdk import prompt, resource, tool

@tool
def add(a: int, b: int) -> int:
    return a + b

@resource("config://app", mime_type="text/plain")
def config() -> str:
    return "debug=false"

@resource("blob://one")
def one() -> bytes:
    return bytes(range(5))

@prompt
def review(path: str, lines: str = "10") -> str:
    return f"Please review {path} ({lines} lines)."
"""


@pytest.fixture
def features_file(tmp_path: Path) -> Path:
    file = tmp_path / "tools.py"
    file.write_text(FEATURES)
    return file


def test_call_reads_a_resource_by_its_uri(features_file: Path) -> None:
    done = run_host("call", str(features_file), "config://app", stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and done.stdout == "debug=false\n", done.stderr
    blob = run_host("call", str(features_file), "blob://one", stdin=subprocess.DEVNULL)
    assert blob.stdout == "[application/octet-stream blob://one, 5 bytes]\n", blob.stderr
    missing = run_host("call", str(features_file), "nothing://here", stdin=subprocess.DEVNULL)
    assert missing.returncode == 1 and "Resource not found: nothing://here" in missing.stderr


def test_call_renders_a_prompt_with_text_arguments(features_file: Path) -> None:
    done = run_host("call", str(features_file), "review", "path=a.py", "lines=3", stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "user: Please review a.py (3 lines).\n"  # "3" stays text


def test_list_and_call_take_upstreams(features_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mcp")
    from tests.support.hosts import TOOLS

    monkeypatch.setenv("UPSTREAM_MARKS", str(features_file.parent))
    upstream = f"ex={sys.executable} {TOOLS / 'upstream_server.py'}"
    listed = run_host("list", "--upstream", upstream, stdin=subprocess.DEVNULL)
    assert listed.returncode == 0 and "ex_add(a: int, b: int)" in listed.stdout, listed.stderr
    called = run_host(
        "call", str(features_file), "--upstream", upstream, "ex_add", "a=1", "b=2", stdin=subprocess.DEVNULL
    )
    assert called.returncode == 0 and called.stdout == "3\n", called.stderr
