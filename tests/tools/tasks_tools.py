"""Tool file for the task tests: tools that run as MCP tasks."""

import asyncio
import os
from pathlib import Path

from protomcp_sdk import Context, ToolError, tool

_gates: dict[str, asyncio.Event] = {}


def _gate(key: str) -> asyncio.Event:
    return _gates.setdefault(key, asyncio.Event())


@tool(task="optional")
async def job(key: str, ctx: Context) -> str:
    """Wait until release(key) is called; report the task's status on the way."""
    if ctx.task_id:
        await ctx.set_task_status(f"waiting for {key}")
    try:
        await asyncio.wait_for(_gate(key).wait(), 30)
    except asyncio.CancelledError:
        await ctx.info(f"job {key} was cancelled")  # reaches the client as a log message
        raise
    return f"job {key} done (task {'yes' if ctx.task_id else 'no'})"


@tool
async def release(key: str) -> str:
    """Let job(key) finish."""
    _gate(key).set()
    return f"released {key}"


@tool(task="required")
def report(n: int) -> int:
    """Only runs as a task."""
    return n * 2


@tool(task="optional")
def broken(reason: str) -> str:
    """Fails with an isError result (with a code, so the result has a _meta of its own)."""
    raise ToolError(reason, code="no_paper")


@tool(task="optional")
async def asks(ctx: Context) -> str:
    """Moves its task to input_required and back, then waits for release('asks')."""
    await ctx.set_task_status("need an answer", input_required=True)
    await ctx.set_task_status("got it")
    await asyncio.wait_for(_gate("asks").wait(), 30)
    return "asked"


@tool(task="optional")
async def counts(steps: int, ctx: Context) -> str:
    """Reports progress; in a task it becomes the status message."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps)
    await asyncio.wait_for(_gate("counts").wait(), 30)
    return "counted"


@tool(task="optional")
def crash(code: int) -> str:
    """The tool process exits at once."""
    os._exit(code)


@tool
def pid() -> int:
    """The tool process's pid."""
    return os.getpid()


@tool(task="optional")
async def until_file(path: str) -> str:
    """Wait until a file exists (a gate that survives a reload into another process)."""
    for _ in range(3000):
        if Path(path).exists():
            return f"saw {Path(path).name} in process {os.getpid()}"
        await asyncio.sleep(0.01)
    return "gave up"


@tool
def plain(x: int) -> int:
    """Never runs as a task (taskSupport forbidden)."""
    return x
