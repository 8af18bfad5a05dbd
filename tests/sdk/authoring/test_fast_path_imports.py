"""The pydantic-free path seen from a fresh interpreter: a file of simple tools is loaded, listed
and called without importing pydantic (the checks of the path itself are in test_fast_path.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SIMPLE_TOOLS = """
from protomcp_sdk import Context, ToolError, ToolResult, tool

@tool
def add(a: int, b: int = 2) -> int:
    return a + b

@tool(read_only=True)
async def greet(name: str, loud: bool | None = None, ctx: Context = None) -> str:
    return name

@tool
def ratio(x: float, y: float) -> float | None:
    return x / y if y else None

@tool
def info(anything=None):
    return {"a": [1, 2.5, None, True, "x"], "b": {"c": anything}}

@tool
def nothing() -> None:
    return None

@tool
def full() -> ToolResult:
    return ToolResult(content=["x"], structured={"k": 1})

@tool
def fails(n: int) -> str:
    raise ToolError("no", suggestion="yes")
"""

CHECK = """
import runpy, sys
import protomcp_sdk.runtime.context, protomcp_sdk.wire.framing
from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.authoring.arguments import ArgumentError
from protomcp_sdk.authoring.encoding import error_response, to_response

runpy.run_path(sys.argv[1])
definitions = [spec.definition() for spec in REGISTRY.tools.values()]
specs = REGISTRY.tools
for name, arguments in [("add", {"a": 1}), ("greet", {"name": "x"}), ("ratio", {"x": 1, "y": 2}),
                        ("info", {"anything": [1]}), ("nothing", {}), ("full", {}), ("fails", {"n": 1})]:
    spec = specs[name]
    kwargs = spec.convert(arguments)
    if spec.context_param:
        kwargs[spec.context_param] = None
    try:
        value = spec.fn(**kwargs)
        if spec.is_async:
            value.close()
            value = "x"
        to_response(value, spec)
    except Exception as exc:
        error_response(exc, name)
try:
    specs["add"].convert({"a": "x"})
except ArgumentError as exc:
    error_response(exc, "add")
print(sorted(m for m in sys.modules if "pydantic" in m))
"""


def run_check(tmp_path: Path, source: str) -> list[str]:
    tool_file = tmp_path / "tools.py"
    tool_file.write_text(textwrap.dedent(source))
    result = subprocess.run(
        [sys.executable, "-c", CHECK, str(tool_file)], capture_output=True, text=True, check=True
    )
    return eval(result.stdout)  # a printed list of module names


def test_simple_tool_file_never_imports_pydantic(tmp_path: Path) -> None:
    assert run_check(tmp_path, SIMPLE_TOOLS) == []


def test_rich_tool_file_does_import_pydantic(tmp_path: Path) -> None:
    """The check above is meaningful: one rich tool brings pydantic in."""
    modules = run_check(tmp_path, SIMPLE_TOOLS + "\n@tool\ndef tags(t: list[str]) -> None: ...\n")
    assert "pydantic" in modules
