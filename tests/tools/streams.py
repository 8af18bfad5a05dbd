"""Tool file for the HTTP tests: calls that stream and wait, to drop and resume connections."""

import asyncio

from protomcp_sdk import Context, ToolResult, tool

_gates: dict[str, asyncio.Event] = {}


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
async def staged(key: str, ctx: Context) -> str:
    """Report progress 1, wait until open_gate(key), report progress 2 and log, then finish."""
    await ctx.report_progress(1, 2, "first half")
    await asyncio.wait_for(_gates.setdefault(key, asyncio.Event()).wait(), 30)
    await ctx.report_progress(2, 2, "second half")
    await ctx.info(f"{key} done")
    return f"finished {key}"


@tool
async def open_gate(key: str) -> str:
    """Let staged(key) go on."""
    _gates.setdefault(key, asyncio.Event()).set()
    return "opened"


@tool
async def tick(seconds: float, ctx: Context) -> str:
    """Report that it started, then take `seconds` to finish."""
    await ctx.report_progress(0, 1, "started")
    await asyncio.sleep(seconds)
    return "ticked"


@tool
def hide(name: str) -> ToolResult:
    """Hide a tool from the calling session only."""
    return ToolResult(["hidden"], disable_tools=[name])


@tool
def whoami(ctx: Context) -> dict:
    """The verified claims the host passed for this call (empty without OAuth)."""
    return ctx.auth or {}
