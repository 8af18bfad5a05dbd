"""A hidden tool one session unlocks for itself: tool-list control per session (per principal
in the 2026-07-28 era), for the isolation tests."""

from protomcp_sdk import Context, tool


@tool(hidden=True)
def reset_the_reactor() -> str:
    """Reset the reactor core (operators only)."""
    return "reset"


@tool
async def operator_login(ctx: Context) -> str:
    """Log in as an operator: unlocks the reactor tools for this session."""
    await ctx.enable_tools(["reset_the_reactor"])
    who = (ctx.auth or {}).get("sub")
    return f"unlocked {who}" if who else "unlocked"
