"""The tool process's middleware runner (protomcp_sdk.runtime.middleware) without a host:
invocation ids are never reused, and a call the host starts again abandons the stale invocation."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from protomcp_sdk.authoring.middleware import middleware_spec
from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.runtime.middleware import MiddlewareRunner
from protomcp_sdk.wire import protomcp_pb2 as pb


class FakeProcess:
    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.sent: list[pb.Envelope] = []
        self.grew = asyncio.Event()

    def send(self, envelope: pb.Envelope) -> None:
        self.sent.append(envelope)
        self.grew.set()

    async def replies(self, count: int) -> list[pb.MiddlewareInterceptResponse]:
        async with asyncio.timeout(10):
            while len(self.sent) < count:
                self.grew.clear()
                await self.grew.wait()
        return [envelope.middleware_intercept_response for envelope in self.sent]


@pytest.fixture
def passing() -> Iterator[None]:
    async def passthrough(call: Any, call_next: Any) -> Any:
        return await call_next(call)

    REGISTRY.add_middleware(middleware_spec(passthrough, 0, "passthrough"))
    yield
    REGISTRY.middleware.pop("passthrough", None)


def _intercept(request_id: str, call_id: str, phase: str, params: dict[str, Any]) -> pb.Envelope:
    request = pb.MiddlewareInterceptRequest(
        middleware_name="passthrough", phase=phase, params_json=orjson.dumps(params).decode()
    )
    return pb.Envelope(request_id=request_id, call_id=call_id, middleware_intercept=request)


async def test_ids_are_unique_and_a_restarted_call_abandons_the_stale_invocation(passing: None) -> None:
    process = FakeProcess()
    runner = MiddlewareRunner(process)  # type: ignore[arg-type]
    call = {"name": "t", "arguments": {}}
    runner.intercept(_intercept("h1", "c1", "before", call))
    await process.replies(1)  # it passed the call on (call_next)
    first = runner.running[("c1", "passthrough")]
    # The host reuses the call id for a new call: the first invocation's call is over.
    runner.intercept(_intercept("h2", "c1", "before", call))
    await process.replies(2)
    second = runner.running[("c1", "passthrough")]
    assert second is not first and second.serial != first.serial
    assert first.task is not None
    with pytest.raises(asyncio.CancelledError):
        await first.task
    runner.intercept(_intercept("h3", "c1", "after", {"content": [], "isError": False}))
    replies = await process.replies(3)
    assert [envelope.request_id for envelope in process.sent] == ["h1", "h2", "h3"]
    assert not replies[2].reject
    assert runner.running == {}
    await asyncio.sleep(0)  # let the abandoned task's callbacks run: it must not reply
    assert len(process.sent) == 3
