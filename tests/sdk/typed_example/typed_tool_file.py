"""A tool file written against the SDK's types: tests/sdk/test_typing.py runs mypy --strict on it.

Each decorator must hand back the function as it was, so a call with the wrong types is an
error. The lines marked ``# type: ignore[...]`` are such errors: were a decorator to lose the
function's type, mypy (warn_unused_ignores) would report the ignore as unused.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import assert_type

from protomcp_sdk import (
    Context,
    Message,
    Text,
    ToolCall,
    ToolResult,
    completion,
    env,
    lifespan,
    middleware,
    on_roots_changed,
    prompt,
    resource,
    tool,
)


@tool
def add(a: int, b: int = 0) -> int:
    """Add two numbers."""
    return a + b


@tool(name="shout", read_only=True, tags=["text"], meta={"anthropic/searchHint": "loud"})
async def shout(text: str, ctx: Context) -> ToolResult:
    await ctx.info(f"shouting {len(text)} characters")
    return ToolResult([Text(text.upper())], structured={"length": len(text)})


@tool("named")
def named(flag: bool) -> str | None:
    return "yes" if flag else None


@tool()
def empty_options() -> list[str]:
    return []


@resource("notes://{note_id}", mime_type="text/plain")
def note(note_id: str) -> str:
    return f"note {note_id}"


@prompt
def review(code: str) -> list[Message]:
    return [Message("user", f"Review:\n{code}")]


@prompt("summarise", description="Summarise a text")
async def summarise(text: str, words: int = 50) -> str:
    return f"Summarise in {words} words: {text}"


@completion(argument="code", prompt="review")
def complete_code(value: str) -> list[str]:
    return [value + "()"]


@middleware
async def audit(call: ToolCall, call_next: Callable[[ToolCall], Awaitable[ToolResult]]) -> ToolResult:
    call.arguments["audited"] = True
    return await call_next(call)


@middleware(priority=10, name="timing")
async def timing(call: ToolCall, call_next: Callable[[ToolCall], Awaitable[ToolResult]]) -> ToolResult:
    return await call_next(call)


@lifespan
async def state() -> AsyncIterator[dict[str, int]]:
    yield {"connections": 1}


@on_roots_changed
def forget_roots() -> None:
    pass


API_KEY = env("API_KEY", "the service's key", secret=True)


async def check(ctx: Context) -> None:
    """What the decorators kept (never run: mypy reads it)."""
    assert_type(add(1, 2), int)
    assert_type(await shout("hi", ctx), ToolResult)
    assert_type(await summarise("text"), str)
    assert_type(named(True), str | None)
    assert_type(empty_options(), list[str])
    assert_type(note("7"), str)
    assert_type(review("x = 1"), list[Message])
    assert_type(complete_code("pri"), list[str])
    assert_type(state(), AsyncIterator[dict[str, int]])
    assert_type(forget_roots(), None)
    assert_type(API_KEY, str | None)
    add("1", 2)  # type: ignore[arg-type]
    note(7)  # type: ignore[arg-type]
    await summarise("text", words="many")  # type: ignore[arg-type]
    review()  # type: ignore[call-arg]
    length: str = add(1)  # type: ignore[assignment]
    del length
