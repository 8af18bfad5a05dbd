"""ctx.user_state from async and sync tools, a resource and a prompt (tests/e2e/test_e2e_user_state.py,
tests/oauth/test_user_state_cluster.py)."""

import asyncio
import os
from typing import Any

from protomcp_sdk import Context, UserStateError, prompt, resource, tool


@tool
async def remember(key: str, value: Any, ctx: Context, ttl: float | None = None) -> str:
    """Keep a value (async)."""
    await ctx.user_state.set(key, value, ttl=ttl)
    return "kept"


@tool
def remember_sync(key: str, value: Any, ctx: Context) -> str:
    """Keep a value (sync)."""
    ctx.user_state.set(key, value)
    return "kept"


@tool
def recall(key: str, ctx: Context) -> dict[str, Any]:
    """Read a value (sync); `host`: the host process that served the call (a --workers worker),
    `process`: this tool process (one of --processes N)."""
    return {"value": ctx.user_state.get(key, "<none>"), "host": os.getppid(), "process": os.getpid()}


@tool
async def recall_async(key: str, ctx: Context) -> dict[str, Any]:
    """Read a value (async)."""
    return {"value": await ctx.user_state.get(key, "<none>")}


@tool
async def forget(key: str, ctx: Context) -> bool:
    """Delete a key: whether it held a value."""
    return bool(await ctx.user_state.delete(key))


@tool
async def fill(count: int, ctx: Context) -> str:
    """Set keys k0, k1, ... until `count` are set or the host refuses one."""
    for i in range(count):
        try:
            await ctx.user_state.set(f"k{i}", i)
        except UserStateError as exc:
            return f"refused k{i}: {exc}"
    return f"set {count}"


@tool
async def keep_tuple(ctx: Context) -> str:
    """A value JSON cannot hold faithfully."""
    await ctx.user_state.set("t", {"pair": (1, 2)})
    return "kept"


_left: list[tuple[asyncio.Event, asyncio.Task[str]]] = []


@tool
async def leave_behind(ctx: Context) -> str:
    """Start a task that uses ctx.user_state once this call is over (left_behind lets it go)."""
    go = asyncio.Event()

    async def later() -> str:
        await go.wait()
        try:
            await ctx.user_state.set("late", 1)
        except UserStateError as exc:
            return str(exc)
        return "stored"

    _left.append((go, asyncio.get_running_loop().create_task(later())))
    return "started"


@tool
async def left_behind() -> str:
    """What the task leave_behind started got."""
    go, task = _left.pop()
    go.set()
    return await task


@resource("state://{key}")
async def state_of(key: str, ctx: Context) -> str:
    return str(await ctx.user_state.get(key, "<none>"))


@prompt
def recall_prompt(key: str, ctx: Context) -> str:
    """The value under a key, in a prompt."""
    return f"value: {ctx.user_state.get(key, '<none>')}"
