"""A tool file with a @lifespan: it records start and stop (with this process's pid) in the
file named by LIFESPAN_LOG, and can be told to fail at start (LIFESPAN_FAIL=1)."""

import asyncio
import os
import time

from protomcp_sdk import Context, lifespan, tool

LOG = os.environ["LIFESPAN_LOG"]
VERSION = 1


def record(event: str) -> None:
    with open(LOG, "a") as log:
        log.write(f"{event} {VERSION} {os.getpid()} {time.monotonic()}\n")


@lifespan
async def pool():
    await asyncio.sleep(0)  # an async start, as opening a pool would be
    if os.environ.get("LIFESPAN_FAIL") == "1":
        raise ConnectionError("database unreachable")
    record("start")
    yield {"pool": f"pool-{VERSION}", "pid": os.getpid()}
    await asyncio.sleep(0)
    record("stop")


@tool
def state(ctx: Context) -> dict:
    """What the lifespan yielded, as a sync tool sees it."""
    return {"pool": ctx.state["pool"], "pid": ctx.state["pid"], "version": VERSION}


@tool
async def slow(flag: str, ctx: Context) -> str:
    """Wait until the file `flag` exists, then answer with the pool (still open: the lifespan
    ends after the calls drain)."""
    record("slow-begin")
    async with asyncio.timeout(30):
        while not os.path.exists(flag):
            await asyncio.sleep(0.02)
    record("slow-end")
    return ctx.state["pool"]
