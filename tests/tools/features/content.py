"""Resources, templates, prompts and completions for the end-to-end tests."""

import asyncio
import base64
import threading
from typing import Annotated

from pydantic import Field

from protomcp_sdk import (
    Audio,
    Context,
    EmbeddedResource,
    Image,
    Message,
    ResourceLink,
    ResourceNotFound,
    completion,
    prompt,
    resource,
    resource_updated,
    tool,
)

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
NOTES = {1: "first note", 2: "second note"}
COUNTER = {"value": 0}


@resource("test://static-text", name="static-text", title="Static text", mime_type="text/plain")
def static_text() -> str:
    """A fixed text."""
    return "This is the content of the static text resource."


@resource("test://static-binary", mime_type="image/png", size=len(PNG))
def static_binary() -> bytes:
    return PNG


@resource("test://big-binary", mime_type="application/octet-stream")
def big_binary() -> bytes:
    return bytes(range(256)) * (10 * 1024 * 1024 // 256)  # 10 MiB


@resource("test://counter", mime_type="text/plain")
async def counter() -> str:
    return str(COUNTER["value"])


@resource("test://several")
def several() -> list:
    return ["one", b"\x00\x01", EmbeddedResource("test://other", text="{}", mime_type="application/json")]


@resource("notes://{id}", mime_type="text/markdown", description="One note by number.")
def note(id: int) -> str:
    if id not in NOTES:
        raise ResourceNotFound(f"no note {id}")
    return f"# Note {id}\n{NOTES[id]}"


@resource("file:///{+path}")
async def file(path: str) -> str:
    return f"path={path}"


@resource("test://broken")
def broken() -> str:
    raise RuntimeError("disk on fire")


@tool
async def bump(ctx: Context) -> str:
    """Change test://counter and tell subscribers."""
    COUNTER["value"] += 1
    await ctx.resource_updated("test://counter")
    return str(COUNTER["value"])


@tool
def bump_from_thread() -> str:
    """Change test://counter from a thread of the tool file (outside any call)."""
    COUNTER["value"] += 1
    thread = threading.Thread(target=resource_updated, args=("test://counter",))
    thread.start()
    thread.join()
    return str(COUNTER["value"])


@prompt
def simple() -> str:
    """A prompt without arguments."""
    return "Say hello."


@prompt(title="Greeting", description="Greet someone.")
def greet(
    name: Annotated[str, Field(description="Who to greet")], times: int = 1, style: str = "plain"
) -> list[Message]:
    return [Message("user", f"Greet {name} {times}x ({style})"), Message("assistant", "Will do.")]


@prompt
async def media() -> list[Message]:
    await asyncio.sleep(0)
    return [
        Message("user", Image(PNG, "image/png")),
        Message("user", Audio(b"RIFF", "audio/wav")),
        Message("user", ResourceLink("test://static-text", "static-text")),
        Message("user", EmbeddedResource("test://static-text", text="embedded", mime_type="text/plain")),
    ]


@prompt
def failing() -> str:
    raise ValueError("no prompt today")


@completion(prompt="greet", argument="name")
def complete_name(value: str, context: dict[str, str]) -> list[str]:
    names = ["alice", "albert", "bob"] if context.get("style") != "formal" else ["Dr. Alice"]
    return [n for n in names if n.lower().startswith(value.lower())]


@completion(prompt="greet", argument="style")
async def complete_style(value: str) -> list[str]:
    return [f"style{i}" for i in range(150)]


@completion(resource="notes://{id}", argument="id")
def complete_note(value: str, context: dict[str, str]) -> list[str]:
    return [str(n) for n in NOTES if str(n).startswith(value)]


GATE = asyncio.Event()


WAITING = {"reads": 0}


@resource("test://gated")
async def gated() -> str:
    WAITING["reads"] += 1
    try:
        await GATE.wait()
    finally:
        WAITING["reads"] -= 1
    return "opened"


@tool
async def open_gate_async() -> str:
    GATE.set()
    return f"reads waiting: {WAITING['reads']}"


@resource("test://die")
def die() -> str:
    import os

    os._exit(3)
