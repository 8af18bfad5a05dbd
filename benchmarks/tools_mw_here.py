"""tools_protomcp.py's tools with a pass-through middleware in the same file: its process runs
the middleware around each call itself (no host round trip); see middleware.py."""

from protomcp_sdk import middleware, tool


@middleware
async def passthrough(call, call_next):
    return await call_next(call)


@tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@tool
def blob(n: int) -> str:
    """Return a string of n 'x' characters."""
    return "x" * n
