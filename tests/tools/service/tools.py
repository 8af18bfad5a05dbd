"""Tools for the service test (tests/oauth/test_service_cluster.py): the user's state, a tool
given a --rate-limit, a large answer on demand, and a call held open until a gate opens. Each
says which host process (a --workers worker) served it; `tag` names the call in the audit log."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import orjson

from protomcp_sdk import Context, ToolResult, UserStateError, tool

HOST = int(os.environ.get("PROTOMCP_HOST_PID", "0"))
CHUNK = "0123456789abcdef" * 65536  # 1 MiB


def answer(**structured: Any) -> ToolResult:
    return ToolResult([orjson.dumps(structured).decode()], structured={**structured, "host": HOST})


def unavailable(error: UserStateError) -> ToolResult:
    """The error result the call would have had (UserStateError), saying which host it was."""
    return ToolResult([str(error)], structured={"host": HOST}, is_error=True)


@tool
async def note(key: str, value: Any, ctx: Context, tag: str = "") -> ToolResult:
    """Keep a value in the caller's state."""
    try:
        await ctx.user_state.set(key, value)
    except UserStateError as error:
        return unavailable(error)
    return answer()


@tool
def read(key: str, ctx: Context, tag: str = "") -> ToolResult:
    """The caller's value under `key` ("<none>": it has none)."""
    try:
        return answer(value=ctx.user_state.get(key, "<none>"))
    except UserStateError as error:
        return unavailable(error)


@tool
def limited(tag: str = "") -> dict[str, Any]:
    """A tool the hosts give a --rate-limit."""
    return {"host": HOST}


@tool
def big(mib: int, tag: str = "", fail: bool = False) -> ToolResult:
    """`mib` MiB of text, then the host's pid (`fail`: as an error result)."""
    return ToolResult([CHUNK * mib, str(HOST)], is_error=fail)


@tool
async def hold(gate: str, mark: str, tag: str = "") -> dict[str, Any]:
    """Write this host's pid to `mark`, then wait until the file `gate` exists."""
    with open(mark, "w") as file:
        file.write(str(HOST))
    while not os.path.exists(gate):
        await asyncio.sleep(0.02)
    return {"host": HOST}


@tool
def crash(tag: str = "") -> str:
    """End this tool process mid-call."""
    os._exit(3)
