"""One MCP client session, sans-IO: lines in, events out.

``Session.receive(line)`` applies the lifecycle and JSON-RPC rules of the negotiated
revision and returns events: ``Send`` (bytes to write), ``Call`` (a tool call to start)
and ``CancelCall`` (work for the router). The router reports back with ``call_done``; the session encodes
the answer. Nothing here touches a pipe or a socket.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.catalog import Catalog, InvalidCursor, Tool
from protomcp_host.protocol.events import Batch, Send
from protomcp_host.protocol.features import (
    CancelForward,
    ClientAnswer,
    FeatureCatalog,
    FeatureMethods,
    Forward,
    RootsChanged,
)
from protomcp_host.protocol.jsontypes import is_id
from protomcp_host.protocol.methods import FEATURES_PREFIX, STATEFUL, served
from protomcp_host.protocol.tasks import RELATED_TASK, Effects, Task, TaskMethods
from protomcp_host.protocol.visibility import ToolVisibility
from protomcp_sdk.wire.toollist import ToolListChange

SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = SUPPORTED_VERSIONS[-1]
BATCH_VERSIONS = frozenset({"2025-03-26"})
STRUCTURED_VERSIONS = frozenset({"2025-06-18", "2025-11-25", "2026-07-28"})
TASK_VERSIONS = frozenset({"2025-11-25"})
TASKS_CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
DEFAULT_MAX_IN_FLIGHT = 1000
SERVER_BUSY = -32000  # JSON-RPC's range for implementation-defined server errors
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


@dataclass(slots=True, eq=False)
class Call:
    """One tools/call from request to answer: the only record of it. The session owns it
    (``in_flight``) and returns it as the event that starts it; the host notes on it the
    execution that runs it, which the protocol core never reads."""

    id: bytes
    tool: Tool
    arguments: dict[str, Any]
    progress_token: str | int | None
    batch: Batch | None = None
    task: Task | None = None  # a task-augmented call: its answer goes to this task, not a response
    auth: dict[str, Any] | None = None  # verified claims of the caller (HTTP + OAuth) for the tool
    execution: Any = None  # what the host runs it as (calls.execution.Execution)
    capabilities: str = ""  # what the client declared (JSON), for ctx.client_capabilities
    answers: str = ""  # 2026-07-28: answers its requests for the client already have (JSON, by key)
    retry: Any = None  # 2026-07-28: (inputResponses, requestState) of a retried request
    task_later: bool = False  # 2026-07-28: becomes a task once its input round trip is done
    trace: tuple[str, str] = ("", "")  # tracing: the W3C traceparent/tracestate of its request's span
    arguments_proto: bytes = b""  # a typed tool's argument message as a proto-mcp client sent it
    result_proto: bool = False  # its caller reads a typed tool's result message itself (proto-mcp)


@dataclass(slots=True)
class CancelCall:
    call: Call


@dataclass(slots=True)
class TaskInput:
    """2026-07-28 tasks/update: the client's answers to a task's outstanding requests (the calls layer gives
    them to the task's call)."""

    task: Task
    responses: dict[str, Any]


@dataclass(slots=True)
class TaskCancel:
    """2026-07-28 tasks/cancel of a running task: the calls layer stops its call."""

    task: Task


@dataclass(slots=True)
class ToolAnswer:
    """A tool's result, already JSON: the content array (whole or in pieces, spliced as they
    are), the structuredContent object, and whether it is an error. `trusted` content comes
    from our own SDK (orjson output) and is not checked again."""

    content: list[bytes]
    structured: bytes = b""
    is_error: bool = False
    trusted: bool = False
    meta: bytes = b""  # the result's _meta object, JSON (e.g. a ToolError's code)
    # a typed tool's output message, serialized, instead of `structured` (Call.result_proto):
    # passed on in base64 under STRUCTURED_PROTO, for the proto-mcp codec alone
    structured_proto: bytes = b""


Event = (
    Send | Call | CancelCall | Forward | CancelForward | ClientAnswer | RootsChanged | TaskInput | TaskCancel
)
Handler = Callable[[rpc.Request, Batch | None], Event | list[Event] | None]


# _meta key of a typed tool's argument message in base64 (proto-mcp's Any, passed through)
PROTO_ARGUMENTS = "io.protomcp/argumentsProto"
# _meta key (true) of a call whose client reads a typed tool's result message itself, and the
# result's key of that message in base64 (both between the proto-mcp codec and this session)
PROTO_RESULT = "io.protomcp/resultProto"
STRUCTURED_PROTO = "io.protomcp/structuredProto"
_STRUCTURED_PROTO_KEY = b',"' + STRUCTURED_PROTO.encode() + b'":"'


def _proto_arguments(value: Any) -> bytes:
    try:
        return base64.b64decode(value, validate=True) if isinstance(value, str) else b""
    except binascii.Error:
        return b""


class ToolsListed(Protocol):
    """What a session's tools/list shows when not every tool is listed (--discovery search)."""

    def listed(self, session: Session) -> dict[str, dict[str, Any]]: ...


class Session:
    tool_list_scope = "in this session"  # whose tools a tool-list change changes (modern: the principal's)

    def __init__(
        self,
        catalog: Catalog,
        server_info: dict[str, Any],
        instructions: str | None = None,
        features: FeatureCatalog | None = None,
        *,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        tasks: TaskMethods | None = None,
    ) -> None:
        self.catalog = catalog
        self.max_in_flight = max_in_flight
        self.server_info = server_info
        self.instructions = instructions  # how to use this server, for the client's model
        self.version: str | None = None  # negotiated protocol revision
        self.client_info: dict[str, Any] = {}
        self.client_capabilities: dict[str, Any] = {}
        self.initialized = False  # notifications/initialized received
        self.log_level: str | None = None
        self.auth: dict[str, Any] | None = None  # the transport sets the caller's verified claims
        self.capabilities_json = ""  # client_capabilities as JSON, for the calls (ctx.client_capabilities)
        self.in_flight: dict[bytes, Call] = {}
        self.visibility = ToolVisibility()
        # What tools/list showed at the last flush, while a tool-list change is pending.
        self._tools_seen: dict[str, dict[str, Any]] | None = None
        # its tasks (in the host's shared store, as their owner)
        self.tasks = tasks if tasks is not None else TaskMethods()
        self.discovery: ToolsListed | None = None  # --discovery search (discovery.Discovery)
        # resources, prompts, completions; requests to the client (protocol/features.py)
        # (without `features`, a tools-only server: no resources/prompts methods or capabilities)
        self._features = FeatureMethods(
            self, features or FeatureCatalog(catalog.page_size), offered=features is not None
        )
        offered = {"tasks"}  # (2025-11-25 tasks are the session's own: always served)
        if features is not None:
            offered.add("features")
            if features.skills is not None:
                offered.add("skills")
        self._methods: dict[str, Handler] = {
            name: self._bound(method.handler) for name, method in served(STATEFUL, offered).items()
        }

    @property
    def features(self) -> FeatureMethods:
        """Its resources, prompts and completions, and its requests to the client."""
        return self._features

    def _bound(self, handler: str) -> Handler:
        """A registry handler name, bound to this session (or to its FeatureMethods)."""
        if handler.startswith(FEATURES_PREFIX):
            bound: Handler = getattr(self.features, handler.removeprefix(FEATURES_PREFIX))
            return bound
        own: Handler = getattr(self, handler)
        return own

    # -- input ---------------------------------------------------------------------
    def receive(self, line: bytes) -> list[Event]:
        return self.receive_decoded(rpc.decode(line))

    def receive_decoded(self, decoded: rpc.Message | list[rpc.Message]) -> list[Event]:
        """receive() of a line already decoded (``rpc.decode`` or ``rpc.decode_loaded``)."""
        if not isinstance(decoded, list):
            event = self._handle(decoded, None)
            if isinstance(event, list):  # a task request: its answer and what follows from it
                return event
            return [event, *self._released(event)] if event is not None else []
        if self.version not in BATCH_VERSIONS:
            revision = self.version or "an uninitialized session"
            return [
                Send(
                    rpc.error(
                        rpc.NULL_ID,
                        rpc.INVALID_REQUEST,
                        f"Invalid Request: batches are not supported in {revision}",
                    )
                )
            ]
        expecting = [m for m in decoded if isinstance(m, (rpc.Request, rpc.Invalid))]
        batch = Batch(len(expecting)) if expecting else None
        events: list[Event] = []
        ids: set[bytes] = set()  # a request answered at once no longer holds its id: remember it
        for message in decoded:
            if isinstance(message, rpc.Request) and message.id in ids:
                event = Send(
                    rpc.error(
                        message.id,
                        rpc.INVALID_REQUEST,
                        "Invalid Request: this id is already used by another request of the batch",
                    )
                )
            elif isinstance(message, rpc.Request) and message.method == "initialize":
                event = Send(
                    rpc.error(
                        message.id,
                        rpc.INVALID_REQUEST,
                        "Invalid Request: initialize must not be part of a batch",
                    )
                )
            else:
                event = self._handle(message, batch)
            if isinstance(message, rpc.Request):
                ids.add(message.id)
            if isinstance(event, list):  # task requests need 2025-11-25, which has no batches
                events.extend(event)
            elif isinstance(event, Send) and batch is not None:
                complete = batch.add(event.data)
                if complete is not None:
                    events.append(Send(complete, event.related))
            elif event is not None:
                events.append(event)
                events.extend(self._released(event))
        return events

    def _released(self, event: Event) -> list[Event]:
        """A cancelled call gets no answer: its batch may now be complete without it."""
        if isinstance(event, CancelCall):
            batch = event.call.batch
        elif isinstance(event, CancelForward):
            batch = event.forward.batch
        else:
            return []
        if batch is not None:
            complete = batch.drop()
            if complete is not None:
                return [Send(complete)]
        return []

    def _handle(self, message: rpc.Message, batch: Batch | None) -> Event | list[Event] | None:
        event = self._dispatch(message, batch)
        if isinstance(message, (rpc.Request, rpc.Invalid)):
            for sent in event if isinstance(event, list) else [event]:
                if isinstance(sent, Send) and sent.related is None:
                    sent.related = message.id
        return event

    def _dispatch(self, message: rpc.Message, batch: Batch | None) -> Event | list[Event] | None:
        if not isinstance(message, rpc.Request):  # (a request is the common case: tested first)
            if isinstance(message, rpc.Invalid):
                return Send(rpc.error(message.id, message.code, message.message))
            if isinstance(message, rpc.Notification):
                return self._notification(message)
            return self.features.client_answer(message)  # a Response
        refused = self.refuse_early(message)
        if refused is not None:
            return refused
        if self.version is None and message.method not in ("initialize", "ping"):
            return Send(
                rpc.error(
                    message.id,
                    rpc.INVALID_REQUEST,
                    "Invalid Request: the session is not initialized; send initialize first",
                )
            )
        return self._methods[message.method](message, batch)

    def handler(self, method: str) -> Handler:
        return self._methods[method]

    def route(self, method: str, handler: Handler) -> None:
        """Answer `method` with `handler` from now on (discovery.py serves tools/list and
        tools/call this way)."""
        self._methods[method] = handler

    def forwards(self) -> dict[bytes, Forward]:
        """The forwarded requests in progress, by id."""
        return self.features.forwarded

    def in_use(self, request_id: bytes) -> bool:
        """A request with this id is still in progress (its answer could not be told apart)."""
        return request_id in self.in_flight or request_id in self._features.forwarded

    def refuse_early(self, message: rpc.Request) -> Send | None:
        """The errors every era gives before a handler runs: an id in use, an unknown method."""
        if self.in_use(message.id):
            return Send(
                rpc.error(
                    message.id,
                    rpc.INVALID_REQUEST,
                    "Invalid Request: this id is already in use by a request in progress",
                )
            )
        if message.method not in self._methods:
            return Send(rpc.error(message.id, rpc.METHOD_NOT_FOUND, f"Method not found: {message.method}"))
        return None

    def _notification(self, message: rpc.Notification) -> Event | None:
        if message.method == "notifications/initialized" and self.version is not None:
            self.initialized = True
        elif message.method == "notifications/roots/list_changed" and self.features.offered:
            return RootsChanged()
        elif message.method == "notifications/cancelled":
            request_id = message.params.get("requestId")
            if is_id(request_id):
                call = self.in_flight.pop(orjson.dumps(request_id), None)
                if call is not None:  # no answer will be sent for it, as the spec asks
                    return CancelCall(call)
                self.tasks.stop_waiting(orjson.dumps(request_id))
                forward = self.features.cancelled(orjson.dumps(request_id))
                if forward is not None:
                    return CancelForward(forward)
        return None

    # -- requests ------------------------------------------------------------------
    def _initialize(self, request: rpc.Request, _: Batch | None) -> Event:
        params = request.params
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            return Send(
                rpc.error(
                    request.id, rpc.INVALID_PARAMS, 'Invalid params: "protocolVersion" must be a string'
                )
            )
        for key in ("capabilities", "clientInfo"):
            if not isinstance(params.get(key, {}), dict):
                return Send(
                    rpc.error(request.id, rpc.INVALID_PARAMS, f'Invalid params: "{key}" must be an object')
                )
        if self.version is not None:
            return Send(
                rpc.error(
                    request.id, rpc.INVALID_REQUEST, "Invalid Request: the session is already initialized"
                )
            )
        self.version = requested if requested in SUPPORTED_VERSIONS else LATEST_VERSION
        self.client_info = params.get("clientInfo", {})
        self.client_capabilities = params.get("capabilities", {})
        self.capabilities_json = orjson.dumps(self.client_capabilities).decode()
        capabilities: dict[str, Any] = {"logging": {}, "tools": {"listChanged": True}}
        if self.version in TASK_VERSIONS:
            capabilities["tasks"] = TASKS_CAPABILITY
        capabilities.update(self.features.capabilities())
        result: dict[str, Any] = {
            "protocolVersion": self.version,
            "capabilities": capabilities,
            "serverInfo": self.server_info,
        }
        if self.instructions and self.version != "2024-11-05":  # instructions came in 2025-03-26
            result["instructions"] = self.instructions
        return Send(rpc.result(request.id, result))

    def _ping(self, request: rpc.Request, _: Batch | None) -> Event:
        return Send(rpc.result(request.id, {}))

    def _set_level(self, request: rpc.Request, _: Batch | None) -> Event:
        level = request.params.get("level")
        if level not in LOG_LEVELS:
            return Send(
                rpc.error(
                    request.id,
                    rpc.INVALID_PARAMS,
                    f"Invalid params: level must be one of {', '.join(LOG_LEVELS)}",
                )
            )
        self.log_level = level
        return Send(rpc.result(request.id, {}))

    def _tools_list(self, request: rpc.Request, _: Batch | None) -> Event:
        cursor = request.params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            return Send(
                rpc.error(request.id, rpc.INVALID_PARAMS, 'Invalid params: "cursor" must be a string')
            )
        try:
            page = self.catalog.page(cursor, self.version or LATEST_VERSION, self._shown())
        except InvalidCursor as exc:
            return Send(rpc.error(request.id, rpc.INVALID_PARAMS, str(exc)))
        return Send(rpc.raw_result(request.id, page))

    def _tools_call(self, request: rpc.Request, batch: Batch | None) -> Event | list[Event]:
        params = request.params
        name = params.get("name")
        if not isinstance(name, str):
            return Send(rpc.error(request.id, rpc.INVALID_PARAMS, 'Invalid params: "name" must be a string'))
        arguments = params.get("arguments", {})
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return Send(
                rpc.error(request.id, rpc.INVALID_PARAMS, 'Invalid params: "arguments" must be an object')
            )
        tool = self.catalog.get(name)
        if tool is None:
            return Send(rpc.error(request.id, rpc.INVALID_PARAMS, f"Unknown tool: {name}"))
        if not self.visibility.visible(tool):
            return Send(
                rpc.error(
                    request.id,
                    rpc.INVALID_PARAMS,
                    f"Tool '{name}' is disabled {self.tool_list_scope} (it is not in tools/list); "
                    "a tool must enable it first",
                )
            )
        task = params.get("task") if self.version in TASK_VERSIONS else None
        refused = self._task_support(request, tool, task)
        if refused is not None:
            return refused
        problem = tool.validate(arguments)
        if problem is not None and task is None:
            return Send(rpc.result(request.id, error_result(problem)))
        if len(self.in_flight) >= self.max_in_flight:
            return Send(
                rpc.error(
                    request.id,
                    SERVER_BUSY,
                    f"Server busy: {self.max_in_flight} tool calls are already running in this session; "
                    "retry when some have finished",
                )
            )
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if token is not None and not is_id(token):
            token = None
        if task is not None:  # answered at once; the call (if the arguments are valid) runs on
            call = Call(request.id, tool, arguments, token, auth=self.auth)
            events = self._carry(self.tasks.create(request.id, task, call, problem))
            return [*events, call] if call.task is not None else events
        call = Call(
            request.id, tool, arguments, token, batch, auth=self.auth, capabilities=self.capabilities_json
        )
        if tool.messages is not None and isinstance(meta, dict):
            if PROTO_ARGUMENTS in meta:
                call.arguments_proto = _proto_arguments(meta[PROTO_ARGUMENTS])
            call.result_proto = meta.get(PROTO_RESULT) is True
        self.in_flight[request.id] = call
        return call

    # -- results from the router -----------------------------------------------------
    def call_done(self, call: Call, answer: ToolAnswer) -> bytes | None:
        """Encode a tool's answer. None when nothing is to be written (cancelled, or its
        batch still waits for other answers)."""
        if self.in_flight.pop(call.id, None) is None:
            return None
        return self._finish(call, rpc.raw_result(call.id, *self._call_result(call, answer)))

    def call_failed(self, call: Call, message: str) -> bytes | None:
        """The call could not complete (tool process died, timed out, ...): an isError result."""
        if self.in_flight.pop(call.id, None) is None:
            return None
        return self._finish(call, rpc.result(call.id, error_result(message)))

    def _finish(self, call: Call, data: bytes) -> bytes | None:
        return call.batch.add(data) if call.batch is not None else data

    def _call_result(self, call: Call, answer: ToolAnswer) -> list[bytes]:
        """The CallToolResult JSON object, in pieces."""
        chunks = answer.content or [b"[]"]
        structured = answer.structured
        if not answer.trusted:
            content = b"".join(chunks)
            try:
                if not isinstance(orjson.loads(content), list):
                    raise ValueError("content is not a list")
                if structured and not isinstance(orjson.loads(structured), dict):
                    raise ValueError("structuredContent is not an object")
            except ValueError:
                return [orjson.dumps(error_result(f"Tool '{call.tool.name}' returned malformed content"))]
            if b"\n" in content or b"\r" in content:  # keep one message per line
                content = orjson.dumps(orjson.loads(content))
            if b"\n" in structured or b"\r" in structured:
                structured = orjson.dumps(orjson.loads(structured))
            chunks = [content]
        parts = [b'{"content":', *chunks]
        if structured and self.version in STRUCTURED_VERSIONS:
            parts += [b',"structuredContent":', structured]
        elif answer.structured_proto:  # the message as it came, for the codec to unwrap
            parts += [_STRUCTURED_PROTO_KEY, base64.b64encode(answer.structured_proto), b'"']
        if answer.meta:
            parts += [b',"_meta":', answer.meta]
        parts.append(b',"isError":true}' if answer.is_error else b',"isError":false}')
        return parts

    # -- tasks (2025-11-25): the requests and records are in tasks.py -----------------------
    def _task_support(self, request: rpc.Request, tool: Tool, task: Any) -> Event | None:
        """Enforce the tool's execution.taskSupport (-32601, as the spec prescribes)."""
        if self.version not in TASK_VERSIONS:
            return None  # older revisions know no tasks: every tool is called directly
        mode = tool.mcp.get("execution", {}).get("taskSupport", "forbidden")
        if task is not None and mode == "forbidden":
            message = (
                f"Tool '{tool.name}' cannot run as a task (its execution.taskSupport is forbidden); "
                "call it without params.task"
            )
        elif task is None and mode == "required":
            message = (
                f"Tool '{tool.name}' must run as a task (its execution.taskSupport is required); "
                "add params.task to the call"
            )
        elif task is not None and not isinstance(task, dict):
            return Send(rpc.error(request.id, rpc.INVALID_PARAMS, 'Invalid params: "task" must be an object'))
        else:
            return None
        return Send(rpc.error(request.id, rpc.METHOD_NOT_FOUND, message))

    def _task_request(self, request: rpc.Request, _: Batch | None) -> Event | list[Event]:
        if self.version not in TASK_VERSIONS:
            return Send(
                rpc.error(
                    request.id,
                    rpc.METHOD_NOT_FOUND,
                    f"Method not found: {request.method} (tasks need protocol revision 2025-11-25)",
                )
            )
        return self._carry(self.tasks.handle(request))

    _task_get = _task_result = _task_list = _task_cancel = _task_request

    def _carry(self, effects: Effects) -> list[Event]:
        events: list[Event] = [Send(data, related) for data, related in effects.writes]
        return events + [CancelCall(call) for call in effects.cancel]

    def advance(self, now: float) -> list[Event]:
        """The time is `now`: tasks past their ttl expire."""
        self.tasks.now = now
        if now < self.tasks.store.earliest(self.tasks.owner):  # the common case: nothing to do
            return []
        return self._carry(self.tasks.advance(now))

    def task_done(self, call: Call, answer: ToolAnswer, now: float) -> list[Event]:
        """A task's call answered: the task completes (or fails, for an isError result)."""
        assert call.task is not None
        self.tasks.now = now
        outcome = b"".join(self._call_result(call, answer))
        if not outcome.endswith(b'"isError":true}'):
            return self._carry(self.tasks.finish(call.task, "completed", outcome, None))
        return self._carry(self.tasks.finish(call.task, "failed", outcome, _first_text(outcome)))

    def task_failed(self, call: Call, message: str, now: float) -> list[Event]:
        """A task's call could not complete (its process died, it timed out, ...)."""
        assert call.task is not None
        self.tasks.now = now
        outcome = orjson.dumps(error_result(message))
        return self._carry(self.tasks.finish(call.task, "failed", outcome, message))

    def task_status(self, call: Call, status: str, message: str, now: float) -> list[Event]:
        """The tool reported its task's status (working / input_required) or message."""
        return self._carry(self.tasks.report(call.task, status, message, now)) if call.task else []

    # -- the tools this session sees ----------------------------------------------------
    def _shown(self) -> Callable[[Tool], bool] | None:
        return None if self.visibility.is_default else self.visibility.visible

    def active_tools(self) -> list[str]:
        return [tool.name for tool in self.catalog.visible(self._shown())]

    def visible_tools(self) -> dict[str, dict[str, Any]]:
        """What this session's tools/list shows (compare before and after a change)."""
        if self.discovery is not None:
            return self.discovery.listed(self)
        return {tool.name: tool.mcp for tool in self.catalog.visible(self._shown())}

    def update_tools(self, change: ToolListChange) -> None:
        """Apply a tool-list change (names the catalog does not have are ignored). The
        list_changed notification it may call for comes from flush_notifications()."""
        if self._tools_seen is None:
            self._tools_seen = self.visible_tools()
        self.visibility.update(self.catalog, change)

    def catalog_changed(self, before: dict[str, dict[str, Any]]) -> list[Event]:
        """The catalog changed (a reload; `before` is this session's visible_tools() from just
        before): forget vanished names, and flush — a list_changed if the list changed."""
        self.visibility.prune(set(self.catalog.names()))
        if self._tools_seen is None:
            self._tools_seen = before
        return self.flush_notifications()

    @property
    def list_changed_pending(self) -> bool:
        """The tool list may have changed since the last flush_notifications()."""
        return self._tools_seen is not None

    def flush_notifications(self) -> list[Event]:
        """The notifications/tools/list_changed due since the last flush: one if this session's
        visible tool list differs from what it was then, none otherwise (however many
        changes came in between). The driver calls this once per batch of events."""
        seen = self._tools_seen
        if seen is None:
            return []
        self._tools_seen = None
        if not self.initialized or self.visible_tools() == seen:
            return []
        return [Send(rpc.notification("notifications/tools/list_changed"))]

    # -- server-initiated messages ----------------------------------------------------
    def log(
        self,
        level: str,
        logger: str | None,
        data: Any,
        task: Task | None = None,
        related: bytes | None = None,  # the request it is for (the modern era's logLevel is per request)
    ) -> bytes | None:
        if self.version is None:
            return None
        if level not in LOG_LEVELS:
            level = "warning" if level == "warn" else "info"
        if self.log_level is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(self.log_level):
            return None
        params: dict[str, Any] = {"level": level, "data": data}
        if logger:
            params["logger"] = logger
        if task is not None:
            params["_meta"] = {RELATED_TASK: {"taskId": task.id}}
        return rpc.notification("notifications/message", params)

    def progress(self, call: Call, progress: float, total: float | None, message: str) -> bytes | None:
        running = call.id in self.in_flight if call.task is None else not call.task.terminal
        if call.progress_token is None or not running:
            return None
        params: dict[str, Any] = {"progressToken": call.progress_token, "progress": _number(progress)}
        if total is not None:
            params["total"] = _number(total)
        if message and self.version != "2024-11-05":
            params["message"] = message
        if call.task is not None:
            params["_meta"] = {RELATED_TASK: {"taskId": call.task.id}}
        return rpc.notification("notifications/progress", params)


def error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


def _first_text(result: bytes) -> str | None:
    """The first text block of a CallToolResult (a failed task's statusMessage)."""
    blocks = orjson.loads(result).get("content") or []
    return next((b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)), None)


def _number(value: float) -> float | int:
    return int(value) if value.is_integer() else value
