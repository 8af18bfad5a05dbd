"""Streamable HTTP in the 2026-07-28 era: one POST, one request, no session.

The routing headers are checked against the body (``MCP-Protocol-Version``, ``Mcp-Method``,
``Mcp-Name`` with its ``=?base64?…?=`` form, ``Mcp-Param-*`` for arguments the tool's schema
marks with ``x-mcp-header``) in the revision's order: envelope keys (-32602), headers (-32020),
version (-32022), then the method (-32601 → 404). Each request gets a connection of its own
(``Sessions.connect_modern``) that lives as long as the POST: its response is JSON when the
answer comes before anything else, otherwise an SSE stream of that request's notifications
ending with the answer (keep-alive comments meanwhile). The client closing it cancels the
request. ``Mcp-Session-Id`` and ``Last-Event-ID`` are ignored; no session id is minted.
What waits for a client that reads slowly (or not at all) is bounded by the memory it takes
(``stream_bytes``, messages compacted and counted with their overhead), and is written a chunk
at a time, each within ``send_timeout``: past the bound a request's oldest notifications go,
never the answer; a listen stream, which has no answer to keep and whose client must not miss
a notification unawares, is cut off instead: it ends with an error that says why. One client
(the token's principal, else its address) has at most ``max_listens`` listen streams open.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import re
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson

from protomcp_host.processes.loop import running_loop
from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.methods import METHODS, starts_calls
from protomcp_host.protocol.request_meta import (
    HEADER_MISMATCH,
    MISSING_CAPABILITY,
    PROTOCOL_VERSION,
    UNSUPPORTED_VERSION,
    RequestEnvelope,
    read_envelope,
)
from protomcp_host.protocol.session import SERVER_BUSY, SUPPORTED_VERSIONS
from protomcp_host.telemetry import metrics
from protomcp_host.transports.http import step_up
from protomcp_host.transports.http.asgi import Receive, Scope, Send, disconnected, respond, respond_json
from protomcp_host.transports.http.event_stream import KEEP_ALIVE, compact, cost
from protomcp_host.transports.http.timers import Deadline
from protomcp_host.transports.ports import Connection, RequestMeasure, Sessions

ERROR_STATUS = {
    rpc.PARSE_ERROR: 400,
    rpc.INVALID_REQUEST: 400,
    rpc.INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_CAPABILITY: 400,
    UNSUPPORTED_VERSION: 400,
    rpc.METHOD_NOT_FOUND: 404,
}
SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]
_ROUTING = (b"mcp-protocol-version", b"mcp-method", b"mcp-name")
_CTL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_ANSWER = b'{"jsonrpc":"2.0","id":'
LISTEN = "subscriptions/listen"
STREAM_BYTES = 4 << 20  # memory the messages waiting for one request's client may take
MAX_LISTENS = 16  # listen streams one client may have open at once
CHUNK = 64 << 10  # bytes of messages written at once (the transport's buffer holds about that)
# (header, body) versions served in the body's era though they differ: claude.ai's connector
# backend sends 2026-07-28 bodies with `MCP-Protocol-Version: 2025-11-25` (an open Claude Code
# issue); refused with -32020, every tool call of a "connected" claude.ai user would fail.
SERVED_IN_BODY_ERA = frozenset({("2025-11-25", "2026-07-28")})
MAX_NOTED = 10_000  # clients remembered as told about that (then the memory starts over)


def is_modern_request(scope: Scope, parsed: Any) -> bool:
    """The era of a POST: modern when its MCP-Protocol-Version header names no handshake
    revision, or its body carries the modern _meta."""
    version = _header(scope, b"mcp-protocol-version")
    if version is not None and version not in SUPPORTED_VERSIONS:
        return True
    if isinstance(parsed, dict):
        params = parsed.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        return isinstance(meta, dict) and PROTOCOL_VERSION in meta
    return False


def modern_header(scope: Scope) -> bool:
    """A GET or DELETE that says it speaks the modern era (which has neither: 405)."""
    version = _header(scope, b"mcp-protocol-version")
    return version is not None and version not in SUPPORTED_VERSIONS


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1").strip(" \t")
    return None


def _value(headers: dict[bytes, list[bytes]], name: bytes) -> str | None:
    values = headers.get(name)
    return None if values is None else values[0].decode("latin-1").strip(" \t")


def decode_header_value(value: str) -> str | None:
    """A header value as the body would hold it: ``=?base64?…?=`` decoded (None when that form
    is malformed), any other value literal; None for control characters."""
    if _CTL.search(value):
        return None
    if value.startswith("=?base64?") and value.endswith("?=") and len(value) >= 11:
        encoded = value[9:-2]
        try:
            raw = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            return None
        if base64.b64encode(raw).decode() != encoded:
            return None
        try:
            return raw.decode()
        except UnicodeDecodeError:
            return None
    return value


def check_headers(
    scope: Scope,
    message: rpc.Request,
    envelope_version: Any,
    served_anyway: Callable[[str], None] | None = None,
) -> str | None:
    """Why the routing headers disagree with the body (-32020), or None. A version header and
    body of SERVED_IN_BODY_ERA agree; `served_anyway(header version)` is told of it."""
    seen: dict[bytes, list[bytes]] = {}  # the routing headers' values (one pass over the headers)
    for key, value in scope["headers"]:
        if key in _ROUTING:
            seen.setdefault(key, []).append(value)
    duplicated = [key.decode() for key, values in seen.items() if len(values) > 1]
    if duplicated:
        return f"Header mismatch: {', '.join(duplicated)} given more than once"
    version = _value(seen, b"mcp-protocol-version")
    if version is None:
        return "Header mismatch: the MCP-Protocol-Version header is missing"
    if (version, envelope_version) in SERVED_IN_BODY_ERA:
        if served_anyway is not None:
            served_anyway(version)
    elif version != envelope_version:
        return (
            f"Header mismatch: MCP-Protocol-Version header value {version!r} does not match "
            f"body value {envelope_version!r}"
        )
    method = _value(seen, b"mcp-method")
    if method is None:
        return "Header mismatch: the Mcp-Method header is missing"
    if method != message.method:
        body = message.method
        return f"Header mismatch: Mcp-Method header value {method!r} does not match body value {body!r}"
    known = METHODS.get(message.method)
    field = known.routing if known is not None else ""
    if field:
        raw = _value(seen, b"mcp-name")
        if raw is None:
            return "Header mismatch: the Mcp-Name header is missing"
        name = decode_header_value(raw)
        if name is None:
            return "Header mismatch: the Mcp-Name header value is not valid"
        if name != message.params.get(field):
            return f"Header mismatch: Mcp-Name header value {name!r} does not match body value"
    return None


def check_param_headers(scope: Scope, schema: Any, arguments: Any) -> str | None:
    """Mcp-Param-* headers against the arguments the tool's schema marks with x-mcp-header."""
    if not isinstance(schema, dict) or not isinstance(arguments, dict):
        return None
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return None
    for prop, spec in properties.items():
        name = spec.get("x-mcp-header") if isinstance(spec, dict) else None
        if not isinstance(name, str) or not name:
            continue
        raw = _header(scope, b"mcp-param-" + name.lower().encode("latin-1", "replace"))
        value = arguments.get(prop)
        if raw is None:
            if value is not None:
                return f"Header mismatch: the Mcp-Param-{name} header is missing"
            continue
        decoded = decode_header_value(raw)
        if decoded is None:
            return f"Header mismatch: the Mcp-Param-{name} header value is not valid"
        if value is None:
            continue
        if not _same(decoded, value):
            return f"Header mismatch: Mcp-Param-{name} header value does not match body value"
    return None


def _same(text: str, value: Any) -> bool:
    if isinstance(value, bool):
        return text == ("true" if value else "false")
    if isinstance(value, (int, float)):
        try:
            return float(text) == float(value)
        except ValueError:
            return False
    return text == value


# Seconds an answer may take to be sent as plain JSON before the request streams (SSE) and a
# disconnect watcher starts (disconnecting cancels a request in this era; within this window a
# disconnect is noticed when the answer is ready).
QUICK_ANSWER = 0.05


class Backlog:
    """A request's messages not yet written to its connection, bounded by the memory they take
    (compacted, with their overhead): past `limit` the oldest go (never the newest: the answer
    is the last message of a request)."""

    __slots__ = ("dropped", "held", "items", "limit", "on_first_drop")

    def __init__(self, limit: int, on_first_drop: Callable[[], None] | None = None) -> None:
        self.limit = limit
        self.on_first_drop = on_first_drop  # called the first time messages go (to tell)
        self.items: deque[bytes] = deque()
        self.held = 0  # bytes in items
        self.dropped = 0  # messages dropped for the bound, ever

    def __len__(self) -> int:
        return len(self.items)

    def append(self, data: bytes) -> None:
        data = compact(data)
        self.items.append(data)
        self.held += cost(data)
        if self.held > self.limit and len(self.items) > 1:
            self.overflow()

    def overflow(self) -> None:
        """Over the bound: the oldest go."""
        first = not self.dropped
        while self.held > self.limit and len(self.items) > 1:
            self.held -= cost(self.items.popleft())
            self.dropped += 1
        if first:
            self.first_drop()

    def first_drop(self) -> None:
        if self.on_first_drop is not None:
            self.on_first_drop()

    def take(self, most: int = CHUNK) -> list[bytes]:
        """The oldest messages, `most` bytes of them at most (but at least one)."""
        if self.held <= most:
            items, self.items, self.held = list(self.items), deque(), 0
            return items
        taken: list[bytes] = []
        size = 0
        while self.items and (not taken or size + len(self.items[0]) <= most):
            data = self.items.popleft()
            taken.append(data)
            size += len(data)
            self.held -= cost(data)
        return taken


class Exchange(Backlog):
    """One POST in progress: the messages for its client, and the wait for the next one. Its
    connection writes to its bound `write`; nothing refers back to the connection, so all of
    it is freed by reference counting when the POST is over (no cyclic garbage). A wait is a
    future and a loop timer, made only when it waits (most answers are there before it would):
    no cancel scope, no event."""

    __slots__ = ("_waiter", "cut_off", "gone", "host", "id", "measure", "method")

    def __init__(self, host: Sessions, message: rpc.Request, limit: int) -> None:
        super().__init__(limit)
        self.host = host
        self.id = message.id
        self.method = message.method
        self.gone = False  # the client disconnected
        self.cut_off = False  # a listen stream its client read too slowly: only its end is left
        self._waiter: asyncio.Future[None] | None = None
        self.measure: RequestMeasure | None = None  # metrics, the audit log: its request measured

    def write(self, data: bytes, related: bytes | None = None) -> None:
        if related is not None and related != self.id:
            return  # not this request's (nothing else travels on its stream)
        if self.cut_off:
            return
        self.append(data)
        if self._waiter is not None:
            _wake(self._waiter)

    def leave(self) -> None:
        """The client disconnected: the wait ends."""
        self.gone = True
        if self._waiter is not None:
            _wake(self._waiter)

    async def wait(self, seconds: float) -> None:
        """Until a message is there, the client leaves, or `seconds` pass."""
        if self.items or self.gone:
            return
        loop = running_loop()
        waiter = self._waiter = loop.create_future()
        timer = loop.call_later(seconds, _wake, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None

    def first_drop(self) -> None:
        self.host.stderr(
            f"protomcp: a {self.method} stream dropped its oldest messages: more than "
            f"{_mib(self.limit)} waited for its client (reported once per stream)"
        )

    def overflow(self) -> None:
        if self.method != LISTEN:
            super().overflow()
            return
        # What waits is dropped for an error that ends the stream (the writer ends it after that).
        self.cut_off = True
        self.items.clear()
        end = compact(rpc.error(self.id, SERVER_BUSY, _cut_off(self.limit)))
        self.items.append(end)
        self.held = cost(end)
        self.host.stderr(
            f"protomcp: a {LISTEN} stream was cut off: more than {_mib(self.limit)} of "
            "notifications waited for its client"
        )


def _mib(size: int) -> str:
    return f"{size / (1 << 20):g} MiB"


def _cut_off(limit: int) -> str:
    return (
        f"Stream closed: the client read too slowly (more than {_mib(limit)} of notifications "
        "waited for it); notifications since the last one received are missed: listen again"
    )


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class ModernEndpoint:
    """The modern-era POSTs of the MCP endpoint."""

    def __init__(
        self,
        host: Sessions,
        keepalive: float,
        principal_of: Any,
        claims_of: Any,
        budget: int = STREAM_BYTES,
        max_listens: int = MAX_LISTENS,
        send_timeout: float = 30.0,
    ) -> None:
        self.host = host
        self.keepalive = keepalive
        self.budget = budget  # memory the messages waiting for one request's client may take
        self.max_listens = max_listens  # listen streams one client may have open
        self.send_timeout = send_timeout  # seconds a client may take to accept a chunk
        self.principal_of = principal_of  # scope -> the principal (token subject), or None
        self.claims_of = claims_of  # scope -> the verified claims for the calls, or None
        self.connections: set[Connection] = set()  # requests in progress (for the drain)
        self.listening: dict[str, int] = {}  # client -> its listen streams open
        self.noted: set[str] = set()  # clients whose version header we said we serve anyway

    async def post(self, scope: Scope, body: bytes, parsed: Any, receive: Receive, send: Send) -> None:
        message = rpc.classify(parsed)
        if isinstance(message, rpc.Invalid):
            await respond_json(send, 400, rpc.error(message.id, message.code, message.message))
            return
        if isinstance(message, rpc.Response):
            error = rpc.error(message.id, rpc.INVALID_REQUEST, "Invalid Request: clients send no responses")
            await respond_json(send, 400, error)
            return
        if isinstance(message, rpc.Notification):
            await respond(send, 202)  # this era defines none over HTTP (cancelling is disconnecting)
            return
        accept = _header(scope, b"accept") or ""
        if message.method == LISTEN and "text/event-stream" not in accept and "*/*" not in accept:
            await respond_json(
                send,
                406,
                rpc.error(message.id, rpc.INVALID_REQUEST, "Not Acceptable: a listen stream is SSE"),
            )
            return
        envelope = read_envelope(message, True)
        if isinstance(envelope, tuple) and envelope[0] == rpc.INVALID_PARAMS and "missing" in envelope[1]:
            await self._error(send, message.id, *envelope)
            return
        body_version = message.params.get("_meta", {}).get(PROTOCOL_VERSION)
        mismatch = check_headers(scope, message, body_version, lambda header: self._note(scope, header))
        if mismatch is not None:
            await self._error(send, message.id, HEADER_MISMATCH, mismatch, None)
            return
        if not isinstance(envelope, RequestEnvelope):
            await self._error(send, message.id, *envelope)
            return
        if starts_calls(message.method):  # a tool's arguments: its Mcp-Param-* headers
            name = message.params.get("name")
            found = self.host.catalog.get(name) if isinstance(name, str) else None
            if found is not None:
                problem = check_param_headers(
                    scope, found.mcp.get("inputSchema"), message.params.get("arguments")
                )
                if problem is not None:
                    await self._error(send, message.id, HEADER_MISMATCH, problem, None)
                    return
        refused = step_up.refusal(self.host, scope, message)
        if refused is not None:
            await step_up.refuse(send, message, refused)
            return
        if message.method == LISTEN:
            await self._listen(scope, body, parsed, message, receive, send)
            return
        await self._serve(scope, body, parsed, message, receive, send)

    def _note(self, scope: Scope, header_version: str) -> None:
        """Say once per client that its requests are served despite their version header."""
        client = self.principal_of(scope) or _address(scope)
        if client in self.noted:
            return
        if len(self.noted) >= MAX_NOTED:
            self.noted.clear()
        self.noted.add(client)
        agent = _header(scope, b"user-agent") or "no User-Agent"
        self.host.stderr(
            f"protomcp: serving {client} ({agent[:100]}) in the 2026-07-28 era its request bodies "
            f"name, though its MCP-Protocol-Version header says {header_version} (as claude.ai's "
            "connector does); said once per client"
        )

    async def _listen(
        self, scope: Scope, body: bytes, parsed: Any, message: rpc.Request, receive: Receive, send: Send
    ) -> None:
        """A listen stream, if its client has fewer than `max_listens` open (429 otherwise)."""
        client = self.principal_of(scope) or _address(scope)
        open_now = self.listening.get(client, 0)
        if open_now >= self.max_listens:
            text = (
                f"Too many listen streams: this client has {open_now} listen streams open, the most "
                "allowed; end one before listening again"
            )
            await respond_json(send, 429, rpc.error(message.id, SERVER_BUSY, text))
            return
        self.listening[client] = open_now + 1
        try:
            await self._serve(scope, body, parsed, message, receive, send)
        finally:
            left = self.listening[client] - 1
            if left:
                self.listening[client] = left
            else:
                del self.listening[client]

    async def _error(self, send: Send, request_id: bytes, code: int, text: str, data: Any) -> None:
        await respond_json(send, ERROR_STATUS.get(code, 200), rpc.error(request_id, code, text, data))

    async def _serve(
        self, scope: Scope, body: bytes, parsed: Any, message: rpc.Request, receive: Receive, send: Send
    ) -> None:
        exchange = Exchange(self.host, message, self.budget)
        answer_prefix = _ANSWER + message.id + b","
        principal = self.principal_of(scope) or "anonymous"
        connection = self.host.connect_modern(exchange.write, principal, measured=True)
        session = connection.session
        session.auth = self.claims_of(scope)
        # metrics, the audit log: the request measured here (its router makes no meter)
        measure = exchange.measure = connection.measure(message)
        self.connections.add(connection)
        try:
            connection.feed_loaded(body, parsed)
            if not exchange:  # most answers come this fast: no disconnect watcher, no stream
                await exchange.wait(QUICK_ANSWER)
            if len(exchange) == 1 and exchange.items[0].startswith(answer_prefix):
                data = exchange.items[0]
                if measure is not None:
                    measure.answered(data, len(answer_prefix) - 1)
                    measure = None  # (told: the finally has nothing to tell it)
                await respond_json(send, _status(data, len(answer_prefix)), data)
                return
            await self._stream(exchange, answer_prefix, receive, send)
        finally:
            if measure is not None:  # (if never answered: its client left)
                measure.unanswered()
            self.connections.discard(connection)
            connection.cancel_all()  # the client left (or it is over): what runs for it stops
            self.host.disconnect(connection)

    async def _stream(self, exchange: Exchange, answer_prefix: bytes, receive: Receive, send: Send) -> None:
        """The answer did not come at once, alone: an SSE stream (or JSON, if it comes alone
        after all), ended when the client disconnects. (The watcher is a plain task, not a task
        group: a request this slow under load should not cost more for it.)"""
        watcher = running_loop().create_task(_note_disconnect(receive, exchange))
        streaming = False
        try:
            while True:
                if not exchange:
                    await exchange.wait(self.keepalive)
                if exchange.gone:
                    return  # (what runs for it stops: see _serve)
                items = exchange.take()
                final = next((i for i, d in enumerate(items) if d.startswith(answer_prefix)), None)
                if final is not None and exchange.measure is not None:
                    exchange.measure.answered(items[final], len(answer_prefix) - 1)
                if not streaming and final == 0 and len(items) == 1:
                    data = items[0]
                    await respond_json(send, _status(data, len(answer_prefix)), data)
                    return
                if not streaming:
                    streaming = True
                    if metrics.ON:
                        metrics.stream_opened()
                    await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
                chunk = b"".join(b"event: message\ndata: " + d + b"\n\n" for d in items) or KEEP_ALIVE
                if not await self._write(exchange, send, chunk, final is None) or final is not None:
                    return
        finally:
            watcher.cancel()
            if streaming and metrics.ON:
                metrics.stream_closed()

    async def _write(self, exchange: Exchange, send: Send, chunk: bytes, more: bool) -> bool:
        """Write a chunk of the stream (and end it unless `more`), within `send_timeout`;
        False when the client accepted nothing meanwhile (uvicorn then closes the connection,
        the response unfinished)."""
        with Deadline(self.send_timeout) as deadline:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if not more:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        if deadline.expired:
            self.host.stderr(
                f"protomcp: the client of a {exchange.method} stream accepted nothing for "
                f"{self.send_timeout:g}s: disconnected"
            )
        return not deadline.expired


def _address(scope: Scope) -> str:
    """Who a request without credentials comes from: its client's address."""
    client = scope.get("client")
    return f"address {client[0]}" if client else "anonymous"


def _status(data: bytes, head: int) -> int:
    """The HTTP status of a JSON answer: 200 for a result, per the revision's table for errors."""
    if data[head : head + 8] != b'"error":':
        return 200
    try:
        code = orjson.loads(data)["error"]["code"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return 200
    return ERROR_STATUS.get(code, 200)


async def _note_disconnect(receive: Receive, exchange: Exchange) -> None:
    await disconnected(receive)
    exchange.leave()
