"""Two middleware of one file, next to each other in the chain: its process runs both in one
frame per phase (a segment); see middleware.py."""

from protomcp_sdk import middleware


@middleware(priority=1)
async def first(call, call_next):
    return await call_next(call)


@middleware(priority=2)
async def second(call, call_next):
    return await call_next(call)
