"""A pass-through middleware: wraps every call of every tool, changes nothing."""

from protomcp_sdk import middleware, tool

MW_VERSION = 1  # the middleware-reload scenario rewrites this line


@middleware(priority=10)
async def passthrough(call, call_next):  # type: ignore[no-untyped-def]
    return await call_next(call)


@tool
def mw_version() -> int:
    return MW_VERSION
