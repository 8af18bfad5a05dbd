"""Tool file for the stream-bound tests: a resource and a call that tells its listeners it
changed, many times over."""

import asyncio

from protomcp_sdk import Context, resource, tool


@resource("flood://note", mime_type="text/plain")
def note() -> str:
    return "a note that changes often"


@tool
async def flood(count: int, ctx: Context) -> int:
    """Say `count` times that flood://note changed (a pause now and then, as a real writer has)."""
    for done in range(count):
        ctx.resource_updated("flood://note")
        if done % 1000 == 999:
            await asyncio.sleep(0)
    return count
