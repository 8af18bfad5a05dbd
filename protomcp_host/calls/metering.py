"""One session's requests measured, when metrics or the audit log are on (telemetry/): each
request timed from the message that brings it to the message that answers it, whatever path
the answer took, and recorded by method, tool and outcome; each tool call also written to the
audit log. Like tracing.RequestSpans, the router hands it every message it reads (decoded) and
every message it writes; an answer is told by its first bytes, an error by the key that follows
its id, an isError result by its last isError key (the CallToolResult's own). A tool call that
succeeds is told by the router before its answer is written (`succeeded`: the router has the
tool's answer, so no byte of it is read), which leaves its write nothing to find.

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
from protomcp_host.protocol.records import Call
from protomcp_host.protocol.request_meta import CLIENT_INFO
from protomcp_host.protocol.session import Session
from protomcp_host.protocol.tasks import Task
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
TASK_ID = b'"taskId":"'  # in a CreateTaskResult (the host makes task ids: no escapes in them)
PAUSED_KEYS = b"rt"  # the first letters of a paused result's first key (resultType, task)
ERROR_KEY, TRUE = ord("e"), ord("t")  # an error answer's key; isError's value
TAIL = 1024  # bytes of a CallToolResult's end that hold its isError (after it: the result's stamp)
RATE_LIMITED = b'"protomcp/error":{"code":"rate_limited"'  # in a refusal's _meta (calls/limits.py)
CANCELLED = "cancelled"

Writer = Callable[[bytes, bytes | None], None]
Entry = tuple[rpc.Request, float]
"""A request in progress: the request and its start. Its labels, and what the audit log says
of it, are read when it ends (from the request and its session, which do not change meanwhile):
a request pays for what it is told of once, at its end."""


class RequestMeter:
    __slots__ = ("open", "session")

    def __init__(self, session: Session) -> None:
        self.session = session
        self.open: dict[bytes, Entry] = {}  # requests in progress, by id

    def received(self, decoded: rpc.Message | list[rpc.Message]) -> None:
        """A message from the client (Router.feed notes a Request inline, and hands the rest)."""
        if type(decoded) is rpc.Request:
            self.open[decoded.id] = (decoded, time.perf_counter())
        elif type(decoded) is rpc.Notification and decoded.method == "notifications/cancelled":
            cancelled = decoded.params.get("requestId")
            if is_id(cancelled):
                self.close(orjson.dumps(cancelled), CANCELLED)
        # (a batch, 2025-03-26 only, is answered as one array: its requests are not measured)

    def watching(self, write: Writer) -> Writer:
        """`write`, measuring the request each message answers (one frame per message: every
        message a session writes passes here)."""
        open_ = self.open
        session = self.session
        skip = len(ANSWER)

        def measured(data: bytes, related: bytes | None = None) -> None:
            write(data, related)
            if open_ and data[:skip] == ANSWER:
                end = data.find(b',"', skip)
                entry = open_.pop(data[skip:end], None) if end > 0 else None
                if entry is not None:
                    answered(session, entry[0], entry[1], data, end)

        return measured

    def succeeded(self, request_id: bytes, tool: str) -> None:
        """A tools/call of `tool` answered by a result that is not an error, about to be written:
        measured here, its answer's bytes never read (the router knows; see Router.call_answered).
        Its write then finds no request open under its id."""
        entry = self.open.pop(request_id, None)
        if entry is not None:
            succeeded(self.session, entry[0], entry[1], tool)

    def close(self, request_id: bytes, why: str) -> None:
        entry = self.open.pop(request_id, None)
        if entry is not None:
            done(self.session, *entry, why)

    def close_all(self, why: str) -> None:
        for request_id in list(self.open):
            self.close(request_id, why)


class OneRequest:
    """A 2026-07-28 request measured by its HTTP endpoint (transports/ports.RequestMeasure)."""

    __slots__ = ("request", "session", "started")

    def __init__(self, session: Session, request: rpc.Request) -> None:
        self.session = session
        self.request = request
        self.started = time.perf_counter()  # (0.0 once it is told how it ended)

    def answered(self, data: bytes, end: int) -> None:
        started = self.started
        if started:
            self.started = 0.0
            answered(self.session, self.request, started, data, end)

    def succeeded(self, tool: str) -> None:
        """Its tools/call of `tool` answered by a result that is not an error (RequestMeter's)."""
        started = self.started
        if started:
            self.started = 0.0
            succeeded(self.session, self.request, started, tool)

    def unanswered(self) -> None:
        started = self.started
        if started:
            self.started = 0.0
            done(self.session, self.request, started, CANCELLED)


def answered(session: Session, request: rpc.Request, started: float, data: bytes, end: int) -> None:
    """`request` (begun at `started`) is answered by `data` (its id ends at `end`): an error, a
    tools/call paused (input_required, task: answered before its tool's result), an isError
    result (its own isError is its last key, only the 2026-07-28 stamp, resultType and the
    server's _meta follow it: the last one in the answer, so a key of the tool's
    structuredContent is never taken for it), or a success. Inline: every answer passes here."""
    seconds = time.perf_counter() - started
    error = paused = task = ""
    # (bytes are indexed, not searched, where a letter tells: a method call with a start
    # argument costs as much as the rest of the classification)
    if data[end + 2] == ERROR_KEY:  # ,"error": rather than ,"result":
        error = _code(data, end)
    elif request.method == TOOLS_CALL:
        result = end + len(RESULT)
        if data[result + 2] in PAUSED_KEYS and data.startswith(PAUSED, result):  # (rare)
            paused = audit.INPUT_REQUIRED if data.startswith(INPUT_REQUIRED, result) else audit.TASK
            if paused == audit.TASK and audit.LOG is not None:
                task = _task_id(data, result)
        elif is_error_result(data):
            limited = data.find(RATE_LIMITED, len(data) - TAIL) >= 0
            error = audit.RATE_LIMITED if limited else "tool_error"
    ended(session, request, seconds, error, paused, task)


def succeeded(session: Session, request: rpc.Request, started: float, tool: str) -> None:
    """A tools/call of `tool` (begun at `started`) answered by a result that is not an error: told
    by the router, which has the tool's answer (Router.call_answered), before it is written."""
    seconds = time.perf_counter() - started
    if metrics.ON:
        metrics.request_done(TOOLS_CALL, tool, "", seconds)
    if audit.LOG is not None:
        _audit(audit.LOG, session, request, seconds, "", "", "")


def done(session: Session, request: rpc.Request, started: float, error: str) -> None:
    """`request` (begun at `started`) ended unanswered: `error` says why (cancelled)."""
    ended(session, request, time.perf_counter() - started, error, "")


def ended(
    session: Session, request: rpc.Request, seconds: float, error: str, paused: str, task: str = ""
) -> None:
    """`request` ended after `seconds`: an `error` type ("" = none), or `paused` (as `task`)."""
    method = request.method
    if method == TOOLS_CALL:
        name = request.params.get("name")
        tool = name if type(name) is str and name in session.catalog else UNKNOWN
    else:
        method, tool = (method if method in METHODS else UNKNOWN), ""
    if metrics.ON:
        metrics.request_done(method, tool, error, seconds)
    if audit.LOG is not None and method == TOOLS_CALL:
        _audit(audit.LOG, session, request, seconds, error, paused, task)


def _audit(
    log: audit.AuditLog,
    session: Session,
    request: rpc.Request,
    seconds: float,
    error: str,
    paused: str,
    task: str,
) -> None:
    """The audit log's line of a tools/call."""
    outcome = paused or audit.OK
    if error == "tool_error":
        outcome = audit.ERROR
    elif error == audit.RATE_LIMITED:
        outcome = audit.RATE_LIMITED
    elif error == CANCELLED:
        outcome = audit.CANCELLED
    elif error:
        outcome = audit.REFUSED
    auth = session.auth
    params = request.params
    info: Any = session.client_info
    if not info:  # 2026-07-28: each request says who the client is
        meta = params.get("_meta")
        info = meta.get(CLIENT_INFO) if isinstance(meta, dict) else None
    name = params.get("name")
    client = audit.client_name(info, auth)
    log.write(
        log.principal(auth),
        client,
        name if isinstance(name, str) else "",
        outcome,
        seconds,
        params.get("arguments") if log.arguments else None,
        task,
    )
    if task:
        log.task_started(task, client)


def task_ended(task: Task, call: Call) -> None:
    """The audit log's last line of a call that went on as `task` (TaskStore.on_finished): how
    the task ended, and how long it ran."""
    log = audit.LOG
    if log is None:
        return
    outcome = audit.TASK_OUTCOMES.get(task.status, audit.EXPIRED)  # (not terminal: its ttl passed)
    if outcome == audit.OK and is_error_result(task.outcome):  # (2026-07-28: isError completes it)
        outcome = audit.ERROR
    log.write(
        log.principal(call.auth),
        log.task_clients.pop(task.id, None),
        call.tool.name,
        outcome,
        max(0.0, task.updated - task.created),
        call.arguments if log.arguments else None,
        task.id,
    )


def is_error_result(data: bytes) -> bool:
    """Whether a CallToolResult (or an answer holding one) says isError: true, by its own isError
    key, the last one (in its last TAIL bytes: only the era's stamp and _meta follow it)."""
    at = data.rfind(IS_ERROR, len(data) - TAIL) if len(data) > TAIL else data.rfind(IS_ERROR)
    return at >= 0 and data[at + len(IS_ERROR)] == TRUE


def _task_id(data: bytes, result: int) -> str:
    """The taskId of a CreateTaskResult answer (its result starts at `result`); "" if none."""
    start = data.find(TASK_ID, result)
    if start < 0:
        return ""
    start += len(TASK_ID)
    return data[start : data.find(b'"', start)].decode(errors="replace")


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
    """Whether sessions are measured: metrics or the audit log are on (Router.measure tests
    the same inline)."""
    return metrics.ON or audit.LOG is not None
