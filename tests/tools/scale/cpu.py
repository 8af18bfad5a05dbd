"""Tools for the scale-out tests: CPU-bound work, which process answered, a crash, a counter
kept in module state (per process), a resource update published for listeners."""

from __future__ import annotations

import asyncio
import os
import time

from protomcp_sdk import Context, resource, tool

CALLS = {"count": 0}  # module-level state: one per tool process


@tool
def burn(n: int = 200_000, tag: str = "") -> dict[str, object]:
    """Spin the CPU for n loop steps (a sync tool holds the GIL), then say which process ran it."""
    total = 0
    for i in range(n):
        total += i * i
    CALLS["count"] += 1
    host = int(os.environ.get("PROTOMCP_HOST_PID", "0"))
    return {"pid": os.getpid(), "host": host, "tag": tag, "calls": CALLS["count"]}


@tool
def whoami() -> dict[str, int]:
    """The process id of the tool process and of its host."""
    return {"pid": os.getpid(), "host": int(os.environ.get("PROTOMCP_HOST_PID", "0"))}


@tool
def tally(folder: str, tag: str) -> dict[str, int]:
    """Record that the call `tag` ran, in a file of that name: a second run of the same call
    fails (the file exists). Says which host ran it."""
    host = int(os.environ.get("PROTOMCP_HOST_PID", "0"))
    with open(os.path.join(folder, tag), "x") as file:
        file.write(str(host))
    return {"host": host}


@tool
def sees(ctx: Context) -> dict[str, object]:
    """Which host answered, and the tools it shows this caller (its principal's tool list)."""
    return {"host": int(os.environ.get("PROTOMCP_HOST_PID", "0")), "active": ctx.active_tools()}


@tool
def has_env(name: str) -> bool:
    """Whether the tool process has this environment variable."""
    return name in os.environ


@tool
def crash() -> str:
    """Exit the tool process at once (a crash mid-call)."""
    os._exit(3)


@tool
def slow(seconds: float = 30.0, mark: str = "") -> str:
    """Sleep (an in-flight call to interrupt); `mark`: a file created once it runs."""
    if mark:
        with open(mark, "w") as file:
            file.write(str(os.getpid()))
    time.sleep(seconds)
    return "slept"


@tool
async def touch(uri: str, ctx: Context) -> str:
    """Tell listeners that a resource changed."""
    ctx.resource_updated(uri)
    return f"touched {uri}"


@resource("scale://note", mime_type="text/plain")
def note() -> str:
    return f"note from {os.getpid()}"


@tool(task="optional")
async def wait_for(path: str, mark: str = "") -> dict[str, object]:
    """Wait until a file exists (a gate another test step opens), then say which host ran it;
    `mark`: a file created once it runs."""
    if mark:
        with open(mark, "w") as file:
            file.write(str(os.getpid()))
    deadline = time.monotonic() + 120  # the gate opens after other steps, slow on a loaded machine
    while not os.path.exists(path) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    return {"saw": os.path.exists(path), "host": int(os.environ.get("PROTOMCP_HOST_PID", "0"))}


@tool(task="optional")
async def confirm(ctx: Context) -> str:
    """Ask the client for a name (in a task: input_required until tasks/update answers)."""
    answer = await ctx.elicit(
        "Name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="who"
    )
    return f"{answer.action}:{(answer.data or {}).get('name')}"
