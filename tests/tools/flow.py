"""Tool file for the flow-control tests: large answers, gates, and quick calls."""

import asyncio
import threading

from protomcp_sdk import Context, tool

_gates: dict[str, asyncio.Event] = {}
_sync_gates: dict[str, threading.Event] = {}
_lock = threading.Lock()


def _gate(key: str) -> asyncio.Event:
    return _gates.setdefault(key, asyncio.Event())


def _sync_gate(key: str) -> threading.Event:
    with _lock:
        return _sync_gates.setdefault(key, threading.Event())


@tool
def big(size: int) -> str:
    """A text result of `size` bytes."""
    return "x" * size


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
async def hold(key: str, ctx: Context) -> str:
    """Wait until release(key) (or 60 s), after telling the client it started."""
    await ctx.info(f"holding {key}")
    await asyncio.wait_for(_gate(key).wait(), 60)
    return f"released {key}"


@tool
def hold_sync(key: str) -> str:
    """Wait in a worker thread until release(key) (or 60 s)."""
    _sync_gate(key).wait(60)
    return f"released {key}"


@tool
async def release(key: str) -> str:
    """Open the gate named key."""
    _sync_gate(key).set()
    _gate(key).set()
    return "ok"


@tool
async def shout(count: int, size: int, ctx: Context) -> str:
    """Log `count` messages of `size` bytes each."""
    for i in range(count):
        await ctx.info(f"{i:08d}" + "y" * size)
    return "shouted"
