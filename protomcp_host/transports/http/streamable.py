"""MCP Streamable HTTP (revisions 2025-03-26 to 2025-11-25) as an ASGI app: one endpoint where
POST carries client messages, GET opens the session's standalone SSE stream and DELETE ends
the session. Many sessions at once share the host's tool processes.

A request's answer comes back as plain JSON when it comes alone, however long it took; as an
SSE stream (priming event, numbered events, keep-alive comments) when something must reach the
client before it (progress, a log, a request to the client) or when the keep-alive interval
passes with nothing to send. Streams survive dropped connections: a GET with ``Last-Event-ID``
replays what was missed (an answer awaited as JSON is lost with its connection).
"""

from __future__ import annotations

import functools
import secrets
import time
from dataclasses import dataclass
from typing import Any

import anyio
import orjson

from protomcp_host.processes.loop import running_loop
from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.jsontypes import is_id
from protomcp_host.protocol.methods import starts_calls
from protomcp_host.protocol.session import BATCH_VERSIONS, SERVER_BUSY, SUPPORTED_VERSIONS
from protomcp_host.telemetry import metrics
from protomcp_host.transports.http import step_up
from protomcp_host.transports.http.affinity import REPLACEMENT_WAIT, Affinity
from protomcp_host.transports.http.asgi import (
    Receive,
    Scope,
    Send,
    cancel_on_disconnect,
    disconnected,
    header,
    read_json,
    refuse,
    respond,
    respond_json,
)
from protomcp_host.transports.http.event_stream import (
    KEEP_ALIVE,
    EventStream,
    parse_event_id,
    sse_event,
    sse_priming,
)
from protomcp_host.transports.http.guard import IDENTITY, Identity
from protomcp_host.transports.http.modern import (
    MAX_LISTENS,
    STREAM_BYTES,
    ModernEndpoint,
    is_modern_request,
    modern_header,
)
from protomcp_host.transports.http.sessions import REPLAY_BYTES, RESPONSE_PREFIX, HttpSession
from protomcp_host.transports.http.timers import Deadline
from protomcp_host.transports.ports import Sessions

SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),  # nginx: do not buffer the stream
]


MIN_OFFERED_ID = 32  # characters: nginx's $request_id is 32 hex digits (128 random bits)


@dataclass
class HttpOptions:
    max_body: int = 4 * 1024 * 1024  # bytes per POST body (413 above)
    session_timeout: float = 1800.0  # seconds a session may sit idle before it expires (0 = never)
    max_sessions: int = 10_000  # sessions at once; a new initialize beyond it gets 503
    keepalive: float = 15.0  # seconds between keep-alive comments on a quiet SSE stream
    retry_ms: int = 1000  # reconnection delay SSE clients are told to use
    # seconds a request's answer is awaited without watching for its client leaving (most come
    # this fast); a slower one is awaited with a watcher, and comes as JSON all the same
    quick_answer: float = 0.05
    read_timeout: float = 30.0  # seconds a client may take to send a request body
    send_timeout: float = 30.0  # seconds a client may take to accept a chunk of a stream
    turn_timeout: float = 30.0  # seconds a tool call beyond --max-in-flight waits for its turn
    replay_bytes: int = REPLAY_BYTES  # bytes of stream messages one session keeps; the oldest go
    # 2026-07-28 requests: the memory one request's unread messages may take (a listen stream is
    # then cut off, a call's oldest notifications go), and the listen streams one client (its
    # token's principal, else its address) may have open at once (429 beyond)
    stream_bytes: int = STREAM_BYTES
    max_listens: int = MAX_LISTENS
    # --session-id-header: a balancer's per-request id (nginx $request_id) a new session takes as
    # its id, so that `hash $http_mcp_session_id` sends its later requests to this host
    session_id_header: bytes | None = None


class StreamableHTTP:
    """The MCP endpoint (mounted at --path by the server)."""

    def __init__(self, host: Sessions, options: HttpOptions, affinity: Affinity | None = None) -> None:
        self.host = host
        self.options = options
        self.affinity = affinity  # --workers N: the worker each session lives in (affinity.py)
        self.sessions: dict[str, HttpSession] = {}
        self.draining = False
        self.expired = 0
        self.modern = ModernEndpoint(
            host,
            options.keepalive,
            _principal,
            _claims,
            budget=options.stream_bytes,
            max_listens=options.max_listens,
            send_timeout=options.send_timeout,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        if self.affinity is not None:
            session_id = header(scope, b"mcp-session-id")
            if session_id is not None and self.affinity.owner(session_id) != self.affinity.worker:
                owner = self.affinity.owner(session_id)
                await self.affinity.forward(owner, scope, None, receive, send, self._limits, self.host.stderr)
                return
        if method != "POST" and self._modern(scope):  # the 2026-07-28 era is POST only
            await respond(send, 405, b"", headers=[(b"allow", b"POST")])
        elif method == "POST":
            await self._post(scope, receive, send)
        elif method == "GET":
            await self._get(scope, receive, send)
        elif method == "DELETE":
            await self._delete(scope, send)
        else:
            await respond(send, 405, b"", headers=[(b"allow", b"GET, POST, DELETE")])

    @property
    def _limits(self) -> tuple[int, float]:
        """A request body's most bytes and the seconds it may take (for a relayed request)."""
        return self.options.max_body, self.options.read_timeout

    # -- the era of a request -----------------------------------------------------------
    def _stateful(self, scope: Scope) -> bool:
        """It names a live stateful session (modern requests carry none; one they do is ignored)."""
        session_id = header(scope, b"mcp-session-id")
        return session_id is not None and session_id in self.sessions

    def _modern(self, scope: Scope) -> bool:
        """Its MCP-Protocol-Version header names no handshake revision, outside a stateful session."""
        return modern_header(scope) and not self._stateful(scope)

    # -- session lookup ----------------------------------------------------------------
    async def _find(self, scope: Scope, send: Send) -> HttpSession | None:
        """The session a request names, or None after answering 400/404 for it."""
        session_id = header(scope, b"mcp-session-id")
        if session_id is None:
            await refuse(send, 400, "Bad Request: missing Mcp-Session-Id header; send initialize first")
            return None
        hs = self.sessions.get(session_id)
        if hs is None or hs.principal != _principal(scope):  # another caller's id is unknown here
            await refuse(send, 404, "Session not found: it expired or was ended; initialize a new one")
            return None
        version = header(scope, b"mcp-protocol-version")
        if version is not None and version not in SUPPORTED_VERSIONS:
            await refuse(
                send,
                400,
                f"Bad Request: unsupported MCP-Protocol-Version {version!r}; "
                f"supported: {', '.join(SUPPORTED_VERSIONS)}",
            )
            return None
        identity = _identity(scope)
        hs.session.auth = None if identity is None else identity.claims  # for the calls this request starts
        hs.touch()
        return hs

    def _new_session(self, scope: Scope) -> HttpSession:
        session_id = self._offered_id(scope) or (
            self.affinity.new_id() if self.affinity is not None else secrets.token_urlsafe(24)
        )  # 192 random bits, visible ASCII
        hs = HttpSession(session_id, self.host, _principal(scope), self.options.replay_bytes)
        self.sessions[session_id] = hs
        return hs

    def _offered_id(self, scope: Scope) -> str | None:
        """The balancer's id for a new session (--session-id-header): used only when it is long
        enough to be unguessable, plain visible ASCII, and no session has it."""
        if self.options.session_id_header is None:
            return None
        offered = header(scope, self.options.session_id_header)
        if (
            offered is None
            or not MIN_OFFERED_ID <= len(offered) <= 128
            or not offered.isascii()
            or not all(c.isalnum() or c in "-_." for c in offered)
            or offered in self.sessions
        ):
            return None
        return offered

    def _end(self, hs: HttpSession) -> None:
        self.sessions.pop(hs.id, None)
        hs.close()

    # -- POST: client messages ---------------------------------------------------------------
    async def _post(self, scope: Scope, receive: Receive, send: Send) -> None:
        # (While the host drains, a POST on a connection still open is served: a balancer would
        # not repeat a refused POST elsewhere. server.py refuses new connections instead.)
        accept = header(scope, b"accept") or ""
        modern = self._modern(scope)
        if not _accepts(accept, "application/json") or not (modern or _accepts(accept, "text/event-stream")):
            await refuse(send, 406, "Not Acceptable: Accept must list application/json and text/event-stream")
            return
        content_type = (header(scope, b"content-type") or "").split(";")[0].strip().lower()
        if content_type != "application/json":
            await refuse(send, 415, "Unsupported Media Type: POST a JSON-RPC message as application/json")
            return
        read = await read_json(receive, send, self.options.max_body, self.options.read_timeout)
        if read is None:
            return
        body, parsed = read
        if modern or (is_modern_request(scope, parsed) and not self._stateful(scope)):  # no session
            await self.modern.post(scope, body, parsed, receive, send)
            return
        if isinstance(parsed, dict) and parsed.get("method") == "initialize":
            offered = self._offered_id(scope)
            if self.affinity is not None and offered and self.affinity.owner(offered) != self.affinity.worker:
                owner = self.affinity.owner(offered)  # the worker its later requests will reach
                await self.affinity.forward(
                    owner, scope, body, receive, send, self._limits, self.host.stderr, wait=REPLACEMENT_WAIT
                )
                return
            await self._initialize(body, parsed, scope, send)
            return
        hs = await self._find(scope, send)
        if hs is None:
            return
        hs.connections += 1
        try:
            if isinstance(parsed, list):
                await self._batch(hs, body, parsed, receive, send)
                return
            message = rpc.classify(parsed)
            if isinstance(message, rpc.Invalid):
                await respond_json(send, 400, rpc.error(message.id, message.code, message.message))
            elif isinstance(message, rpc.Request):
                refused = step_up.refusal(self.host, scope, message)
                if refused is not None:
                    await step_up.refuse(send, message, refused)
                    return
                await self._request(hs, message, body, scope, receive, send)
            else:  # a notification or a response: nothing to answer
                hs.router.feed(body)
                if isinstance(message, rpc.Notification) and message.method == "notifications/cancelled":
                    request_id = message.params.get("requestId")
                    if is_id(request_id):
                        hs.cancelled(orjson.dumps(request_id))
                await respond(send, 202)
        finally:
            hs.connections -= 1
            hs.touch()

    async def _initialize(self, body: bytes, parsed: dict[str, Any], scope: Scope, send: Send) -> None:
        message = rpc.classify(parsed)
        if not isinstance(message, rpc.Request):
            await respond_json(send, 400, rpc.error(rpc.NULL_ID, rpc.INVALID_REQUEST, "Invalid Request"))
            return
        if len(self.sessions) >= self.options.max_sessions:
            await refuse(
                send, 503, f"Service Unavailable: {len(self.sessions)} sessions are open, the most allowed"
            )
            return
        hs = self._new_session(scope)
        stream = hs.open_stream(message.id)
        hs.router.feed(body)
        answer = stream.after(0)
        failed = RESPONSE_PREFIX + message.id + b',"error":'
        if not stream.done or len(answer) != 1 or answer[0][1].startswith(failed):
            self._end(hs)  # a failed initialize leaves no session behind
            data = answer[-1][1] if answer else rpc.error(message.id, rpc.INTERNAL_ERROR, "Internal error")
            await respond_json(send, 200, data)
            return
        hs.forget(stream)
        await respond_json(send, 200, answer[0][1], [(b"mcp-session-id", hs.id.encode())])

    async def _request(
        self, hs: HttpSession, message: rpc.Request, body: bytes, scope: Scope, receive: Receive, send: Send
    ) -> None:
        if hs.in_use(message.id):
            await respond_json(send, 200, _id_in_use(message.id))
            return
        stream = hs.open_stream(message.id)
        if starts_calls(message.method) and hs.full():  # beyond --max-in-flight: wait for a turn
            waited = await self._wait_turn(hs, stream, receive)
            if waited != "turn":
                hs.abandon(message.id, stream)
                if waited == "busy":
                    await respond_json(send, 200, self._busy(message.id))
                elif waited == "cancelled":  # the client cancelled it: no answer will come
                    await respond(send, 202)
                elif waited == "closed" and self.draining:  # shutdown: answered, never started
                    await respond_json(send, 200, _not_started(message.id))
                elif waited == "closed":
                    await refuse(send, 404, "Session not found: it ended while the request was waiting")
                return
            identity = _identity(scope)  # other requests set theirs meanwhile: the call gets its own
            hs.session.auth = None if identity is None else identity.claims
        hs.router.feed(body)
        if stream.seq == 0 and not stream.closed:  # most answers come this fast: no watcher
            await stream.wait(self.options.quick_answer)
        if stream.seq == 0 and not stream.closed and not await self._await_first(stream, receive):
            return  # the client left before anything came: the answer (if any) is lost with it
        if stream.done and stream.seq == 1 and stream.events:  # the answer alone: plain JSON
            answer = stream.events[0][1]
            hs.forget(stream)
            await respond_json(send, 200, answer)
            return
        if hs.closed and stream.seq == 0:
            await refuse(send, 404, "Session not found: it ended while the request was in progress")
            return
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        await send(
            {
                "type": "http.response.body",
                "body": sse_priming(stream.event_id(0), self.options.retry_ms),
                "more_body": True,
            }
        )
        await self._pump(hs, stream, 0, receive, send)

    async def _await_first(self, stream: EventStream, receive: Receive) -> bool:
        """A slow answer: wait for the stream's first message (or its end) while the client stays,
        at most until `keepalive` passes since it was handed on; False when the client left.
        Only a message sent before the answer, or the keep-alive interval passing with nothing
        (a proxy would cut a silent connection), makes the response an SSE stream: a large answer
        as one SSE event is refused by clients that bound events (the official SDK: 1 MiB).
        (The disconnect watcher is a plain task: under load most requests of a busy session wait
        here, and a task group and a cancel scope would cost each of them more.)"""
        left = Left(stream)
        watcher = running_loop().create_task(_watch_disconnect(receive, left))
        try:
            loop = running_loop()
            until = loop.time() + max(0.0, self.options.keepalive - self.options.quick_answer)
            while stream.seq == 0 and not stream.closed and not left.gone:
                remaining = until - loop.time()
                if remaining <= 0 or not await stream.wait(remaining):
                    break
        finally:
            watcher.cancel()
        return not left.gone

    async def _wait_turn(self, hs: HttpSession, stream: EventStream, receive: Receive) -> str:
        """A tool call beyond --max-in-flight waits, at most `turn_timeout`, until this session has
        room for it: "turn", or why not: "busy" (no call ended in time), "left" (the client went
        away), "cancelled" (the client cancelled it), "closed" (the session ended)."""
        left = anyio.Event()  # the client went away
        with Deadline(self.options.turn_timeout) as deadline:
            while not (left.is_set() or hs.closed or stream.closed or deadline.scope.cancel_called):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_note_disconnect, receive, left, tg.cancel_scope)
                    while hs.full() and not stream.closed:
                        await hs.wait_turn()
                    tg.cancel_scope.cancel()
                # Leaving the task group yields: another waiter woken by the same ended call may
                # have taken the slot meanwhile. Only a slot still free now is this call's turn.
                if not hs.full():
                    break
        if left.is_set():
            return "left"
        if hs.closed:
            return "closed"
        if stream.closed:
            return "cancelled"
        return "busy" if hs.full() else "turn"

    def _busy(self, request_id: bytes) -> bytes:
        return rpc.error(
            request_id,
            SERVER_BUSY,
            f"Server busy: {self.host.max_in_flight} tool calls are already running in this session "
            f"and none ended within {self.options.turn_timeout:g}s; retry when some have finished",
        )

    async def _batch(
        self, hs: HttpSession, body: bytes, parsed: list[Any], receive: Receive, send: Send
    ) -> None:
        if hs.session.version not in BATCH_VERSIONS:
            await respond_json(
                send,
                400,
                rpc.error(
                    rpc.NULL_ID,
                    rpc.INVALID_REQUEST,
                    f"Invalid Request: batches are not supported in {hs.session.version}",
                ),
            )
            return
        messages = [rpc.classify(item) for item in parsed] if parsed else []
        # A request whose id is in use (by a request in progress, or earlier in this batch) is
        # answered here, inside the batch, and not run: its answer could not be told apart.
        refused: list[bytes] = []
        seen: set[bytes] = set()
        keep: list[bool] = []
        for m in messages:
            clash = isinstance(m, rpc.Request) and (m.id in seen or hs.in_use(m.id))
            if isinstance(m, rpc.Request):
                if clash:
                    refused.append(_id_in_use(m.id))
                else:
                    seen.add(m.id)
            keep.append(not clash)
        if refused:
            parsed = [item for item, kept in zip(parsed, keep, strict=True) if kept]
            messages = [m for m, kept in zip(messages, keep, strict=True) if kept]
            body = orjson.dumps(parsed)
        ids = frozenset(m.id for m in messages if isinstance(m, (rpc.Request, rpc.Invalid)))
        if not ids:
            if parsed:
                hs.router.feed(body)
            if refused:
                await respond_json(send, 200, b"[" + b",".join(refused) + b"]")
            else:
                await respond(send, 202)
            return
        stream = hs.open_batch(ids)
        hs.router.feed(body)
        async with anyio.create_task_group() as tg:  # a client that leaves stops the wait
            tg.start_soon(cancel_on_disconnect, receive, tg.cancel_scope)
            while not stream.done and not stream.closed:
                await stream.wait(self.options.keepalive)
            tg.cancel_scope.cancel()
        if stream.done:
            answers = [stream.events[-1][1][1:-1]] if stream.events else []  # (gone: over the bound)
            await respond_json(send, 200, b"[" + b",".join(answers + refused) + b"]")
        elif stream.closed:
            await refuse(send, 404, "Session not found: it ended while the batch was in progress")

    # -- GET: the standalone stream, or a resumed one -------------------------------------
    async def _get(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _accepts(header(scope, b"accept") or "", "text/event-stream"):
            await refuse(send, 406, "Not Acceptable: a GET opens an SSE stream; accept text/event-stream")
            return
        last = header(scope, b"last-event-id")
        if self.draining and not last:  # a standalone stream would end at once (a resumption is served)
            await refuse(send, 503, "Service Unavailable: the server is shutting down")
            return
        hs = await self._find(scope, send)
        if hs is None:
            return
        hs.connections += 1
        try:
            resume = parse_event_id(last) if last else None
            if resume is not None:
                stream = hs.streams.get(resume[0])
                cursor = resume[1]
            else:
                stream, cursor = hs.get_stream, hs.get_stream.sent
                if stream.attached:
                    await refuse(send, 409, "Conflict: this session already has a GET stream open")
                    return
            await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
            if stream is None:  # nothing left to resume there: an empty stream that ends at once
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            priming = sse_priming(stream.event_id(cursor), self.options.retry_ms)
            await send({"type": "http.response.body", "body": priming, "more_body": True})
            await self._pump(hs, stream, cursor, receive, send)
        finally:
            hs.connections -= 1
            hs.touch()

    async def _pump(
        self, hs: HttpSession, stream: EventStream, cursor: int, receive: Receive, send: Send
    ) -> None:
        """Write the stream's messages after `cursor` to this connection until the stream ends,
        the client goes away, another connection takes the stream over, or shutdown."""
        generation = stream.attach()
        if metrics.ON:
            metrics.stream_opened()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel_on_disconnect, receive, tg.cancel_scope)
                while stream.attached == generation:
                    events = stream.after(cursor)
                    if events:
                        chunk = b"".join(sse_event(stream.event_id(seq), data) for seq, data in events)
                        with anyio.fail_after(self.options.send_timeout):
                            await send({"type": "http.response.body", "body": chunk, "more_body": True})
                        cursor = events[-1][0]
                        stream.sent = max(stream.sent, cursor)
                        continue
                    if stream.finished(cursor) or (self.draining and stream is hs.get_stream):
                        break
                    if not await stream.wait(self.options.keepalive):
                        with anyio.fail_after(self.options.send_timeout):
                            await send({"type": "http.response.body", "body": KEEP_ALIVE, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                tg.cancel_scope.cancel()
        except (OSError, TimeoutError):
            pass  # the client is gone or too slow: the stream waits for a resumption
        finally:
            stream.detach(generation)
            hs.keep_finished(stream)
            if metrics.ON:
                metrics.stream_closed()

    # -- DELETE: the client ends its session ---------------------------------------------
    async def _delete(self, scope: Scope, send: Send) -> None:
        hs = await self._find(scope, send)
        if hs is None:
            return
        self._end(hs)
        await respond(send, 200)

    # -- lifetime ------------------------------------------------------------------------
    async def expire_idle(self) -> None:
        """Forever: end sessions idle longer than the session timeout (their ids then get 404)."""
        timeout = self.options.session_timeout
        if timeout <= 0:
            await anyio.sleep_forever()
        while True:
            await anyio.sleep(min(timeout / 2, 30.0))
            now = time.monotonic()
            for hs in list(self.sessions.values()):
                hs.let_go_of_finished(now)
                if hs.idle_for(now) > timeout:
                    self._end(hs)
                    self.expired += 1
                    self.host.stderr(f"protomcp: session {hs.id[:8]}… expired after {timeout:g}s idle")

    def drain(self) -> None:
        """Shutdown begins: refuse new work and end the standalone streams."""
        self.draining = True
        for hs in self.sessions.values():
            hs.get_stream.close()
        for connection in list(self.modern.connections):
            connection.end_streams()

    def calls_running(self) -> int:
        sessions = sum(len(hs.session.in_flight) for hs in self.sessions.values())
        return sessions + sum(len(c.session.in_flight) for c in self.modern.connections)

    async def wait_idle(self) -> None:
        for hs in list(self.sessions.values()):
            await hs.router.wait_idle()
        for connection in list(self.modern.connections):
            await connection.wait_idle()

    def fail_all(self, message: str) -> None:
        """The drain timed out: every call still running is answered with an error, on its stream."""
        for hs in list(self.sessions.values()):
            hs.router.fail_all(message)
        for connection in list(self.modern.connections):
            connection.fail_all(message)

    def close_all(self) -> None:
        for hs in list(self.sessions.values()):
            self._end(hs)


async def _note_disconnect(receive: Receive, left: anyio.Event, scope: anyio.CancelScope) -> None:
    """Set `left` and cancel `scope` once the client disconnects."""
    while (await receive())["type"] != "http.disconnect":
        pass
    left.set()
    scope.cancel()


class Left:
    """Whether the client of a request waiting on `stream` disconnected (set by the watcher)."""

    __slots__ = ("gone", "stream")

    def __init__(self, stream: EventStream) -> None:
        self.stream = stream
        self.gone = False


async def _watch_disconnect(receive: Receive, left: Left) -> None:
    """Mark `left` gone, and wake its stream's waiter, once the client disconnects."""
    await disconnected(receive)
    left.gone = True
    left.stream.wake()


def _not_started(request_id: bytes) -> bytes:
    return rpc.error(request_id, SERVER_BUSY, "the host is shutting down; the request was not started")


def _id_in_use(request_id: bytes) -> bytes:
    return rpc.error(
        request_id,
        rpc.INVALID_REQUEST,
        f"Invalid Request: id {request_id.decode()} is already in use by a request in progress",
    )


def _accepts(accept: str, media_type: str) -> bool:
    kinds = _media_types(accept)
    return media_type in kinds or "*/*" in kinds or f"{media_type.split('/')[0]}/*" in kinds


@functools.lru_cache(maxsize=64)  # clients send the same Accept header every time
def _media_types(accept: str) -> frozenset[str]:
    return frozenset(part.split(";")[0].strip().lower() for part in accept.split(","))


def _identity(scope: Scope) -> Identity | None:
    """Who authenticated this request; None without authentication."""
    return scope.get("state", {}).get(IDENTITY)


def _claims(scope: Scope) -> dict[str, Any] | None:
    identity = _identity(scope)
    return None if identity is None else identity.claims


def _principal(scope: Scope) -> str | None:
    """The name sessions are bound to."""
    identity = _identity(scope)
    return None if identity is None else identity.principal
