"""One session's request spans, when tracing is on (protomcp_sdk.wire.tracing).

A span starts when a request arrives and ends when its answer is written, whatever path the
answer took (a tool process, a forward, an error of the protocol core, a task's first answer):
the router hands every line it reads to `received` and every message it writes to `sent`. A
cancelled request, or one whose client went away, ends "cancelled". The span of a tools/call
is the parent of the tool process's span: `context_of` gives its W3C trace context for the
call's Envelope.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.jsontypes import is_id
from protomcp_host.protocol.methods import METHODS
from protomcp_sdk.wire import tracing

ANSWER = b'{"jsonrpc":"2.0","id":'


class RequestSpans:
    def __init__(self, version: Any) -> None:
        self.version = version  # () -> the session's protocol revision, once known
        self.open: dict[bytes, Any] = {}

    def received(self, line: bytes) -> None:
        try:
            decoded = orjson.loads(line)
        except orjson.JSONDecodeError:
            return  # answered as a parse error, with no request to trace
        for item in decoded if isinstance(decoded, list) else [decoded]:
            message = rpc.classify(item)
            if isinstance(message, rpc.Request) and message.id not in self.open:
                self.open[message.id] = _span(message)
            elif isinstance(message, rpc.Notification) and message.method == "notifications/cancelled":
                cancelled = message.params.get("requestId")
                if is_id(cancelled):
                    self.close(orjson.dumps(cancelled), "cancelled")

    def watching(self, write: Callable[[bytes, bytes | None], None]) -> Callable[[bytes, bytes | None], None]:
        """`write`, closing the span of the request each message answers."""

        def traced(data: bytes, related: bytes | None = None) -> None:
            self.sent(data)
            write(data, related)

        return traced

    def sent(self, data: bytes) -> None:
        if not self.open or not data.startswith(ANSWER):
            return
        end = data.find(b',"', len(ANSWER))
        span = self.open.pop(data[len(ANSWER) : end], None) if end > 0 else None
        if span is None:
            return
        version = self.version()
        if version:
            span.set_attribute("mcp.protocol.version", version)
        error = ""
        if data.startswith(b'"error":', end + 1):
            code = orjson.loads(data).get("error", {}).get("code")
            span.set_attribute("rpc.response.status_code", str(code))
            error = str(code)
        elif b'"isError":true' in data:
            error = "tool_error"
        tracing.end(span, error)

    def context_of(self, request_id: bytes) -> tuple[str, str]:
        span = self.open.get(request_id)
        return tracing.traceparent(span) if span is not None else ("", "")

    def close(self, request_id: bytes, why: str) -> None:
        span = self.open.pop(request_id, None)
        if span is not None:
            tracing.end(span, why)

    def close_all(self, why: str) -> None:
        for request_id in list(self.open):
            self.close(request_id, why)


def _span(message: rpc.Request) -> Any:
    """The span of one request, named and described after the OpenTelemetry MCP conventions."""
    method, params = message.method, message.params
    attributes: dict[str, Any] = {"mcp.method.name": method, "jsonrpc.request.id": message.id.decode()}
    known = METHODS.get(method)
    target = params.get("name") if known is not None and known.span_target else None
    if isinstance(target, str):
        assert known is not None
        attributes[known.span_target] = target
        if known.starts_calls:
            attributes["gen_ai.operation.name"] = "execute_tool"
    uri = params.get("uri")
    if isinstance(uri, str):
        attributes["mcp.resource.uri"] = uri
    meta = params.get("_meta")
    meta = meta if isinstance(meta, dict) else {}
    parent, state = meta.get("traceparent"), meta.get("tracestate")
    return tracing.start(
        f"{method} {target}" if isinstance(target, str) else method,
        parent if isinstance(parent, str) else "",
        state if isinstance(state, str) else "",
        attributes,
    )
