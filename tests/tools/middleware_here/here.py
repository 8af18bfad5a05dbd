"""Middleware and the tools they wrap in one file: the tool process runs them around its own
tools, in the same frame as the call (no round trip to the host per middleware)."""

import asyncio
import os
import threading

from protomcp_sdk import Context, ToolError, ToolResult, middleware, tool

WRAPPED = ("shout", "shout_sync", "echo_plain")  # echo_plain: in plain.py, another process


@middleware(priority=1)
async def outer(call, call_next):
    if call.name == "reject_me":
        raise ToolError("not allowed today")
    if call.name == "crash_mw":
        raise RuntimeError("middleware bug")
    if call.name == "short":
        return ToolResult(content=["answered by middleware"])
    if call.name == "bad_return":
        return 42
    if call.name == "hang_mw":
        await asyncio.Event().wait()
    result = await call_next(call)
    if call.name in (*WRAPPED, "hide_add"):
        return ToolResult(content=[block.text + "[outer]" for block in result.content])
    return result


@middleware(priority=5)
async def inner(call, call_next):
    if call.name in WRAPPED:
        call.arguments["text"] = call.arguments["text"].upper()
    if call.name == "add" and call.arguments.get("a") == 13:
        call.arguments["a"] = "thirteen"  # not an int: checked again before the tool runs
    if call.name == "inner_rejects":
        raise ToolError("inner says no")
    result = await call_next(call)
    if call.name in WRAPPED:
        return ToolResult(content=[block.text + "[inner]" for block in result.content])
    return result


@middleware(priority=9)
async def passthrough(call, call_next):
    return await call_next(call)


@tool
async def shout(text: str, ctx: Context) -> str:
    await ctx.report_progress(1, 1, "shouting")
    return text


@tool
def shout_sync(text: str) -> str:
    return f"{text}@{threading.current_thread().name}"


@tool
def add(a: int, b: int) -> int:
    return a + b


@tool
def where() -> str:
    return str(os.getpid())


@tool
def reject_me() -> str:
    return "never"


@tool
def inner_rejects() -> str:
    return "never"


@tool
def crash_mw() -> str:
    return "never"


@tool
def short() -> str:
    return "never"


@tool
def bad_return() -> str:
    return "never"


@tool
def hang_mw() -> str:
    return "never"


@tool
async def slow(ctx: Context) -> str:
    await asyncio.sleep(60)
    return "too late"


@tool
def hide_add() -> ToolResult:
    return ToolResult(content=["add is hidden"], disable_tools=["add"])


@tool
def big(n: int) -> str:
    return "x" * n
