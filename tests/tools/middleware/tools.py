"""Tools wrapped by the middleware in mw.py (another tool process)."""

from protomcp_sdk import Context, tool


@tool
async def shout(text: str, ctx: Context) -> str:
    await ctx.report_progress(1, 1, "shouting")
    return text


@tool
def add(a: int, b: int) -> int:
    return a + b


@tool
def reject_me() -> str:
    return "never"


@tool
def crash_mw() -> str:
    return "never"


@tool
def hang_mw() -> str:
    return "never"


@tool
def kill_mw() -> str:
    return "never"


@tool
def short() -> str:
    return "never"
