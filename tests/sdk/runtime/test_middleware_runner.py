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
from protomcp_sdk.wire import envelope_pb2 as pb

pytestmark = pytest.mark.fast  # starts no process


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
        result = await call_next(call)  # waits for the result: it has a phase "after"
        return result

    spec = middleware_spec(passthrough, 0, "passthrough")
    assert not spec.before_only
    REGISTRY.add_middleware(spec)
    yield
    REGISTRY.middleware.pop("passthrough", None)


def _intercept(request_id: str, call_id: str, phase: str, params: dict[str, Any]) -> pb.Envelope:
    request = pb.MiddlewareInterceptRequest(
        middleware_name="passthrough", phase=phase, params_json=orjson.dumps(params).decode()
    )
    return pb.Envelope(request_id=request_id, call_id=call_id, middleware_intercept=request)


async def test_ids_are_unique_and_a_restarted_call_abandons_the_stale_invocation(passing: None) -> None:
    process = FakeProcess()
    runner = MiddlewareRunner(process.loop, process.send)
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


async def _audit(call: Any, call_next: Any) -> Any:
    call.arguments["user"] = "me"
    if call.name == "forbidden":
        raise ValueError("no")
    return await call_next(call)


async def _timed(call: Any, call_next: Any) -> Any:
    try:
        return await call_next(call)
    finally:
        print("after")


async def _kept(call: Any, call_next: Any) -> Any:
    result = await call_next(call)
    return result


async def _twice(call: Any, call_next: Any) -> Any:
    log = call_next
    return await log(call)


async def _inner(call: Any, call_next: Any) -> Any:
    async def later() -> Any:
        return await call_next(call)

    return await call_next(call)


@pytest.mark.parametrize(
    ("fn", "expected"), [(_audit, True), (_timed, False), (_kept, False), (_twice, False), (_inner, False)]
)
def test_before_only_is_detected_from_the_source(fn: Any, expected: bool) -> None:
    assert middleware_spec(fn, 0, None).before_only is expected


async def test_a_before_only_middleware_replies_once() -> None:
    REGISTRY.add_middleware(middleware_spec(_audit, 0, "passthrough"))
    try:
        process = FakeProcess()
        runner = MiddlewareRunner(process.loop, process.send)
        assert runner.registrations()[0].before_only
        runner.intercept(_intercept("h1", "c1", "before", {"name": "t", "arguments": {}}))
        # It waited for nothing, so it ran to its end at once, without a task: one reply (the
        # passed-on call), no phase "after" to wait for.
        assert runner.running == {}
        [reply] = await process.replies(1)
        assert orjson.loads(reply.params_json)["arguments"] == {"user": "me"}
        await asyncio.sleep(0)
        assert len(process.sent) == 1
    finally:
        REGISTRY.middleware.pop("passthrough", None)
