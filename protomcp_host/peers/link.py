"""One handshaken connection to a peer (`Link`), over either end of a WebSocket (`Conn`): its
frames out, the requests this host sent it (waiting for their answers), and those it sent here
(running). A link that ends fails the first and cancels the second."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

import anyio
import anyio.abc

from protomcp_host.peers.local import LocalClient
from protomcp_host.peers.messages import (
    AgentCapabilities,
    BaseMessage,
    ErrorCode,
    ErrorMessage,
    MCPBridgeProtocol,
    RequestMessage,
    ResponseMessage,
    ToolResponse,
)

HANDSHAKE_TIMEOUT = 10.0  # seconds for a WebSocket to open and for its handshake message


class Conn(Protocol):
    """One WebSocket, either end: text frames in and out."""

    async def send(self, text: str) -> None: ...
    async def receive(self) -> str:
        """The next text frame; raises ConnectionError when the socket closed."""
        ...

    async def close(self, reason: str = "") -> None: ...


class PeerCallFailed(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code.value}: {message}")
        self.code = code


class Background:
    """The hub's task group while it runs: what links, calls and timers start beside it."""

    def __init__(self) -> None:
        self.tg: anyio.abc.TaskGroup | None = None

    @property
    def running(self) -> bool:
        return self.tg is not None

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        assert self.tg is not None, "the hub is not running"
        self.tg.start_soon(func, *args)


class Link:
    """A handshaken connection to one peer."""

    def __init__(self, conn: Conn, peer: AgentCapabilities, client: LocalClient, dialled: str) -> None:
        self.conn = conn
        self.dialled = dialled  # the --peer URL this host dialled ("": the peer dialled in)
        self.peer = peer
        self.peer_id = peer.agent_id
        self.client = client
        self.pending: dict[str, asyncio.Future[BaseMessage]] = {}  # our requests, by message_id
        self.inbound: dict[str, anyio.CancelScope] = {}  # its requests running here
        self.open = True
        self._lock = anyio.Lock()

    async def send(self, message: BaseMessage) -> None:
        async with self._lock:  # one frame at a time, whole
            await self.conn.send(message.to_json())

    async def send_quietly(self, message: BaseMessage) -> None:
        try:
            await self.send(message)
        except Exception:  # the link's reader sees a closed socket and ends it
            return

    async def call(self, request: RequestMessage, wait: float) -> ToolResponse:
        """Send `request`; its response within `wait` seconds. An `error` message, no answer
        or a lost link raises PeerCallFailed."""
        future: asyncio.Future[BaseMessage] = asyncio.get_running_loop().create_future()
        self.pending[request.message_id] = future
        try:
            await self.send(request)
            with anyio.move_on_after(wait) as waited:
                reply = await future
        except (ConnectionError, OSError) as exc:
            raise PeerCallFailed(
                ErrorCode.INTERNAL_ERROR, f"peer {self.peer_id} went away ({describe(exc)})"
            ) from None
        finally:
            self.pending.pop(request.message_id, None)
        if waited.cancelled_caught:
            name = request.payload.tool_name
            raise PeerCallFailed(ErrorCode.TIMEOUT, f"peer {self.peer_id} did not answer {name} in time")
        if isinstance(reply, ErrorMessage):
            raise PeerCallFailed(reply.payload.error_code, reply.payload.error_message)
        assert isinstance(reply, ResponseMessage)
        return reply.payload

    def answer(self, reply: ResponseMessage | ErrorMessage) -> bool:
        """Hand a response to the request of ours it answers; False when none waits for it."""
        future = self.pending.get(reply.correlation_id or "")
        if future is None or future.done():
            return False
        future.set_result(reply)
        return True

    def end(self, me: str) -> bool:
        """The link is over: our requests fail (the peer went away), its requests here stop.
        False when it was ended already (a peer cut off, whose reader ends it again)."""
        if not self.open:
            return False
        self.open = False
        for message_id, future in list(self.pending.items()):
            if not future.done():
                gone = MCPBridgeProtocol.create_error(
                    me,
                    ErrorCode.INTERNAL_ERROR,
                    f"peer {self.peer_id} went away before it answered",
                    correlation_id=message_id,
                    error_type="peer_gone",
                )
                future.set_result(gone)
        self.pending.clear()
        for scope in self.inbound.values():
            scope.cancel()
        return True


def describe(exc: BaseException) -> str:
    """One readable line for an exception (the first of a group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return (str(exc) or type(exc).__name__).splitlines()[0]
