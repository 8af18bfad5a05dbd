"""Before-only middleware (each ends with `return await call_next(call)`) around the tools of
their own file: the tool process runs them up to the tool by hand, then the tool as a call
without middleware; one that suspends continues as a task."""

import asyncio
import threading

from protomcp_sdk import ToolError, middleware, tool


@middleware(priority=1)
async def gate(call, call_next):
    if call.name == "blocked":
        raise ToolError("blocked here")
    if call.name == "crash":
        raise RuntimeError("gate bug")
    if call.name == "waits":
        await asyncio.sleep(0.01)  # suspends: the rest of the call runs as a task
        call.arguments["text"] += "+waited"
    if call.name == "hangs":
        await asyncio.Event().wait()
    return await call_next(call)


@middleware(priority=2)
async def stamp(call, call_next):
    if "text" in call.arguments:
        call.arguments["text"] = f"[{call.arguments['text']}]"
    if call.name == "count":
        call.arguments["n"] = "many"  # not an int: checked again before the tool runs
    return await call_next(call)


@tool
def echo_sync(text: str) -> str:
    return f"{text}@{threading.current_thread().name}"


@tool
async def echo_async(text: str) -> str:
    return text


@tool
def waits(text: str) -> str:
    return text


@tool
def hangs() -> str:
    return "never"


@tool
def blocked() -> str:
    return "never"


@tool
def crash() -> str:
    return "never"


@tool
def count(n: int) -> int:
    return n


@tool
def big(n: int) -> str:
    return "y" * n
