"""A small MCP server written with the official SDK (MCPServer), run over stdio as an upstream.

The SDK ships no runnable example server with tools, so this is the stand-in: plain SDK code,
nothing of protomcp. `UPSTREAM_MARKS` names a folder where tools leave marks for the tests
(a cancelled call, a start count)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

server = MCPServer("upstream-example")
MARKS = Path(os.environ.get("UPSTREAM_MARKS", "/tmp"))


def _mark(name: str, text: str = "") -> None:
    with open(MARKS / name, "a") as out:
        out.write(text + "\n")


_mark("started", str(os.getpid()))


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool()
async def count(n: int, ctx: Context) -> str:
    """Count to n, reporting progress."""
    for i in range(n):
        await ctx.report_progress(i + 1, n, f"step {i + 1}")
    return f"counted to {n}"


@server.tool()
async def wait_forever(ctx: Context) -> str:
    """Never answers by itself; leaves a mark when it is cancelled."""
    _mark("waiting")
    try:
        await anyio.sleep_forever()
    finally:
        _mark("cancelled")
    return "unreachable"


@server.tool()
def crash() -> str:
    """The server process dies."""
    os._exit(7)


class Name(BaseModel):
    name: str


@server.tool()
async def ask_name(ctx: Context) -> str:
    """Asks the client for a name (elicitation)."""
    answer = await ctx.elicit("What is your name?", Name)
    return f"hello {answer.data.name}" if answer.action == "accept" and answer.data else answer.action


async def _wait_mark(name: str) -> None:
    while not (MARKS / name).exists():
        await anyio.sleep(0.02)


class Confirm(BaseModel):
    confirm: bool


@server.tool()
async def transfer(amount: int, account: str, ctx: Context) -> str:
    """Waits for a cancel, then finishes what it started anyway (the spec lets it): asks the
    client to confirm once the test says go, and leaves the answer's action as a mark."""
    _mark("transfer-started")
    try:
        await anyio.sleep_forever()
    finally:
        with anyio.CancelScope(shield=True):
            _mark("transfer-cancelled")
            await _wait_mark("transfer-go")
            answer = await ctx.elicit(f"Confirm the transfer of {amount} from account {account}?", Confirm)
            _mark("transfer-answer", answer.action)
    return "unreachable"


@server.tool()
async def hold() -> str:
    """Runs until the test leaves the mark `release`."""
    _mark("hold-started")
    await _wait_mark("release")
    return "held"


@server.tool()
async def ask_model(ctx: Context) -> str:
    """Asks the client's model (sampling)."""
    from mcp import types

    result = await ctx.session.create_message(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text="Say hi"))],
        max_tokens=20,
        related_request_id=ctx.request_id,
    )
    return f"model said: {result.content.text}"


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `extra` and tells the client its tool list changed."""

    def extra() -> str:
        """Added at run time."""
        return "extra"

    server.add_tool(extra)
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.resource("memo://upstream/readme", mime_type="text/plain")
def readme() -> str:
    return "read me from upstream"


class Pin(BaseModel):
    pin: str


@server.resource("memo://upstream/vault/{name}", mime_type="text/plain")
async def vault(name: str, ctx: Context) -> str:
    """Asks the reader's client for a PIN (elicitation) before it answers."""
    answer = await ctx.elicit("Your PIN?", Pin)
    if answer.action == "accept" and answer.data:
        return f"vault opened with {answer.data.pin}"
    return answer.action


@server.prompt()
def greet(who: str) -> str:
    """Greet someone."""
    return f"Say hello to {who}."


if __name__ == "__main__":
    server.run("stdio")
