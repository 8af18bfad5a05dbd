"""A middleware that only passes calls on: the cost of the middleware round trips alone."""

from protomcp_sdk import middleware


@middleware
async def passthrough(call, call_next):
    return await call_next(call)
