"""What the host reads of a tool file without running it: its module docstring (the default
instructions) and whether it declares a completion (the capability answered before it loads)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from protomcp_host.calls.forwarding import declares_completions
from protomcp_host.processes.launch import module_docstring

SOURCES = [
    '"""Doc."""\nx = 1\n',
    '#!/usr/bin/env python\n# a comment\n\n"""Multi\n   line\n  doc."""\n',
    "x = 1\n",
    "'a' 'b'\n",
    "f'x'\n",
    "'a' + b\n",
    "b'x'\n",
    "",
    "'''unterminated\n",
    "import os\n'''late'''\n",
    "r'''raw\\n'''\n",
    "def f():\n    '''not the module's'''\n",
]


@pytest.mark.parametrize("source", SOURCES)
def test_the_docstring_is_the_one_python_sees(tmp_path: Path, source: str) -> None:
    file = tmp_path / "tools.py"
    file.write_text(source)
    try:
        expected = ast.get_docstring(ast.parse(source)) or ""
    except SyntaxError:
        expected = ""
    assert module_docstring(file) == expected


def test_a_file_in_another_encoding_and_a_missing_file(tmp_path: Path) -> None:
    file = tmp_path / "latin.py"
    file.write_bytes("# -*- coding: latin-1 -*-\n'café'\n".encode("latin-1"))
    assert module_docstring(file) == "café"
    assert module_docstring(tmp_path / "missing.py") == ""


@pytest.mark.parametrize(
    ("source", "declared"),
    [
        ("from protomcp_sdk import completion\n\n@completion('p', 'a')\ndef c(v): return []\n", True),
        ("import protomcp_sdk as pm\n\n@pm.completion('p', 'a')\nasync def c(v): return []\n", True),
        ("from protomcp_sdk import tool\n\n@tool\ndef f() -> str: return 'completion'\n", False),
        ("# @completion in a comment\nx = '@completion'\n", False),  # looks like one: parsed, and is not
        ("@completion(\n", False),  # does not parse: its process reports it
    ],
)
def test_completions_are_declared_by_a_decorator_only(tmp_path: Path, source: str, declared: bool) -> None:
    file = tmp_path / "tools.py"
    file.write_text(source)
    assert declares_completions(file) is declared


def test_run_files_are_started_before_the_cli_and_taken_by_it(tmp_path: Path) -> None:
    """`protomcp run FILE...` starts its tool processes before importing the CLI: launch()
    takes them; what it does not take is stopped."""
    from protomcp_host.processes import launch as launching

    taken, left = tmp_path / "taken.py", tmp_path / "left.py"
    for file in (taken, left):
        file.write_text("from protomcp_sdk import tool\n")
    launching.prestart([str(taken), str(left)])
    started = dict(launching._prestarted)
    assert set(started) == {taken.resolve(), left.resolve()}
    assert launching.launch(taken.resolve()) is started[taken.resolve()]  # taken, not started again
    other = launching.launch(taken.resolve())  # a second launch (a restart) starts a new process
    assert other.process.pid != started[taken.resolve()].process.pid
    launching.end_prestart()
    assert launching._prestarted == {} and started[left.resolve()].process.poll() is not None
    for launched in (started[taken.resolve()], other):
        launched.process.kill()
        launched.process.communicate()
        for fd in (launched.to_child, launched.from_child):
            os.close(fd)
    launching.prestart([str(tmp_path / "missing.py")])  # left to the CLI to report
    assert launching._prestarted == {}
