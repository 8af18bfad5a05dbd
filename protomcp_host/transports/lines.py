"""Lines of MCP over stdio: newline framing with a size limit (sans-IO), and what a line asks
for, told cheaply, so the transport knows which lines it may hold back and which era serves them."""

from __future__ import annotations

from typing import Any

import orjson

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.methods import METHODS
from protomcp_host.protocol.methods import starts_calls as is_call
from protomcp_host.protocol.request_meta import is_modern, maybe_modern

MAX_LINE = 256 * 1024 * 1024


class LineSplitter:
    """Sans-IO newline framing with a size limit."""

    def __init__(self, max_line: int = MAX_LINE) -> None:
        self.max_line = max_line
        self._buffer = bytearray()
        self._discarding = False

    def feed(self, data: bytes) -> list[bytes | None]:
        """Complete lines (without newline); None stands for a line that was too long."""
        out: list[bytes | None] = []
        start = 0
        while (end := data.find(b"\n", start)) != -1:
            if self._discarding:
                self._discarding = False
            else:
                self._buffer += data[start:end]
                if len(self._buffer) > self.max_line:  # a long line completed within one chunk
                    out.append(None)
                elif line := bytes(self._buffer).strip():
                    out.append(line)
            self._buffer.clear()
            start = end + 1
        if not self._discarding:
            self._buffer += data[start:]
            if len(self._buffer) > self.max_line:
                self._buffer.clear()
                self._discarding = True
                out.append(None)
        return out

    def tail(self) -> bytes:
        """What is left at end of input (a last line without newline)."""
        return b"" if self._discarding else bytes(self._buffer).strip()


def _method(line: bytes | None) -> str | None:
    """The method of a request line; "" for a batch; None for anything else."""
    if line is None:
        return None
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if isinstance(message, list):
        return ""
    method = message.get("method") if isinstance(message, dict) else None
    return method if isinstance(method, str) else None


def needs_tools(line: bytes | None) -> bool:
    """Whether a message must wait for the tool files to load: everything but the lifecycle
    (initialize, ping, notifications...) and lines that are no valid message at all."""
    method = _method(line)
    if method is None or method.startswith("notifications/"):
        return False
    known = METHODS.get(method)
    return known is None or not known.before_tools


def starts_calls(line: bytes | None) -> bool:
    """Whether a message may start tool calls (a tools/call, or a batch)."""
    method = _method(line)
    return method is not None and (method == "" or is_call(method))


SHUTTING_DOWN = -32000  # JSON-RPC's range for implementation-defined server errors


def refuse_held(line: bytes | None, *, ready: bool, startup_error: str | None = None) -> bytes | None:
    """At shutdown, the error answer for a held line that would start a tool call (or, before the
    tool files loaded, needs them); None for lines that are handled as usual."""
    if not (starts_calls(line) or (not ready and needs_tools(line))):
        return None
    assert line is not None
    message = orjson.loads(line)
    reason = "the host is shutting down; the request was not started"
    if startup_error is not None:
        reason = f"the tool files did not load, the host is shutting down: {startup_error}"
    if isinstance(message, dict):
        return rpc.error(orjson.dumps(message["id"]), SHUTTING_DOWN, reason) if "id" in message else b""
    answers = [
        orjson.loads(rpc.error(orjson.dumps(m["id"]), SHUTTING_DOWN, reason))
        for m in message
        if isinstance(m, dict) and "method" in m and "id" in m
    ]
    return orjson.dumps(answers) if answers else b""


def modern_message(line: bytes) -> dict[str, Any] | None:
    """The line parsed, if it is a modern-era (2026-07-28) request: its params._meta names the
    protocol version (else None), for the modern connection to take as it is
    (Connection.feed_loaded: one parse). A cheap byte test first, so stateful-era lines are
    parsed only once (by their session)."""
    if not maybe_modern(line):
        return None
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return message if type(message) is dict and is_modern(message.get("params")) else None


def is_cancellation(line: bytes) -> bool:
    """Whether a line is a notifications/cancelled notification, as JSON-RPC classifies it: no id
    and nothing invalid, so that neither era answers it (a request or an invalid message of that
    name gets its one answer from the stateful era alone). Decoded, since the bytes may as well
    sit inside a tool's argument; the byte test first, so other lines are not parsed twice."""
    if b"notifications/cancelled" not in line:
        return False
    try:
        message = rpc.classify(orjson.loads(line))
    except orjson.JSONDecodeError:
        return False
    return isinstance(message, rpc.Notification) and message.method == "notifications/cancelled"
