"""A middleware around every call of tools.py (tests/oauth/test_service_cluster.py): it works
after the call too, so each result — a 20 MiB one as well — goes through its process."""

from typing import Any

from protomcp_sdk import ToolResult, middleware


@middleware
async def stamp(call: Any, call_next: Any) -> ToolResult:
    result = await call_next(call)
    return ToolResult(
        content=[*result.content, "[mw]"],
        structured=result.structured,
        is_error=result.is_error,
        meta=result.meta,
    )
