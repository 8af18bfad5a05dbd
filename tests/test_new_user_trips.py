"""What a new user tripped over (issue 30): each test does what the user did."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from test_first_steps import run_host

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
        [sys.executable, "tools.py"], cwd=tools_file.parent, capture_output=True, text=True, timeout=60,
        env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0
    assert "tools.py defines MCP tools" in done.stderr and "protomcp dev tools.py" in done.stderr


def test_the_dev_banner_keeps_dev_inside_the_command(tools_file: Path) -> None:
    from protomcp_host.app import Host
    from protomcp_host.cli.banner import stdio_banner

    text = stdio_banner(Host([tools_file]), reload=True)
    assert f"`protomcp install claude-desktop {tools_file} --dev`" in text
