"""The deprecated HTTP+SSE transport of MCP 2024-11-05, for clients that predate Streamable HTTP.

The client opens ``GET /sse``; the first event (``endpoint``) tells it where to POST its
messages (``/messages?session_id=...``); every answer and notification comes back on the SSE
stream. The session lives exactly as long as that stream, and belongs to the caller who opened
it: with authentication, a POST from anyone else gets 404, as an unknown session would.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

import anyio

from protomcp_host.telemetry import metrics
from protomcp_host.transports.http.asgi import (
    Receive,
    Scope,
    Send,
    cancel_on_disconnect,
    read_json,
    refuse,
    respond,
)
from protomcp_host.transports.http.event_stream import KEEP_ALIVE, EventStream, ReplayBudget, dropped_line
from protomcp_host.transports.http.guard import identity_of
from protomcp_host.transports.http.sessions import REPLAY_BYTES
from protomcp_host.transports.ports import Sessions

if TYPE_CHECKING:
    from protomcp_host.transports.http.streamable import HttpOptions

SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache, no-transform")]


class SseSession:
    def __init__(
        self, session_id: str, host: Sessions, principal: str | None, replay_bytes: int = REPLAY_BYTES
    ) -> None:
        self.id = session_id
        self.host = host
        self.principal = principal  # the authenticated caller that opened it: only it may use it
        # Sent messages stay (bounded by count and by bytes): the oldest go once it is full.
        self.budget = ReplayBudget(replay_bytes, lambda: host.stderr(dropped_line(session_id, replay_bytes)))
        self.stream = EventStream("0", budget=self.budget)
        self.router = host.connect(self.write)

    def write(self, data: bytes, related: bytes | None = None) -> None:
        self.stream.push(data)

    def close(self) -> None:
        self.router.cancel_all()
        self.host.disconnect(self.router)
        self.stream.close()


class SseTransport:
    def __init__(self, host: Sessions, options: HttpOptions, messages_path: str) -> None:
        self.host = host
        self.options = options
        self.messages_path = messages_path
        self.sessions: dict[str, SseSession] = {}
        self.draining = False

    async def stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        """GET /sse: one session, for as long as this response lasts."""
        if self.draining:
            await refuse(send, 503, "Service Unavailable: the server is shutting down")
            return
        identity = identity_of(scope)
        principal = None if identity is None else identity.principal
        session = SseSession(secrets.token_urlsafe(24), self.host, principal, self.options.replay_bytes)
        self.sessions[session.id] = session
        endpoint = f"{self.messages_path}?session_id={session.id}".encode()
        if metrics.ON:
            metrics.stream_opened()
        try:
            await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
            await send(
                {
                    "type": "http.response.body",
                    "body": b"event: endpoint\ndata: " + endpoint + b"\n\n",
                    "more_body": True,
                }
            )
            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel_on_disconnect, receive, tg.cancel_scope)
                cursor = 0
                while True:
                    events = session.stream.after(cursor)
                    if events:
                        chunk = b"".join(b"event: message\ndata: " + data + b"\n\n" for _, data in events)
                        with anyio.fail_after(self.options.send_timeout):
                            await send({"type": "http.response.body", "body": chunk, "more_body": True})
                        cursor = events[-1][0]
                        continue
                    if session.stream.closed:
                        break
                    if not await session.stream.wait(self.options.keepalive):
                        with anyio.fail_after(self.options.send_timeout):
                            await send({"type": "http.response.body", "body": KEEP_ALIVE, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                tg.cancel_scope.cancel()
        except (OSError, TimeoutError):
            pass  # the client is gone or too slow
        finally:
            self.sessions.pop(session.id, None)
            session.close()
            if metrics.ON:
                metrics.stream_closed()

    async def message(self, scope: Scope, receive: Receive, send: Send) -> None:
        """POST /messages?session_id=...: one JSON-RPC message (or batch); answers go on the stream.
        (Served while the host drains too: the session's stream is open until the drain ends.)"""
        session_id = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("session_id", [""])[0]
        session = self.sessions.get(session_id)
        identity = identity_of(scope)
        if session is None or session.principal != (None if identity is None else identity.principal):
            await refuse(send, 404, "Session not found: open GET /sse first and use the endpoint it names")
            return
        read = await read_json(receive, send, self.options.max_body, self.options.read_timeout)
        if read is None:
            return
        body = read[0]
        # The verified claims of this request's token, for the calls it starts (ctx.auth).
        session.router.session.auth = None if identity is None else identity.claims
        session.router.feed(body)
        await respond(send, 202, b"Accepted", content_type=b"text/plain")

    # -- lifetime (same interface as StreamableHTTP) -------------------------------------
    async def expire_idle(self) -> None:
        await anyio.sleep_forever()  # a session ends with its stream

    def drain(self) -> None:
        self.draining = True

    def calls_running(self) -> int:
        return sum(len(session.router.session.in_flight) for session in self.sessions.values())

    async def wait_idle(self) -> None:
        for session in list(self.sessions.values()):
            await session.router.wait_idle()

    def fail_all(self, message: str) -> None:
        """The drain timed out: every call still running is answered with an error, on its stream."""
        for session in list(self.sessions.values()):
            session.router.fail_all(message)

    def close_all(self) -> None:
        for session in list(self.sessions.values()):
            session.close()
