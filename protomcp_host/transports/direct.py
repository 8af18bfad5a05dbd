"""Drive a Host in-process, as a client would, for `protomcp list` and `protomcp call`.

The same Host, Session, Router, Supervisor and tool process as `protomcp run`; only
the stdio transport is replaced by direct function calls.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import orjson

from protomcp_host.processes.launch import StartupError
from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.transports.ports import StartStop

Request = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


class RequestFailed(Exception):
    """The host answered with a JSON-RPC error."""


@asynccontextmanager
async def direct_client(
    host: StartStop, *, on_message: Callable[[dict[str, Any]], None] | None = None
) -> AsyncIterator[Request]:
    """Start `host` (an app.Host the caller made), initialize a session, and yield
    `request(method, params)`."""
    waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
    ids = itertools.count(1)

    def write(data: bytes, related: bytes | None = None) -> None:
        message = orjson.loads(data)
        request_id = message.get("id") if isinstance(message, dict) else None
        future = waiting.pop(request_id, None) if isinstance(request_id, int) else None
        if future is not None:
            future.set_result(message)
        elif on_message is not None:
            on_message(message)

    try:
        async with anyio.create_task_group() as tg:
            try:
                await host.start(tg)
            except StartupError:
                await host.stop(0)
                raise
            router = host.connect(write)

            async def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
                request_id = next(ids)
                waiting[request_id] = future = asyncio.get_running_loop().create_future()
                router.feed(rpc.request(request_id, method, params))
                reply = await future
                if "error" in reply:
                    raise RequestFailed(reply["error"]["message"])
                return reply["result"]

            try:
                await request(
                    "initialize",
                    {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "protomcp-cli", "version": "1"},
                    },
                )
                router.feed(rpc.notification("notifications/initialized"))
                yield request
            finally:
                await host.stop(5)
                tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # the task group wraps even a single error
        raise _sole(group) from None


def _sole(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one error inside nested single-error groups (StartupError, RequestFailed...), else the group."""
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return group if isinstance(error, BaseExceptionGroup) else error


async def list_tools(request: Request) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = await request("tools/list", {"cursor": cursor} if cursor else {})
        tools.extend(page["tools"])
        cursor = page.get("nextCursor")
        if not cursor:
            return tools
