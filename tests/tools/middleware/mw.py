"""Middleware for the tools of another file (tools.py): each behaviour keyed by tool name."""

import asyncio
import os

from protomcp_sdk import ToolError, ToolResult, middleware, tool


@middleware(priority=1)
async def outer(call, call_next):
    if call.name == "reject_me":
        raise ToolError("not allowed today")
    if call.name == "crash_mw":
        raise RuntimeError("middleware bug")
    if call.name == "hang_mw":
        await asyncio.Event().wait()
    if call.name == "kill_mw":
        os._exit(3)
    if call.name == "short":
        return ToolResult(content=["answered by middleware"])
    result = await call_next(call)
    if call.name == "shout":
        return ToolResult(content=[block.text + "[outer]" for block in result.content])
    return result


@middleware(priority=5)
async def inner(call, call_next):
    if call.name == "shout":
        call.arguments["text"] = call.arguments["text"].upper()
    if call.name == "add" and call.arguments.get("a") == 13:
        call.arguments["a"] = "thirteen"  # not an int: the host validates again
    result = await call_next(call)
    if call.name == "shout":
        return ToolResult(content=[block.text + "[inner]" for block in result.content])
    return result


@tool
def mw_status() -> str:
    return "middleware file loaded"
