"""`/proto-mcp`: proto-mcp (seed 000) over a binary WebSocket beside the MCP endpoint.

One MCPMessage per WebSocket message, no length prefix (uvicorn closes a connection whose
message exceeds its limit, 16 MiB, with 1009). Each connection is its own session
(protocol/protomcp.py in front of a legacy JSON-RPC session), behind the same guard as the MCP
endpoint: Host/Origin checks and bearer or OAuth authentication; tools see the caller's
verified claims, and tool-list changes stay in the connection that made them.
"""

from __future__ import annotations

import math
from typing import Any

import anyio

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.transports.http.asgi import Receive, Scope, Send
from protomcp_host.transports.http.guard import identity_of
from protomcp_host.transports.ports import Sessions

PROTO_MCP_PATH = "/proto-mcp"


class ProtoMcpEndpoint:
    def __init__(self, host: Sessions) -> None:
        self.host = host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from starlette.websockets import WebSocket

        from protomcp_host.protocol.protomcp import ProtoMcp  # when the first client comes

        ws = WebSocket(scope, receive, send)
        await ws.accept()
        proto = ProtoMcp(self.host.descriptors)
        to_client, outgoing = anyio.create_memory_object_stream[bytes](math.inf)

        def write(data: bytes, related: bytes | None = None) -> None:
            message = proto.sent(data)
            if message is not None:
                to_client.send_nowait(message.SerializeToString())

        connection = self.host.connect(write)
        identity = identity_of(scope)
        connection.session.auth = None if identity is None else identity.claims
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_pump, ws, outgoing)
                await _read(ws, proto, connection, to_client)
                tg.cancel_scope.cancel()
        finally:
            connection.cancel_all()  # the client left: what runs for it stops
            self.host.disconnect(connection)


async def _read(ws: Any, proto: Any, connection: Any, to_client: Any) -> None:
    from protomcp_host.protocol.protomcp import error_message

    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return
        data = message.get("bytes")
        if data is None:
            refusal = error_message(0, rpc.INVALID_REQUEST, "Invalid Request: proto-mcp messages are binary")
            to_client.send_nowait(refusal.SerializeToString())
            continue
        lines, answers = proto.receive(data)
        for answer in answers:
            to_client.send_nowait(answer.SerializeToString())
        for line in lines:
            connection.feed(line)


async def _pump(ws: Any, outgoing: Any) -> None:
    from starlette.websockets import WebSocketDisconnect

    async for data in outgoing:
        try:
            await ws.send_bytes(data)
        except (WebSocketDisconnect, RuntimeError):
            return
