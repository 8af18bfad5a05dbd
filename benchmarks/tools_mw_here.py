"""tools_protomcp.py's tools with a pass-through middleware in the same file: its process runs
the middleware around each call itself (no host round trip); see middleware.py."""

from tools_protomcp import blob, echo  # noqa: F401  (importing them registers them here)

from protomcp_sdk import middleware


@middleware
async def passthrough(call, call_next):
    return await call_next(call)
