"""Tool file used by the end-to-end tests: each tool shows one behaviour."""

import asyncio
import threading
from dataclasses import dataclass

from protomcp_sdk import Context, ToolError, tool

_async_gates: dict[str, asyncio.Event] = {}
_sync_gates: dict[str, threading.Event] = {}
_lock = threading.Lock()


def _async_gate(key: str) -> asyncio.Event:
    return _async_gates.setdefault(key, asyncio.Event())


def _sync_gate(key: str) -> threading.Event:
    with _lock:
        return _sync_gates.setdefault(key, threading.Event())


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@tool
def size(data: str) -> int:
    """Length of the argument (for big inputs)."""
    return len(data)


@tool
async def wait_async(key: str) -> str:
    """Wait (async) until release(key) is called."""
    await asyncio.wait_for(_async_gate(key).wait(), 30)
    return f"released {key}"


@tool
def wait_sync(key: str) -> str:
    """Wait (in a worker thread) until release(key) is called."""
    if not _sync_gate(key).wait(30):
        raise TimeoutError(key)
    return f"released {key}"


@tool
async def release(key: str) -> str:
    """Open the gates named key (async: asyncio events are only safe to set on the loop)."""
    _sync_gate(key).set()
    _async_gate(key).set()
    return "ok"


@dataclass
class Point:
    x: int
    y: int


@tool
def point(x: int, y: int) -> Point:
    """A structured result."""
    return Point(x, y)


@tool
def fail(message: str) -> str:
    """Raise a plain exception."""
    raise RuntimeError(message)


@tool
def refuse(item: str) -> str:
    """Raise a ToolError with a suggestion."""
    raise ToolError(f"no item named {item}", code="not_found", suggestion="call list_items first")


@tool
def chatty(lines: int) -> str:
    """print() a lot: stdout of a tool process must never reach the MCP stream."""
    for i in range(lines):
        print(f"chatty line {i}")
    return "printed"


@tool
async def progress(steps: int, ctx: Context) -> str:
    """Report progress and log each step."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
        await ctx.info(f"step {i + 1}")
    return "done"
