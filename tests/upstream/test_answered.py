"""Which of our requests a stdio upstream answered, even one the mcp client gave up
(`protomcp_host.upstream.answered`): over memory streams, as stdio_client hands them over."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import anyio
import pytest

from protomcp_host.upstream.answered import watch_answers

pytest.importorskip("mcp")


class Request:
    answered = False


async def test_a_request_is_marked_answered_when_its_result_or_error_arrives() -> None:
    from mcp.shared.message import SessionMessage
    from mcp.types import ErrorData, JSONRPCError, JSONRPCRequest, JSONRPCResponse

    owner: ContextVar[Any] = ContextVar("owner", default=None)
    to_upstream, sent = anyio.create_memory_object_stream[Any](10)
    from_upstream, received = anyio.create_memory_object_stream[Any](10)
    read, write = watch_answers(received, to_upstream, owner)
    done, failed, waiting = Request(), Request(), Request()

    async def send(request: Request | None, request_id: int) -> None:
        owner.set(request)  # this task's own context, as in the forwarding task
        await write.send(SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call")))

    for request_id, request in enumerate([done, failed, waiting, None], 1):  # None: a ping, nobody's
        async with anyio.create_task_group() as tg:
            tg.start_soon(send, request, request_id)
    assert [(await sent.receive()).message.id for _ in range(4)] == [1, 2, 3, 4]

    answers: list[JSONRPCResponse | JSONRPCError] = [
        JSONRPCResponse(jsonrpc="2.0", id="1", result={}),  # an id echoed as a string is the same
        JSONRPCError(jsonrpc="2.0", id=2, error=ErrorData(code=-32000, message="failed")),
        JSONRPCResponse(jsonrpc="2.0", id=4, result={}),
    ]
    for answer in answers:
        await from_upstream.send(SessionMessage(answer))
    from_upstream.close()
    async with read:
        assert [item.message async for item in read] == answers  # passed on as they came
    assert done.answered and failed.answered and not waiting.answered
