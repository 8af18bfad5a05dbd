"""PROTOMCP_ENVELOPE: a tool process builds and reads its Envelopes with protobuf's upb classes
(the default) or with protomcp_sdk.wire.purepb's pure-Python ones ("python"). Driven through the
real host with the official client: the features that cross the pipe, together, under both. And a
bad value of a tool process's settings (this one, PROTOMCP_READER) stops the start with one line."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest

from tests.support.hosts import HOST, mcp_session, write_atomic

pytestmark = pytest.mark.anyio

TOOLS = '''
import sys
from protomcp_sdk import Context, ToolError, middleware, prompt, resource, tool

@middleware
async def stamp(call, call_next):
    result = await call_next(call)
    return result

@tool
def protobuf_loaded() -> bool:
    """Whether protobuf is imported in this process."""
    return "google.protobuf" in sys.modules

@tool
async def chatty(n: int, ctx: Context) -> str:
    """Progress, logs and a tool-list change, then an answer."""
    for i in range(n):
        await ctx.report_progress(i + 1, n, f"step {i + 1}")
        await ctx.info(f"did step {i + 1}")
    await ctx.enable_tools(["hidden_one"])
    return "done"

@tool(hidden=True)
def hidden_one() -> str:
    return "found"

@tool
def big(n: int) -> str:
    """n characters: past 256 KB they travel outside the Envelope."""
    return "x" * n

@tool
def refuse() -> str:
    raise ToolError("no way", code="nope")

@resource("notes://{name}", mime_type="text/plain")
def note(name: str) -> str:
    return f"note {name}"

@prompt(description="Say hi")
def greet(who: str) -> str:
    return f"hi {who}"
'''


@pytest.mark.parametrize("envelope", ["upb", "python"])
async def test_every_feature_crosses_the_pipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, envelope: str
) -> None:
    monkeypatch.setenv("PROTOMCP_ENVELOPE", envelope)
    file = tmp_path / "tools.py"
    write_atomic(file, TOOLS)
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with mcp_session("run", str(file)) as session:
        with anyio.fail_after(30):
            loaded = await session.call_tool("protobuf_loaded", {})
            assert loaded.structured_content == {"result": envelope == "upb"}
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert "hidden_one" not in names
            chatty = await session.call_tool("chatty", {"n": 3}, progress_callback=on_progress)
            assert chatty.content[0].text == "done" and progress == [1, 2, 3]  # type: ignore[union-attr]
            assert "hidden_one" in {tool.name for tool in (await session.list_tools()).tools}
            assert (await session.call_tool("hidden_one", {})).content[0].text == "found"  # type: ignore[union-attr]
            big = await session.call_tool("big", {"n": 300_000})
            assert big.content[0].text == "x" * 300_000  # type: ignore[union-attr]
            refused = await session.call_tool("refuse", {})
            assert refused.is_error and "no way" in refused.content[0].text  # type: ignore[union-attr]
            invalid = await session.call_tool("big", {"n": "many"})
            assert invalid.is_error
            read = await session.read_resource("notes://a")  # type: ignore[arg-type]
            assert read.contents[0].text == "note a"  # type: ignore[union-attr]
            got = await session.get_prompt("greet", {"who": "Ada"})
            assert got.messages[0].content.text == "hi Ada"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("PROTOMCP_ENVELOPE", "json", "PROTOMCP_ENVELOPE must be one of upb, python, not 'json'"),
        ("PROTOMCP_READER", "fibers", "PROTOMCP_READER must be one of auto, threads, loop, not 'fibers'"),
    ],
)
def test_a_bad_tool_process_setting_is_a_clear_startup_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    file = tmp_path / "tools.py"
    write_atomic(file, TOOLS)
    monkeypatch.setenv(variable, value)
    proc = subprocess.run(
        [*HOST, "run", str(file)], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 1
    assert message in proc.stderr
    assert proc.stdout == ""
