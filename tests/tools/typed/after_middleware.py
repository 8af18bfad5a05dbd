"""A middleware in a file of its own (another process) that reads every result (phase
"after") and changes a typed tool's structured result."""

from protomcp_sdk import ToolResult, middleware


@middleware(priority=5)
async def suffix_titles(call, call_next):  # type: ignore[no-untyped-def]
    result = await call_next(call)
    if isinstance(result.structured, dict) and "title" in result.structured:
        structured = {**result.structured, "title": result.structured["title"] + " (seen)"}
        return ToolResult(content=result.content, structured=structured)
    return result
