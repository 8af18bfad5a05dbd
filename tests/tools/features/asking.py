"""Tools that ask the client: sampling, elicitation, roots (for the end-to-end tests)."""

import asyncio
import threading
from dataclasses import dataclass
from enum import Enum
from typing import Literal

from pydantic import BaseModel

from protomcp_sdk import Context, Message, on_roots_changed, tool

GATE = threading.Event()


@tool
async def ask_async(question: str, ctx: Context) -> str:
    """Ask the client's model from an async tool."""
    result = await ctx.sample(
        [Message("user", question)], max_tokens=50, system_prompt="Be brief.", temperature=0.2
    )
    return f"{result.model}|{result.stop_reason}|{result.text}"


@tool
def ask_sync(question: str, ctx: Context) -> str:
    """Ask the client's model from a sync tool (blocks its worker thread only)."""
    result = ctx.sample(question, max_tokens=20)
    return f"sync:{result.text}"


@tool
async def slow_async(ctx: Context) -> str:
    while not GATE.is_set():
        await asyncio.sleep(0.01)
    return "async done"


@tool
def slow_sync() -> str:
    GATE.wait(30)
    return "sync done"


@tool
def open_gate() -> str:
    GATE.set()
    return "open"


@tool
async def ask_short(ctx: Context) -> str:
    result = await ctx.sample("hello?", timeout=0.5)
    return result.text


class Color(Enum):
    RED = "red"
    GREEN = "green"


class Profile(BaseModel):
    name: str = "John Doe"
    age: int = 30
    score: float = 95.5
    status: Literal["active", "inactive"] = "active"
    color: Color = Color.RED
    verified: bool = True


@dataclass
class Confirm:
    ok: bool


@tool
async def ask_profile(ctx: Context) -> str:
    """Elicit a form (pydantic model)."""
    answer = await ctx.elicit("Your profile?", schema=Profile)
    if answer.action != "accept":
        return f"action={answer.action}"
    profile = answer.data
    assert isinstance(profile, Profile)
    return f"accept:{profile.name}:{profile.age}:{profile.color.value}:{profile.verified}"


@tool
def ask_confirm(ctx: Context) -> str:
    """Elicit a form (dataclass) from a sync tool."""
    answer = ctx.elicit("Sure?", schema=Confirm)
    return f"{answer.action}:{answer.data}"


@tool
async def ask_url(ctx: Context) -> str:
    answer = await ctx.elicit("Log in, please", url="https://example.com/login", elicitation_id="login-1")
    return f"url:{answer.action}"


@tool
async def roots(ctx: Context) -> str:
    found = await ctx.list_roots()
    return ";".join(f"{r.uri}={r.name}" for r in found)


@tool
def roots_sync(ctx: Context) -> str:
    return ";".join(r.uri for r in ctx.list_roots())


ROOTS_CHANGES = {"sync": 0, "async": 0}


@on_roots_changed
def roots_changed() -> None:
    ROOTS_CHANGES["sync"] += 1


@on_roots_changed
async def roots_changed_async() -> None:
    ROOTS_CHANGES["async"] += 1


@tool
async def roots_changes() -> str:
    return f"{ROOTS_CHANGES['sync']}/{ROOTS_CHANGES['async']}"


@tool
async def ask_twice(ctx: Context) -> str:
    """Two questions to the client at once (both are released when the call ends)."""
    await asyncio.gather(ctx.sample("one?"), ctx.sample("two?"))
    return "answered"
