"""`/proto-mcp`: proto-mcp over a binary WebSocket beside the MCP endpoint.

One MCPMessage per WebSocket message, no length prefix (uvicorn closes a connection whose
message exceeds its limit, 16 MiB, with 1009). Each connection is its own session
(proto_mcp/codec.py in front of a stateful JSON-RPC session), behind the same guard as the MCP
endpoint: Host/Origin checks and bearer or OAuth authentication; tools see the caller's
verified claims, and tool-list changes stay in the connection that made them.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import anyio

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.transports.http.asgi import Receive, Scope, Send
from protomcp_host.transports.http.guard import identity_of
from protomcp_host.transports.ports import Sessions

PROTO_MCP_PATH = "/proto-mcp"
NOTICE_LIMIT = 32 * 1024 * 1024  # bytes waiting for a client past which its notifications are dropped


class ProtoMcpEndpoint:
    def __init__(self, host: Sessions) -> None:
        self.host = host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from starlette.websockets import WebSocket

        from protomcp_host.proto_mcp.codec import (
            ProtoMcp,
            is_notice,
            serialized,
        )  # when the first client comes

        ws = WebSocket(scope, receive, send)
        await ws.accept()
        proto = ProtoMcp(self.host.descriptors)
        to_client = Outgoing()

        def write(data: bytes, related: bytes | None = None) -> None:
            message = proto.sent(data)
            if message is not None:
                to_client.put(serialized(message), droppable=is_notice(message))

        connection = self.host.connect(write)
        identity = identity_of(scope)
        connection.session.auth = None if identity is None else identity.claims
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_pump, ws, to_client)
                await _read(ws, proto, connection, to_client)
                tg.cancel_scope.cancel()
        finally:
            connection.cancel_all()  # the client left: what runs for it stops
            self.host.disconnect(connection)


async def _read(ws: Any, proto: Any, connection: Any, to_client: Outgoing) -> None:
    from protomcp_host.proto_mcp.codec import error_message

    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return
        data = message.get("bytes")
        if data is None:
            refusal = error_message(0, rpc.INVALID_REQUEST, "Invalid Request: proto-mcp messages are binary")
            to_client.put(refusal.SerializeToString())
            continue
        lines, answers = proto.receive(data)
        for answer in answers:
            to_client.put(answer.SerializeToString())
        for line in lines:
            connection.feed(line)


async def _pump(ws: Any, outgoing: Outgoing) -> None:
    from starlette.websockets import WebSocketDisconnect

    while True:
        data = await outgoing.get()
        try:
            await ws.send_bytes(data)
        except (WebSocketDisconnect, RuntimeError):
            return


class Outgoing:
    """What waits to be sent to one client. Answers always wait their turn; notifications
    (progress, log lines, list changes) are dropped while more than `limit` bytes wait, so a
    client that stops reading cannot make a chatty tool grow the host's memory without bound."""

    def __init__(self, limit: int = NOTICE_LIMIT) -> None:
        self.limit = limit
        self.waiting: deque[bytes] = deque()
        self.size = 0
        self.dropped = 0
        self._ready = anyio.Event()

    def put(self, data: bytes, droppable: bool = False) -> None:
        if droppable and self.size > self.limit:
            self.dropped += 1
            return
        self.waiting.append(data)
        self.size += len(data)
        self._ready.set()

    async def get(self) -> bytes:
        while not self.waiting:
            self._ready = anyio.Event()
            await self._ready.wait()
        data = self.waiting.popleft()
        self.size -= len(data)
        return data
