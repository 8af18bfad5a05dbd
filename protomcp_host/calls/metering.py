"""One session's requests measured, when metrics or the audit log are on (telemetry/): each
request timed from the message that brings it to the message that answers it, whatever path
the answer took, and recorded by method, tool and outcome; each tool call also written to the
audit log. Like tracing.RequestSpans, the router hands it every message it reads (decoded) and
every message it writes; an answer is told by its first bytes, an error by the key that follows
its id, an isError result by its last isError key (the CallToolResult's own).

A 2026-07-28 request is measured by its HTTP endpoint instead (transports/http/modern.py, through
a OneRequest, with the same functions): it knows its one request and finds its answer anyway, so
its connection's router makes no meter (a meter and a watched write per request cost ~3 µs).

Labels are bounded whatever clients send: a method the host does not serve and a tool it does
not have are counted as "_unknown" (the audit log names them as asked).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import orjson

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.jsontypes import is_id
from protomcp_host.protocol.methods import METHODS
from protomcp_host.protocol.request_meta import CLIENT_INFO
from protomcp_host.protocol.session import Session
from protomcp_host.telemetry import audit, metrics

ANSWER = b'{"jsonrpc":"2.0","id":'
TOOLS_CALL = "tools/call"
UNKNOWN = "_unknown"
IS_ERROR = b'"isError":'
RESULT = b',"result":'
# a tools/call answered before its tool's result: the call waits for the client's input (2026-07-28:
# the retry is a call of its own), or goes on as a task (CreateTaskResult, either era)
INPUT_REQUIRED = b'{"resultType":"input_required"'
TASK_CREATED = (b'{"task":', b'{"resultType":"task"')
PAUSED = (INPUT_REQUIRED, *TASK_CREATED)
TAIL = 1024  # bytes of a CallToolResult's end that hold its isError (after it: the result's stamp)
RATE_LIMITED = b'"protomcp/error":{"code":"rate_limited"'  # in a refusal's _meta (calls/limits.py)
CANCELLED = "cancelled"

Writer = Callable[[bytes, bytes | None], None]
Entry = tuple[str, str, float, "_Audited | None"]
"""A request in progress: its method label, its tool label ("" unless tools/call), its start
and what the audit log says of it."""


class _Audited:
    """What the audit log says of one tool call, noted when it arrives."""

    __slots__ = ("arguments", "client", "principal", "tool")

    def __init__(self, principal: str | None, client: str | None, tool: str, arguments: Any) -> None:
        self.principal = principal
        self.client = client
        self.tool = tool
        self.arguments = arguments


class RequestMeter:
    __slots__ = ("open", "session")

    def __init__(self, session: Session) -> None:
        self.session = session
        # requests in progress, by id: (method label, tool label, start, what the audit log says)
        self.open: dict[bytes, Entry] = {}

    def received(self, decoded: rpc.Message | list[rpc.Message]) -> None:
        if type(decoded) is rpc.Request:
            self.open[decoded.id] = opened(self.session, decoded)
        elif type(decoded) is rpc.Notification and decoded.method == "notifications/cancelled":
            cancelled = decoded.params.get("requestId")
            if is_id(cancelled):
                self.close(orjson.dumps(cancelled), CANCELLED)
        # (a batch, 2025-03-26 only, is answered as one array: its requests are not measured)

    def watching(self, write: Writer) -> Writer:
        """`write`, measuring the request each message answers."""

        def measured(data: bytes, related: bytes | None = None) -> None:
            write(data, related)
            if self.open and data.startswith(ANSWER):
                self.sent(data)

        return measured

    def sent(self, data: bytes) -> None:
        end = data.find(b',"', len(ANSWER))
        entry = self.open.pop(data[len(ANSWER) : end], None) if end > 0 else None
        if entry is not None:
            answered(entry, data, end)

    def close(self, request_id: bytes, why: str) -> None:
        entry = self.open.pop(request_id, None)
        if entry is not None:
            done(entry, why, "")

    def close_all(self, why: str) -> None:
        for request_id in list(self.open):
            self.close(request_id, why)


class OneRequest:
    """A 2026-07-28 request measured by its HTTP endpoint (transports/ports.RequestMeasure)."""

    __slots__ = ("entry",)

    def __init__(self, session: Session, request: rpc.Request) -> None:
        self.entry: Entry | None = opened(session, request)

    def answered(self, data: bytes, end: int) -> None:
        entry = self.entry
        if entry is not None:
            self.entry = None
            answered(entry, data, end)

    def unanswered(self) -> None:
        entry = self.entry
        if entry is not None:
            self.entry = None
            done(entry, CANCELLED, "")


def opened(session: Session, request: rpc.Request) -> Entry:
    """What is noted of a request when it arrives: its labels, its start and (tools/call, with
    the audit log on) what the audit log says of it."""
    method = request.method
    if method != TOOLS_CALL:
        return (method if method in METHODS else UNKNOWN, "", time.perf_counter(), None)
    params = request.params
    name = params.get("name")
    tool = name if isinstance(name, str) and name in session.catalog else UNKNOWN
    noted = None
    log = audit.LOG
    if log is not None:
        auth = session.auth
        info: Any = session.client_info
        if not info:  # 2026-07-28: each request says who the client is
            meta = params.get("_meta")
            info = meta.get(CLIENT_INFO) if isinstance(meta, dict) else None
        arguments = params.get("arguments") if log.arguments else None
        noted = _Audited(
            log.principal(auth),
            audit.client_name(info, auth),
            name if isinstance(name, str) else "",
            arguments,
        )
    return (TOOLS_CALL, tool, time.perf_counter(), noted)


def answered(entry: Entry, data: bytes, end: int) -> None:
    """The request of `entry` is answered by `data` (its id ends at `end`)."""
    if data.startswith(b'"error":', end + 1):
        done(entry, _code(data, end), "")
    elif not entry[1]:  # not a tools/call
        done(entry, "", "")
    elif data.startswith(PAUSED, end + len(RESULT)):  # (one test for both: rare)
        done(
            entry,
            "",
            audit.INPUT_REQUIRED if data.startswith(INPUT_REQUIRED, end + len(RESULT)) else audit.TASK,
        )
    elif _is_error(data):
        error = audit.RATE_LIMITED if data.find(RATE_LIMITED, len(data) - TAIL) >= 0 else "tool_error"
        done(entry, error, "")
    else:
        done(entry, "", "")


def done(entry: Entry, error: str, paused: str) -> None:
    """The request of `entry` ended: an `error` type ("" = none), or `paused` (input_required,
    task: a tools/call answered before its tool's result)."""
    method, tool, started, noted = entry
    seconds = time.perf_counter() - started
    if metrics.ON:
        metrics.request_done(method, tool, error, seconds)
    if noted is not None and audit.LOG is not None:
        outcome = paused or audit.OK
        if error == "tool_error":
            outcome = audit.ERROR
        elif error == audit.RATE_LIMITED:
            outcome = audit.RATE_LIMITED
        elif error == CANCELLED:
            outcome = audit.CANCELLED
        elif error:
            outcome = audit.REFUSED
        audit.LOG.write(noted.principal, noted.client, noted.tool, outcome, seconds, noted.arguments)


def _is_error(data: bytes) -> bool:
    """A CallToolResult answer says isError: true. Its own isError is its last key (only the
    2026-07-28 stamp, resultType and the server's _meta, follows): the last one in the answer, so
    a key of the tool's structuredContent is never taken for it."""
    at = data.rfind(IS_ERROR, max(0, len(data) - TAIL))
    return at >= 0 and data.startswith(b"true", at + len(IS_ERROR))


def _code(data: bytes, end: int) -> str:
    """The JSON-RPC error code of an error answer (its id ends at `end`)."""
    start = data.find(b'"code":', end)
    if start < 0:
        return "error"
    start += 7
    stop = start
    while stop < len(data) and data[stop] in b"-0123456789":
        stop += 1
    return data[start:stop].decode() or "error"


def wanted() -> bool:
    """Whether sessions are measured: metrics or the audit log are on."""
    return metrics.ON or audit.LOG is not None
