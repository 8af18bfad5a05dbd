"""A call and its cancel in one read of the tool process: the call's task is cancelled before
its first step, so its coroutine never runs its own clean-up. The call must end all the same
(no entry left behind: a process told to exit waits for its running calls)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest

from protomcp_sdk import middleware, tool
from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.runtime.process import ProcessRuntime
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire import framing as wire

pytestmark = pytest.mark.fast  # starts no process


@pytest.fixture
def registry() -> Iterator[None]:
    REGISTRY.clear()

    @tool
    async def sleepy() -> str:
        await asyncio.sleep(60)
        return "late"

    yield
    REGISTRY.clear()


async def _wait_closed(event: asyncio.Event) -> None:
    async with asyncio.timeout(10):
        await event.wait()


@pytest.mark.parametrize(
    "through", ["no middleware", "middleware seeing the result", "before-only middleware"]
)
async def test_the_call_ends_though_its_task_never_ran(registry: None, through: str) -> None:
    if through == "middleware seeing the result":

        @middleware
        async def wrapping(call, call_next):  # type: ignore[no-untyped-def]
            result = await call_next(call)
            return result

    elif through == "before-only middleware":

        @middleware
        async def waiting(call, call_next):  # type: ignore[no-untyped-def]
            await asyncio.sleep(0)  # it waits: the rest of the call runs as a task
            return await call_next(call)

    read_fd, to_process = os.pipe()
    from_process, write_fd = os.pipe()
    os.set_blocking(from_process, False)
    try:
        process = ProcessRuntime(read_fd, write_fd, "tools.py", standby=True)
        process.loaded = True
        ended: list[str] = []
        process.calls.on_call_end = lambda: ended.append("ended")
        request = pb.CallToolRequest(name="sleepy", arguments_json="{}")
        if through != "no middleware":
            request.middleware.extend(REGISTRY.middleware)
        call = pb.Envelope(request_id="r1", call_tool=request)
        cancel = pb.Envelope(cancel=pb.CancelRequest(request_id="r1"))
        process.reader.received(wire.encode(call) + wire.encode(cancel))  # one read
        for _ in range(5):  # a few loop turns: whatever was scheduled has run
            await asyncio.sleep(0)
        assert process.calls.tasks == {}
        assert ended == ["ended"]
    finally:
        for fd in (read_fd, to_process, from_process, write_fd):
            os.close(fd)
