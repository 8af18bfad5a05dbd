"""Tools for the combination matrix (tests/matrix/test_matrix.py).

Every scenario tool takes a `tag` the test makes unique per session and per scenario, so that
anything of one session that reaches the other can be recognised in the other's traffic."""

import asyncio
import os
import sys
import threading
import time
from pathlib import Path

from pydantic import BaseModel

from protomcp_sdk import Context, Message, prompt, resource, resource_updated, tool

VERSION = 1  # the reload scenarios rewrite this line

_events: dict[str, threading.Event] = {}
_outcomes: dict[str, str] = {}
_lock = threading.Lock()


def _event(key: str) -> threading.Event:
    with _lock:
        return _events.setdefault(key, threading.Event())


async def _wait(key: str, timeout: float = 30) -> bool:
    """Wait for _event(key) without holding a worker thread."""
    event = _event(key)
    deadline = time.monotonic() + timeout
    while not event.is_set() and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    return event.is_set()


# -- always there -------------------------------------------------------------------------
@tool
def echo(text: str) -> str:
    """Answer with the text (the 'can still call a tool' check)."""
    return text


@tool
def version() -> int:
    return VERSION


@tool
def where() -> dict[str, int]:
    """Which host process (a worker, under --workers) and which tool process answered."""
    return {"host": int(os.environ.get("PROTOMCP_HOST_PID", "0")), "pid": os.getpid()}


@tool
def touch(uri: str) -> str:
    """Tell sessions subscribed to `uri` that it changed (the tests' flush barrier)."""
    resource_updated(uri)
    return "touched"


@tool
def touch_many(uri: str, times: int) -> str:
    """`times` resource updates of `uri` at once (a flood for a listen stream nobody reads)."""
    for _ in range(times):
        resource_updated(uri)
    return f"touched {times}"


@resource("matrix://flush/{key}")
def flush_resource(key: str) -> str:
    return key


# -- tool-list control ---------------------------------------------------------------------
@tool(hidden=True)
def secret() -> str:
    """Hidden until a session enables it."""
    return "secret"


@tool(hidden=True)
def admin() -> str:
    """Hidden; only a late (timed-out) login would enable it, and it must not."""
    return "admin"


@tool
def unlock_sync(tag: str, ctx: Context) -> list[str]:
    """Enable `secret` for the calling session, from a sync tool."""
    return ctx.enable_tools(["secret"])


@tool
async def unlock_async(tag: str, ctx: Context) -> list[str]:
    """Enable `secret` for the calling session, from an async tool."""
    return await ctx.enable_tools(["secret"])


@tool
def lock_sync(tag: str, ctx: Context) -> list[str]:
    """Hide `secret` again for the calling session (principal)."""
    return ctx.disable_tools(["secret"])


def _late(tag: str, outcome: str) -> None:
    _outcomes[tag] = outcome
    _event(f"late:{tag}").set()


@tool
def late_login_sync(tag: str, ctx: Context) -> str:
    """Runs until the host's --call-timeout cancels it, then (too late) enables `admin`."""
    deadline = time.monotonic() + 60
    while not ctx.cancelled and time.monotonic() < deadline:
        time.sleep(0.005)
    try:
        outcome = f"applied {ctx.enable_tools(['admin'])}"
    except BaseException as exc:
        outcome = f"refused {type(exc).__name__}: {exc}"
    _late(tag, outcome)
    return "too late"


@tool(timeout=0.5)
async def late_login_async(tag: str, ctx: Context) -> str:
    """Its own timeout (0.5 s) cancels it; its cancellation handler then enables `admin`."""
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        try:
            outcome = f"applied {await ctx.enable_tools(['admin'])}"
        except BaseException as exc:
            outcome = f"refused {type(exc).__name__}: {exc}"
        _late(tag, outcome)
        raise
    return "too late"


@tool
async def late_outcome(tag: str) -> str:
    """What the late login's enable_tools got (waits until it has run)."""
    if not await _wait(f"late:{tag}"):
        return "the late login never ran its enable_tools"
    return _outcomes[tag]


# -- asking the client ---------------------------------------------------------------------
class Name(BaseModel):
    name: str


@tool
async def ask_all(tag: str, ctx: Context) -> str:
    """Sampling, elicitation and roots from an async tool."""
    sampled = await ctx.sample(f"sample {tag}", max_tokens=20)
    elicited = await ctx.elicit(f"elicit {tag}", schema=Name)
    roots = await ctx.list_roots()
    name = elicited.data.name if elicited.data is not None else None
    return f"{sampled.text}|{elicited.action}:{name}|{','.join(str(r.uri) for r in roots)}"


@tool
def ask_all_sync(tag: str, ctx: Context) -> str:
    """Sampling, elicitation and roots from a sync tool."""
    sampled = ctx.sample(f"sample {tag}", max_tokens=20)
    elicited = ctx.elicit(f"elicit {tag}", schema=Name)
    roots = ctx.list_roots()
    name = elicited.data.name if elicited.data is not None else None
    return f"{sampled.text}|{elicited.action}:{name}|{','.join(str(r.uri) for r in roots)}"


# -- resources and prompts (with log messages of their own) --------------------------------
@resource("matrix://note/{tag}", mime_type="text/plain")
def note(tag: str, ctx: Context) -> str:
    ctx.info(f"reading note {tag}")
    return f"note {tag}"


@prompt(description="A prompt that logs")
async def greet(tag: str, ctx: Context) -> list[Message]:
    await ctx.info(f"prompting {tag}")
    return [Message("user", f"hello {tag}")]


# -- progress, print, sizes ----------------------------------------------------------------
@tool
async def progress_steps(tag: str, steps: int, ctx: Context) -> str:
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"{tag} step {i + 1}")
    return f"progressed {tag}"


@tool
def print_secret(tag: str) -> str:
    """print() on stdout and stderr; the lines must reach only the calling session."""
    print(f"stdout of {tag}", flush=True)
    print(f"stderr of {tag}", file=sys.stderr, flush=True)
    return f"printed {tag}"


@tool
def blob(tag: str, size: int) -> str:
    """An answer of `size` characters that starts with the tag."""
    return tag + "x" * (size - len(tag))


# -- cancel ----------------------------------------------------------------------------------
@tool
async def wait_cancel(tag: str, ctx: Context) -> str:
    """Report progress, then wait to be cancelled (or for open_gate(tag))."""
    await ctx.report_progress(0, 1, f"{tag} started")
    try:
        await _wait(f"gate:{tag}", 60)
    except asyncio.CancelledError:
        _event(f"cancelled:{tag}").set()
        raise
    return f"released {tag}"


@tool
async def open_gate(tag: str) -> str:
    _event(f"gate:{tag}").set()
    return f"opened {tag}"


@tool
async def was_cancelled(tag: str) -> str:
    """Waits until wait_cancel(tag) has seen its cancellation."""
    return "cancelled" if await _wait(f"cancelled:{tag}") else "not cancelled"


# -- tasks -----------------------------------------------------------------------------------
@tool(task="optional")
async def task_job(tag: str, ctx: Context) -> str:
    """Runs as an MCP task until open_gate(tag)."""
    if ctx.task_id:
        await ctx.set_task_status(f"working {tag}")
    await _wait(f"gate:{tag}", 60)
    return f"task done {tag}"


@tool(task="optional")
async def task_file(tag: str, path: str) -> str:
    """Runs as an MCP task until `path` exists (a gate any process of a cluster sees)."""
    for _ in range(6000):
        if Path(path).exists():
            return f"task done {tag}"
        await asyncio.sleep(0.005)
    return f"{tag} gave up"


# -- reload and crash ------------------------------------------------------------------------
@tool
async def wait_file(tag: str, path: str, ctx: Context) -> str:
    """Report progress, then wait until `path` exists (a gate that survives a reload)."""
    await ctx.report_progress(0, 1, f"{tag} started")
    for _ in range(6000):
        if Path(path).exists():
            return f"{tag} finished in version {VERSION}"
        await asyncio.sleep(0.005)
    return f"{tag} gave up"


@tool
async def crash(tag: str, ctx: Context) -> str:
    """Report progress, then the tool process exits mid-call."""
    await ctx.report_progress(0, 1, f"{tag} started")
    os._exit(7)
