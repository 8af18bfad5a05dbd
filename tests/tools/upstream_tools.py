"""A protomcp tool file served over HTTP as another host's upstream, and a middleware for
the upstream tests (the host that serves an upstream applies its local middleware to them)."""

import asyncio
from pathlib import Path

from protomcp_sdk import Context, tool


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


@tool
async def steps(n: int, ctx: Context) -> str:
    """Report n progress steps."""
    for i in range(n):
        await ctx.report_progress(i + 1, n, f"step {i + 1}")
    return f"{n} steps"


@tool
async def hold(path: str) -> str:
    """Wait until cancelled; leaves PATH.started and PATH.cancelled."""
    Path(path + ".started").write_text("")
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        Path(path + ".cancelled").write_text("")
        raise
    return "not cancelled"


@tool
async def ask_pin_twice(ctx: Context) -> str:
    """Ask the same question twice (each answer is used once: the client is asked twice)."""
    schema = {"type": "object", "properties": {"pin": {"type": "string"}}}
    first = await ctx.elicit("Your PIN?", schema)
    second = await ctx.elicit("Your PIN?", schema)
    return f"pins {first.data['pin']} {second.data['pin']}"


@tool
async def ask_pin(ctx: Context) -> str:
    """Ask the caller's client for a PIN (elicitation)."""
    answer = await ctx.elicit("Your PIN?", {"type": "object", "properties": {"pin": {"type": "string"}}})
    return f"pin {answer.data['pin']}" if answer.action == "accept" else answer.action
