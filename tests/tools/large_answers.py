"""Tool file for the HTTP answer-shape tests: slow calls with large answers, with or without
a message sent before the answer."""

import asyncio

from protomcp_sdk import Context, tool


@tool
async def slow_text(seconds: float, size: int) -> str:
    """Take `seconds`, then answer `size` characters of text (a fetched page, a file read)."""
    await asyncio.sleep(seconds)
    return "x" * size


@tool
async def progress_then_text(seconds: float, size: int, ctx: Context) -> str:
    """Report progress, take `seconds`, then answer `size` characters of text."""
    await ctx.report_progress(1, 2, "working")
    await asyncio.sleep(seconds)
    await ctx.report_progress(2, 2, "done")
    return "y" * size


_gates: dict[str, asyncio.Event] = {}


@tool
async def gated_text(key: str) -> str:
    """Answer once open_gate(key) was called (sends nothing before)."""
    await asyncio.wait_for(_gates.setdefault(key, asyncio.Event()).wait(), 30)
    return f"through {key}"


@tool
async def open_gate(key: str) -> str:
    """Let gated_text(key) answer."""
    _gates.setdefault(key, asyncio.Event()).set()
    return "opened"
