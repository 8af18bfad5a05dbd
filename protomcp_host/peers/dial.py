"""The links this host dials (`--peer ws://HOST:PORT/bridge`): the WebSocket, the handshake from
the dialling side, then the link, connected again with the supervisor's backoff whenever it
ends. `websockets` is imported only here, when a link is dialled."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from protomcp_host.peers.link import HANDSHAKE_TIMEOUT, Conn, describe
from protomcp_host.peers.messages import (
    AgentCapabilities,
    ErrorMessage,
    HandshakeResponse,
    MCPBridgeProtocol,
    parse_message,
)
from protomcp_host.peers.settings import PeerSettings
from protomcp_host.processes.supervisor import Backoff

Serve = Callable[[Conn, AgentCapabilities, str], Awaitable[str]]
"""(the socket, the peer's capabilities, the URL dialled) -> why the link closed."""


class Dialler:
    def __init__(
        self,
        settings: PeerSettings,
        capabilities: Callable[[], AgentCapabilities],
        reserve: Callable[[str, str], str],
        serve: Serve,
        stderr: Callable[[str], None],
    ) -> None:
        self.me = settings.agent_id
        self.token = settings.token
        self.capabilities = capabilities  # what this host tells a peer at the handshake
        self.reserve = reserve  # (URL, the id the peer answered with) -> why it may not have it
        self.serve = serve
        self.stderr = stderr

    async def dial_forever(self, url: str) -> None:
        backoff = Backoff()
        while True:
            began = time.monotonic()
            try:
                reason = await self._dial(url)
            except Exception as exc:
                reason = describe(exc) + _refusal_text(exc)
            delay = backoff.next_delay(time.monotonic() - began)
            self.stderr(f"protomcp: bridge: {url}: {reason}; connecting again in {delay:g}s")
            await anyio.sleep(delay)

    async def _dial(self, url: str) -> str:
        from websockets.asyncio.client import connect

        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        async with connect(
            url, additional_headers=headers, open_timeout=HANDSHAKE_TIMEOUT, max_size=2**24
        ) as ws:
            conn = ClientConn(ws)
            hello = MCPBridgeProtocol.create_handshake_request(self.me, self.capabilities())
            await conn.send(hello.to_json())
            with anyio.fail_after(HANDSHAKE_TIMEOUT):
                reply = parse_message(await conn.receive())
            if isinstance(reply, ErrorMessage):
                return f"refused: {reply.payload.error_code.value}: {reply.payload.error_message}"
            if not isinstance(reply, HandshakeResponse) or reply.correlation_id != hello.message_id:
                return f"the peer answered the handshake with a {reply.message_type.value} message"
            if not reply.payload.accepted:
                return f"peer {reply.payload.agent_id} did not accept the handshake"
            peer = AgentCapabilities(**reply.payload.model_dump(exclude={"accepted"}))
            problem = self.reserve(url, peer.agent_id)
            if problem:
                await conn.close(problem)
                return problem
            return await self.serve(conn, peer, url)


class ClientConn:
    """The dialling end: a `websockets` client connection."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws

    async def send(self, text: str) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            await self.ws.send(text)
        except ConnectionClosed as exc:
            raise ConnectionError(str(exc)) from None

    async def receive(self) -> str:
        from websockets.exceptions import ConnectionClosed

        try:
            data = await self.ws.recv()
        except ConnectionClosed as exc:
            raise ConnectionError(str(exc)) from None
        return data if isinstance(data, str) else data.decode()

    async def close(self, reason: str = "") -> None:
        await self.ws.close(1000, reason[:120])


def _refusal_text(exc: BaseException) -> str:
    """What a peer's /bridge said when it refused the WebSocket handshake (why, which flag)."""
    body = getattr(getattr(exc, "response", None), "body", None)
    text = bytes(body).decode(errors="replace").strip() if isinstance(body, bytes | bytearray) else ""
    return f" ({text.splitlines()[0]})" if text else ""
