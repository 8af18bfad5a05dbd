"""Tool file for the control-plane tests: tool-list control, per-tool timeouts, logging."""

import asyncio
import logging

from protomcp_sdk import Context, ToolResult, tool

log = logging.getLogger("control.audit")


@tool(hidden=True)
def secret() -> str:
    """Only visible once enabled."""
    return "found"


@tool
async def unlock(ctx: Context) -> list[str]:
    """Enable the secret tool from an async tool."""
    return await ctx.enable_tools(["secret"])


@tool
def unlock_sync(ctx: Context) -> list[str]:
    """Enable the secret tool from a sync tool."""
    return ctx.enable_tools(["secret"])


@tool
async def flip(times: int, ctx: Context) -> list[str]:
    """Enable and disable the secret tool `times` times, then enable it."""
    for _ in range(times):
        await ctx.enable_tools(["secret"])
        await ctx.disable_tools(["secret"])
    return await ctx.enable_tools(["secret"])


@tool
def lock() -> ToolResult:
    """Disable the secret tool through the result."""
    return ToolResult(content=["locked"], disable_tools=["secret"])


@tool
async def allow(names: list[str], ctx: Context) -> list[str]:
    return await ctx.set_allowed(names)


@tool
def block(names: list[str], ctx: Context) -> list[str]:
    return ctx.set_blocked(names)


@tool
async def batch(
    ctx: Context, enable: tuple[str, ...] = (), disable: tuple[str, ...] = (), allow: tuple[str, ...] = ()
) -> list[str]:
    return await ctx.update_tools(enable=enable, disable=disable, allow=allow or None)


@tool
def active(ctx: Context) -> list[str]:
    return ctx.active_tools()


@tool(tags={"admin"})
def admin_only() -> str:
    return "admin"


@tool(tags={"public"})
def public() -> str:
    return "public"


@tool(timeout=0.5)
async def stuck() -> str:
    """Never finishes: its own timeout (0.5 s) ends it."""
    await asyncio.Event().wait()
    return "never"


@tool
def log_records() -> str:
    """Logs through the standard logging module at three levels."""
    log.debug("debug record")
    log.info("info record")
    log.warning("warning record")
    return "logged"


@tool
def log_failure() -> str:
    """Logs an exception with its traceback."""
    try:
        1 / 0  # noqa: B018
    except ZeroDivisionError:
        log.exception("division failed")
    return "logged"
