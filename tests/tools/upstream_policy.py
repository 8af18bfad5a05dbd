"""Local policy for upstream tools: middleware that sees every call, upstream ones included."""

from protomcp_sdk import ToolError, ToolResult, middleware, tool


@middleware(priority=1)
async def policy(call, call_next):
    if call.name == "ex_add" and call.arguments.get("a") == 13:
        raise ToolError("13 is not allowed here")
    result = await call_next(call)
    if call.name in ("ex_add", "remote_multiply") and not result.is_error:
        return ToolResult(
            content=[block.text + " [checked]" for block in result.content], structured=result.structured
        )
    return result


@tool
def local_hello() -> str:
    """A local tool beside the upstream ones."""
    return "hello"
