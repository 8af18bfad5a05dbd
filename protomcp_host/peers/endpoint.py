"""`/bridge`: the WebSocket endpoint peers dial (behind the HTTP guard: Host/Origin checks and
the peers' own credential, credentials.py)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from protomcp_host.peers.hub import PeerHub
from protomcp_host.transports.http.guard import identity_of

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

BRIDGE_PATH = "/bridge"


class StarletteConn:
    """The accepting end: a starlette WebSocket (served by uvicorn)."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws

    async def send(self, text: str) -> None:
        from starlette.websockets import WebSocketDisconnect

        try:
            await self.ws.send_text(text)
        except (WebSocketDisconnect, RuntimeError) as exc:
            raise ConnectionError(str(exc) or "closed") from None

    async def receive(self) -> str:
        message = await self.ws.receive()
        if message["type"] == "websocket.disconnect":
            raise ConnectionError(f"closed ({message.get('code', 1000)})")
        text = message.get("text")
        return text if text is not None else (message.get("bytes") or b"").decode()

    async def close(self, reason: str = "") -> None:
        with contextlib.suppress(RuntimeError):  # closed already
            await self.ws.close(1000, reason[:120])


class BridgeEndpoint:
    """The ASGI app of /bridge."""

    def __init__(self, hub: PeerHub) -> None:
        self.hub = hub

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from starlette.websockets import WebSocket

        identity = identity_of(scope)
        ws = WebSocket(scope, receive, send)
        await ws.accept()
        conn = StarletteConn(ws)
        try:
            await self.hub.accept(conn, identity.principal if identity is not None else "")
        finally:
            await conn.close()
