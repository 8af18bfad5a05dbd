"""One MCP client session, sans-IO: lines in, events out.

``Session.receive(line)`` applies the lifecycle and JSON-RPC rules of the negotiated
revision and returns events: ``Send`` (bytes to write), ``Call`` (a tool call to start)
and ``CancelCall`` (work for the router). The router reports back with ``call_done``; the session encodes
the answer. Nothing here touches a pipe or a socket.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol
from weakref import proxy

import orjson

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.catalog import Catalog, InvalidCursor
from protomcp_host.protocol.events import Batch, Send
from protomcp_host.protocol.features import (
    CancelForward,
    FeatureCatalog,
    FeatureEra,
    FeatureMethods,
    Forward,
    RootsChanged,
)
from protomcp_host.protocol.handshake import LATEST_VERSION as LATEST_VERSION
from protomcp_host.protocol.handshake import LOG_LEVELS, TASK_VERSIONS, StatefulEra, offered
from protomcp_host.protocol.handshake import SUPPORTED_VERSIONS as SUPPORTED_VERSIONS
from protomcp_host.protocol.jsontypes import is_id
from protomcp_host.protocol.methods import ERA_PREFIX, FEATURES_PREFIX, STATEFUL, served
from protomcp_host.protocol.records import (
    PROTO_ARGUMENTS,
    PROTO_RESULT,
    Call,
    CancelCall,
    Event,
    Handler,
    ToolAnswer,
    call_result_parts,
    error_result,
    json_number,
    proto_arguments,
)
from protomcp_host.protocol.scopes import insufficient, lacking
from protomcp_host.protocol.task_events import TaskEvents
from protomcp_host.protocol.tasks import RELATED_TASK, Effects, Task, TaskMethods
from protomcp_host.protocol.tool_list import SessionToolList, ToolsListed
from protomcp_host.protocol.visibility import ToolVisibility

__all__ = [
    "LATEST_VERSION",
    "SUPPORTED_VERSIONS",
    "Call",
    "CancelCall",
    "Event",
    "Handler",
    "Send",
    "ToolAnswer",
    "error_result",
]

BATCH_VERSIONS = frozenset({"2025-03-26"})
DEFAULT_MAX_IN_FLIGHT = 1000
SERVER_BUSY = -32000  # JSON-RPC's range for implementation-defined server errors


SessionHandler = Callable[["Session", rpc.Request, Batch | None], Event | list[Event] | None]


class Era(Protocol):
    """What differs between the protocol eras, given to a session: StatefulEra (handshake.py,
    2024-11-05 to 2025-11-25) or ModernEra (modern.py, 2026-07-28). Its methods are given the
    session; it keeps no reference to it."""

    name: str  # its key in the method registry (methods.py)
    tool_list_scope: str  # whose tools a tool-list change changes

    @property
    def listens(self) -> Mapping[bytes, Any]:
        """2026-07-28 subscriptions/listen requests in progress."""

    def begin(self, session: Session) -> None: ...
    def feature_era(self) -> FeatureEra | None: ...
    def request(
        self, session: Session, message: rpc.Request, batch: Batch | None
    ) -> Event | list[Event] | None: ...
    def notification(self, session: Session, message: rpc.Notification) -> Event | None: ...
    def tools_call(
        self, session: Session, request: rpc.Request, batch: Batch | None
    ) -> Event | list[Event]: ...
    def ended(self, request_id: bytes) -> None: ...
    def refused(self, call: Call, answer: ToolAnswer) -> bytes | None: ...
    def stamp(self, result: Sequence[bytes]) -> list[bytes]: ...
    def stamp_call(self, parts: list[bytes], answer: ToolAnswer) -> list[bytes]: ...
    def log_floor(self, session: Session, related: bytes | None) -> str | None: ...
    def hears_list_changes(self, session: Session) -> bool: ...
    def list_changed(self, session: Session) -> list[Event]: ...


_TABLES: dict[tuple[type, frozenset[str]], dict[str, SessionHandler]] = {}


def handler_table(era: type, name: str, offered: frozenset[str]) -> dict[str, SessionHandler]:
    """The method table of an era's sessions when the host serves `offered` (made once)."""
    key = (era, offered)
    table = _TABLES.get(key)
    if table is None:
        table = _TABLES[key] = {
            method: _handler(era, spec.handler) for method, spec in served(name, set(offered)).items()
        }
    return table


def _handler(era: type, name: str) -> SessionHandler:
    """A registry handler name, as a function of the session: its own method, its
    FeatureMethods' ("features.x") or its era's ("era.x")."""
    if name.startswith(FEATURES_PREFIX):
        feature: Callable[..., Any] = getattr(FeatureMethods, name.removeprefix(FEATURES_PREFIX))

        def on_features(session: Session, request: rpc.Request, batch: Batch | None) -> Any:
            return feature(session.features, request, batch)

        return on_features
    if name.startswith(ERA_PREFIX):
        own: Callable[..., Any] = getattr(era, name.removeprefix(ERA_PREFIX))

        def on_era(session: Session, request: rpc.Request, batch: Batch | None) -> Any:
            return own(session.era, session, request, batch)

        return on_era
    method: SessionHandler = getattr(Session, name)
    return method


class Session:
    """One client session (a stdio process, an HTTP session, or one 2026-07-28 request): the
    rules both eras share; `era` is what differs (handshake.StatefulEra by default)."""

    def __init__(
        self,
        catalog: Catalog,
        server_info: dict[str, Any],
        instructions: str | None = None,
        features: FeatureCatalog | None = None,
        *,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        tasks: TaskMethods | None = None,
        era: Era | None = None,
        visibility: ToolVisibility | None = None,
        table: dict[str, SessionHandler] | None = None,
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
        self.visibility = (
            visibility if visibility is not None else ToolVisibility()
        )  # (modern: the principal's)
        # its tasks (in the host's shared store, as their owner)
        self.tasks = tasks if tasks is not None else TaskMethods()
        self.discovery: ToolsListed | None = None  # --discovery search (discovery.Discovery)
        # (without `features`, a tools-only server: no resources/prompts methods or capabilities)
        self._feature_catalog = features
        self._features: FeatureMethods | None = None  # made at first use
        self._routes: dict[str, Handler] | None = None  # this session's own handlers (route())
        self.era: Era = era if era is not None else StatefulEra()
        self._table = table if table is not None else handler_table(StatefulEra, STATEFUL, offered(features))
        myself = proxy(self)  # (collaborators keep a weak reference: see tool_list.py)
        self.tool_list = SessionToolList(myself)  # the tools it sees, list_changed due
        self.task_events = TaskEvents(myself)  # its tasks' side of tools/call and the router's reports
        self.era.begin(self)

    @property
    def features(self) -> FeatureMethods:
        """Resources, prompts, completions, requests to the client (protocol/features.py): made
        at first use (a tools/call has no need of it), with a weak reference back to the
        session, so that a session made per request is freed by reference counting."""
        made = self._features
        if made is None:
            catalog = self._feature_catalog
            offered = catalog is not None
            made = self._features = FeatureMethods(
                proxy(self),
                catalog if catalog is not None else FeatureCatalog(self.catalog.page_size),
                offered=offered,
                era=self.era.feature_era(),
            )
        return made

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
        if type(message) is rpc.Request:  # (the common case: tested first)
            return self.era.request(self, message, batch)
        if isinstance(message, rpc.Invalid):
            return Send(rpc.error(message.id, message.code, message.message))
        if isinstance(message, rpc.Notification):
            return self.era.notification(self, message)
        if isinstance(message, rpc.Response) and self._features is not None:
            return self._features.client.client_answer(message)  # (none made: it asked the client nothing)
        return None

    def answer(self, message: rpc.Request, batch: Batch | None) -> Event | list[Event] | None:
        """The method's handler's answer (the era has let the request through)."""
        routes = self._routes
        routed = routes.get(message.method) if routes is not None else None
        if routed is not None:
            return routed(message, batch)
        return self._table[message.method](self, message, batch)

    def handler(self, method: str) -> Handler:
        routed = self._routes.get(method) if self._routes is not None else None
        if routed is not None:
            return routed
        function = self._table[method]
        return lambda request, batch: function(self, request, batch)

    def route(self, method: str, handler: Handler) -> None:
        """Answer `method` with `handler` from now on (discovery.py serves tools/list and
        tools/call this way)."""
        if self._routes is None:
            self._routes = {}
        self._routes[method] = handler

    def forwards(self) -> dict[bytes, Forward]:
        """The forwarded requests in progress, by id."""
        return self._features.forwarded if self._features is not None else {}

    def in_use(self, request_id: bytes) -> bool:
        """A request with this id is still in progress (its answer could not be told apart)."""
        return (
            request_id in self.in_flight
            or (self._features is not None and request_id in self._features.forwarded)
            or request_id in self.era.listens
        )

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
        if message.method not in self._table:
            return Send(rpc.error(message.id, rpc.METHOD_NOT_FOUND, f"Method not found: {message.method}"))
        return None

    def notified(self, message: rpc.Notification) -> Event | None:
        """A notification, by the rules both eras share."""
        if message.method == "notifications/initialized" and self.version is not None:
            self.initialized = True
        elif message.method == "notifications/roots/list_changed" and self._feature_catalog is not None:
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
    def _tools_list(self, request: rpc.Request, _: Batch | None) -> Event:
        cursor = request.params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            return Send(
                rpc.error(request.id, rpc.INVALID_PARAMS, 'Invalid params: "cursor" must be a string')
            )
        try:
            page = self.catalog.page(cursor, self.version or LATEST_VERSION, self.tool_list.shown())
        except InvalidCursor as exc:
            return Send(rpc.error(request.id, rpc.INVALID_PARAMS, str(exc)))
        return Send(rpc.raw_result(request.id, page))

    def _tools_call(self, request: rpc.Request, batch: Batch | None) -> Event | list[Event]:
        return self.era.tools_call(self, request, batch)

    def start_call(self, request: rpc.Request, batch: Batch | None) -> Event | list[Event]:
        """A tools/call checked and started (or refused) by the rules both eras share."""
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
                    f"Tool '{name}' is disabled {self.era.tool_list_scope} (it is not in tools/list); "
                    "a tool must enable it first",
                )
            )
        missing = lacking(tool.scopes, self.auth)
        if missing:  # (over HTTP the transport answered 403 before: a batch, a WebSocket get this)
            return Send(rpc.error(request.id, rpc.INVALID_PARAMS, insufficient(f"Tool '{name}'", missing)))
        task = params.get("task") if self.version in TASK_VERSIONS else None
        refused = self.task_events.support(request, tool, task)
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
            events = self.carry(self.tasks.create(request.id, task, call, problem))
            return [*events, call] if call.task is not None else events
        call = Call(
            request.id, tool, arguments, token, batch, auth=self.auth, capabilities=self.capabilities_json
        )
        if tool.messages is not None and isinstance(meta, dict):
            if PROTO_ARGUMENTS in meta:
                call.arguments_proto = proto_arguments(meta[PROTO_ARGUMENTS])
            call.result_proto = meta.get(PROTO_RESULT) is True
        self.in_flight[request.id] = call
        return call

    # -- results from the router -----------------------------------------------------
    def call_done(self, call: Call, answer: ToolAnswer) -> bytes | None:
        """Encode a tool's answer. None when nothing is to be written (cancelled, or its
        batch still waits for other answers)."""
        era = self.era
        era.ended(call.id)
        if self.in_flight.pop(call.id, None) is None:
            return None
        if answer.is_error:
            refused = era.refused(call, answer)
            if refused is not None:
                return refused
        return self._finish(call, rpc.raw_result(call.id, *self.call_result(call, answer)))

    def call_failed(self, call: Call, message: str) -> bytes | None:
        """The call could not complete (tool process died, timed out, ...): an isError result."""
        if self.in_flight.pop(call.id, None) is None:
            return None
        self.era.ended(call.id)
        return self._finish(
            call, rpc.raw_result(call.id, *self.era.stamp([orjson.dumps(error_result(message))]))
        )

    def _finish(self, call: Call, data: bytes) -> bytes | None:
        return call.batch.add(data) if call.batch is not None else data

    def call_result(self, call: Call, answer: ToolAnswer) -> list[bytes]:
        """The CallToolResult JSON object, in pieces (stamped as the era asks)."""
        return self.era.stamp_call(call_result_parts(call, answer, self.version), answer)

    def carry(self, effects: Effects) -> list[Event]:
        """Effects of the task store (tasks.py), as events."""
        events: list[Event] = [Send(data, related) for data, related in effects.writes]
        return events + [CancelCall(call) for call in effects.cancel]

    # -- server-initiated messages ----------------------------------------------------
    def log(
        self,
        level: str,
        logger: str | None,
        data: Any,
        task: Task | None = None,
        related: bytes | None = None,  # the request it is for (the modern era's logLevel is per request)
    ) -> bytes | None:
        floor = self.era.log_floor(self, related)
        if floor is None:
            return None
        if level not in LOG_LEVELS:
            level = "warning" if level == "warn" else "info"
        if floor and LOG_LEVELS.index(level) < LOG_LEVELS.index(floor):
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
        params: dict[str, Any] = {"progressToken": call.progress_token, "progress": json_number(progress)}
        if total is not None:
            params["total"] = json_number(total)
        if message and self.version != "2024-11-05":
            params["message"] = message
        if call.task is not None:
            params["_meta"] = {RELATED_TASK: {"taskId": call.task.id}}
        return rpc.notification("notifications/progress", params)
