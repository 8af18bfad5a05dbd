"""The 2026-07-28 era of MCP, sans-IO: every request carries its protocol version and the
client's capabilities in ``params._meta`` and is served on its own, without a handshake.

A modern connection is a ``Session`` (the call record, argument checks, the catalog, resources
and prompts are the same) given a ``ModernEra``: its requests go through the ``_meta`` ladder
instead of the lifecycle, and its results are stamped: ``resultType``, the server's info in
``_meta``, and cache hints where the revision asks for them. Its tool-list control state is the
principal's (``visibility`` is shared by every connection of one principal), not the
connection's.

A transport decides the era of each message (``is_modern``); this module decides nothing
about connections.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.catalog import Catalog
from protomcp_host.protocol.events import Batch, Send
from protomcp_host.protocol.features import Entry, FeatureCatalog, Forward
from protomcp_host.protocol.jsontypes import is_id
from protomcp_host.protocol.methods import METHODS, MODERN
from protomcp_host.protocol.modern_tasks import TaskCalls, declares_tasks, needs_tasks
from protomcp_host.protocol.records import Call, Event, ToolAnswer
from protomcp_host.protocol.request_meta import (
    CACHE_TTL_MS,
    LIST_FLAGS,
    MISSING_CAPABILITY,
    MODERN_VERSION,
    SERVER_INFO,
    TASKS_EXTENSION,
    Listen,
    RequestEnvelope,
    _retry,
    missing_capability,
    read_envelope,
    stamp,
    supported_versions,
)
from protomcp_host.protocol.scopes import restricts
from protomcp_host.protocol.session import DEFAULT_MAX_IN_FLIGHT, Session, SessionHandler, handler_table
from protomcp_host.protocol.tasks import TaskMethods, TaskStore
from protomcp_host.protocol.visibility import ToolVisibility

# Listings an entry's scopes may filter (protocol/scopes.py).
SCOPED_LISTS: dict[str, Callable[[FeatureCatalog], list[Entry]]] = {
    "resources/list": lambda features: features.resources.ordered(),
    "resources/templates/list": lambda features: features.templates.ordered(),
    "prompts/list": lambda features: features.prompts.ordered(),
}


class ModernFeatures:
    """The modern era's side of one connection's resources and prompts (features.FeatureEra):
    an unknown resource is -32602, answers from tool processes are stamped, and notifications
    go to the listen streams that asked for them, tagged."""

    __slots__ = ("era",)
    not_found = rpc.INVALID_PARAMS

    def __init__(self, era: ModernEra) -> None:
        self.era = era

    def answered(self, forward: Forward, result: tuple[bytes, ...]) -> list[bytes]:
        return self.era.stamped(result, cache=bool(METHODS[forward.method].cache))

    def ended(self, forward: Forward) -> None:
        self.era.envelopes.pop(forward.id, None)

    def list_changed(self, notes: list[str]) -> list[bytes]:
        """Only on subscriptions/listen streams that asked for them, tagged."""
        out = []
        for listen in self.era.listens.values():
            for note in notes:
                if listen.honored.get(LIST_FLAGS.get(note, "")) is True:
                    out.append(listen.tagged(note))
        return out

    def updates(self, uri: str) -> list[bytes]:
        return [
            listen.tagged("notifications/resources/updated", {"uri": uri})
            for listen in self.era.listens.values()
            if uri in listen.honored.get("resourceSubscriptions", ())
        ]


_NOTHING: dict[str, Any] = {}  # (read only)


class ModernShared:
    """What every modern-era connection of a host shares, made once rather than per request:
    the method table (handlers taking the session), the stamps of results, and the settings.
    Nothing in it depends on the request or the principal."""

    def __init__(
        self,
        catalog: Catalog,
        server_info: dict[str, Any],
        instructions: str | None = None,
        features: FeatureCatalog | None = None,
        *,
        serve_modern: bool = False,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        task_store: TaskStore | None = None,
    ) -> None:
        self.catalog = catalog
        self.server_info = server_info
        self.instructions = instructions
        self.offered = features is not None  # resources and prompts are served
        self.features = features or FeatureCatalog(catalog.page_size)
        self.serve_modern = serve_modern
        self.max_in_flight = max_in_flight
        self.task_store = task_store
        self.tasks = TaskMethods()  # a connection's own (2025-11-25) tasks: none in this era
        self.task_calls = TaskCalls(task_store, server_info)  # the tasks extension's requests
        meta = orjson.dumps({SERVER_INFO: server_info})
        self.complete = b'"resultType":"complete","_meta":' + meta
        self.cacheable = (
            b'"resultType":"complete","ttlMs":%d,"cacheScope":"public","_meta":' % CACHE_TTL_MS + meta
        )
        self.private = self.cacheable.replace(b'"public"', b'"private"')
        # a CallToolResult's last piece (session.py), and the same stamped
        self.endings = {
            end: stamp([end], self.complete)[0] for end in (b',"isError":false}', b',"isError":true}')
        }
        self._task_tools = (-1, False)  # (catalog generation, whether a tool supports tasks)

    def task_tools(self) -> bool:
        """Whether some tool of the catalog supports tasks (execution.taskSupport)."""
        generation, found = self._task_tools
        if generation != self.catalog.generation:
            found = any("execution" in tool.mcp for tool in self.catalog.visible(lambda _: True))
            self._task_tools = (self.catalog.generation, found)
        return found

    def methods(self) -> dict[str, SessionHandler]:
        """The method table (another when --skills starts being served: their methods join)."""
        offered = set()
        if self.task_store is not None:
            offered.add("tasks")
        if self.offered:
            offered.add("features")
            if self.features.skills is not None:
                offered.add("skills")
        return handler_table(ModernEra, MODERN, frozenset(offered))

    def session(self, *, visibility: ToolVisibility | None = None, owner: str = "") -> Session:
        """One connection's session (a stdio process, an HTTP request): `visibility` is the
        principal's tool-list state; `owner` the principal, as the owner of its tasks."""
        return Session(
            self.catalog,
            self.server_info,
            self.instructions,
            self.features if self.offered else None,
            max_in_flight=self.max_in_flight,
            tasks=self.tasks,  # (no connection of this era has tasks of its own)
            era=ModernEra(self, owner),
            visibility=visibility,
            table=self.methods(),
        )


class ModernEra:
    """One connection's modern-era requests. Nothing carries over from one request to the
    next but the principal's tool-list state and tasks. Every request goes through the
    ``_meta`` ladder (no handshake) and its results are stamped: ``resultType``, the server's
    info in ``_meta``, and cache hints where the revision asks for them. Its tool-list control
    state is the principal's (the session's ``visibility`` is shared by every connection of
    one principal), not the connection's.

    Tasks (the ``io.modelcontextprotocol/tasks`` extension) live in the host's one task store,
    owned by the principal (``owner``); a request that declares the extension in its
    capabilities may get a ``CreateTaskResult`` for a tool that supports tasks."""

    name = MODERN
    tool_list_scope = "for this principal (all its connections)"

    def __init__(self, shared: ModernShared, owner: str = "") -> None:
        self.shared = shared
        self.task_store = shared.task_store  # None: the tasks extension is not offered
        self.owner = owner  # the principal, as the owner of its tasks
        self.envelopes: dict[bytes, RequestEnvelope] = {}  # requests in progress: what they declared
        self.listens: dict[bytes, Listen] = {}  # subscriptions/listen requests in progress
        self._envelope: RequestEnvelope | None = None  # the last request's, read from ...
        self._meta: Any = None  # ... this _meta

    def begin(self, session: Session) -> None:
        session.version = MODERN_VERSION
        session.client_info = _NOTHING  # (never changed in this era)
        session.client_capabilities = _NOTHING  # (each request's envelope replaces it)

    def feature_era(self) -> ModernFeatures:
        return ModernFeatures(self)

    # -- the ladder --------------------------------------------------------------------
    def request(
        self, session: Session, message: rpc.Request, batch: Batch | None
    ) -> Event | list[Event] | None:
        meta = message.params.get("_meta")
        envelope = self._envelope
        if envelope is None or meta != self._meta:  # (a connection's requests mostly declare the same)
            read = read_envelope(message, self.shared.serve_modern)
            if not isinstance(read, RequestEnvelope):
                code, text, data = read
                return Send(rpc.error(message.id, code, text, data))
            envelope = self._envelope = read
            self._meta = meta
        refused = session.refuse_early(message)
        if refused is not None:
            return refused
        capabilities = session.client_capabilities = envelope.capabilities
        session.capabilities_json = orjson.dumps(capabilities).decode() if capabilities else "{}"
        method = message.method
        retry = None
        if METHODS[method].input_required:
            retry = _retry(message.params)
            if isinstance(retry, str):
                return Send(rpc.error(message.id, rpc.INVALID_PARAMS, retry))
        event = session.answer(message, batch)
        if isinstance(event, Send):
            return self._stamp_send(session, message, event)
        if isinstance(event, (Call, Forward)):
            if retry is not None:
                event.retry = retry
            if envelope.log_level is not None or capabilities:
                self.envelopes[message.id] = envelope  # (one that declares nothing need not be kept)
        return event

    def notification(self, session: Session, message: rpc.Notification) -> Event | None:
        if message.method != "notifications/cancelled":
            return None
        request_id = message.params.get("requestId")
        if is_id(request_id):
            self.envelopes.pop(orjson.dumps(request_id), None)
            if self.listens.pop(orjson.dumps(request_id), None) is not None:
                return None  # the stream ends; nothing more is sent for it
        return session.notified(message)

    def _stamp_send(self, session: Session, request: rpc.Request, event: Send) -> Send:
        """A result answered at once, stamped (errors pass as they are)."""
        data = event.data
        head = 22 + len(request.id)  # len(b'{"jsonrpc":"2.0","id":') + the id
        if data[head : head + 10] != b',"result":':
            return event
        shared = self.shared
        cache = METHODS[request.method].cache
        if not cache:
            extra = shared.complete
        elif cache == "principal":  # public, unless tool-list control or the token's scopes shape it
            extra = shared.private if session.tool_list.own else shared.cacheable
        elif request.method in SCOPED_LISTS and restricts(
            SCOPED_LISTS[request.method](shared.features), session.auth
        ):
            extra = shared.private  # filtered by the token's scopes: this caller's own
        else:
            extra = shared.cacheable
        body = stamp([data[head + 10 : -1]], extra)[0]
        return Send(data[: head + 10] + body + b"}", event.related)

    def stamped(self, result: Sequence[bytes], *, cache: bool = False) -> list[bytes]:
        """A result object from a tool process, stamped; a _meta it has keeps its keys."""
        joined = b"".join(result)
        if b'"_meta"' in joined:
            value = orjson.loads(joined)
            if isinstance(value, dict) and isinstance(value.get("_meta"), dict):
                value["_meta"] = {**value["_meta"], SERVER_INFO: self.shared.server_info}
                value["resultType"] = "complete"
                if cache:
                    value.update(ttlMs=CACHE_TTL_MS, cacheScope="public")
                return [orjson.dumps(value)]
        return stamp(result, self.shared.cacheable if cache else self.shared.complete)

    # -- requests --------------------------------------------------------------------
    def _discover(self, session: Session, request: rpc.Request, _: Batch | None) -> Event:
        capabilities: dict[str, Any] = {"logging": {}, "tools": {"listChanged": True}}
        capabilities.update(session.features.capabilities())
        result: dict[str, Any] = {
            "supportedVersions": supported_versions(self.shared.serve_modern),
            "capabilities": capabilities,
        }
        if self.task_store is not None:
            capabilities.setdefault("extensions", {})[TASKS_EXTENSION] = {}
        if session.instructions:
            result["instructions"] = session.instructions
        return Send(rpc.result(request.id, result))

    def _listen(self, session: Session, request: rpc.Request, _: Batch | None) -> Event:
        """Acknowledged at once (the first message of the stream); the stream then carries the
        notifications asked for, tagged, until the client cancels it or the server ends it."""
        wanted = request.params.get("notifications")
        if not isinstance(wanted, dict):
            return Send(
                rpc.error(request.id, rpc.INVALID_PARAMS, 'Invalid params: "notifications" must be an object')
            )
        if wanted.get("taskIds") and not declares_tasks(session):
            return Send(needs_tasks(request.id, "Listening to tasks"))
        honored: dict[str, Any] = {}
        offered = session.features.offered
        for flag in ("toolsListChanged", "promptsListChanged", "resourcesListChanged"):
            if wanted.get(flag) is True and (offered or flag == "toolsListChanged"):
                honored[flag] = True
        uris = wanted.get("resourceSubscriptions")
        if offered and isinstance(uris, list) and (kept := [u for u in uris if isinstance(u, str)]):
            honored["resourceSubscriptions"] = kept
        task_ids = wanted.get("taskIds")
        if self.task_store is not None and isinstance(task_ids, list):
            mine = {task.id for task in self.task_store.owned_by(self.owner)}  # not another principal's
            if kept := [t for t in task_ids if isinstance(t, str) and t in mine]:
                honored["taskIds"] = kept
        listen = self.listens[request.id] = Listen(request.id, honored)
        ack = listen.tagged("notifications/subscriptions/acknowledged", {"notifications": honored})
        return Send(ack, request.id)

    def close_listens(self) -> list[Send]:
        """The server ends every listen stream gracefully (shutdown)."""
        listens, self.listens = self.listens, {}
        return [Send(listen.closing(), listen.id) for listen in listens.values()]

    def tools_call(self, session: Session, request: rpc.Request, batch: Batch | None) -> Event | list[Event]:
        """A tool that supports tasks runs as one when the request declares the extension
        (task="required" and "optional"); without it, a required one is refused (-32021) and
        an optional one answers synchronously, as the extension prescribes."""
        if not self.shared.task_tools():  # (most catalogs: no tool supports tasks)
            return session.start_call(request, batch)
        name = request.params.get("name")
        tool = session.catalog.get(name) if isinstance(name, str) else None
        execution = tool.mcp.get("execution") if tool is not None else None
        if execution is None:  # (this tool: no task support to weigh)
            return session.start_call(request, batch)
        mode = execution.get("taskSupport")
        as_task = mode in ("optional", "required") and self.task_store is not None and declares_tasks(session)
        if mode == "required" and not as_task:
            return Send(needs_tasks(request.id, f"Tool '{name}' must run as a task: it"))
        event = session.start_call(request, batch)
        if not as_task or not isinstance(event, Call):
            return event
        if tool is not None and tool.input_before_task:  # the round trip first (become_task)
            event.task_later = True
            return event
        return self.shared.task_calls.as_task(session, self.owner, request, event)

    # -- the tasks extension (modern_tasks.py) ---------------------------------------------
    def become_task(self, session: Session, call: Call) -> bytes | None:
        """A call of an input_before_task tool whose questions are answered becomes a task
        now: the CreateTaskResult that answers its request (None: it stays a plain request)."""
        created = self.shared.task_calls.become_task(session, self.owner, call)
        if created is not None:
            self.envelopes.pop(call.id, None)
        return created

    def _task_get(self, session: Session, request: rpc.Request, _: Batch | None) -> Event:
        return self.shared.task_calls.get(session, self.owner, request)

    def _task_update(self, session: Session, request: rpc.Request, _: Batch | None) -> Event | list[Event]:
        return self.shared.task_calls.update(session, self.owner, request)

    def _task_cancel(self, session: Session, request: rpc.Request, _: Batch | None) -> Event | list[Event]:
        return self.shared.task_calls.cancel(session, self.owner, request)

    # -- answers ---------------------------------------------------------------------
    def ended(self, request_id: bytes) -> None:
        if self.envelopes:
            self.envelopes.pop(request_id, None)

    def refused(self, call: Call, answer: ToolAnswer) -> bytes | None:
        """A tool's escaped missing-capability error: the request is refused with -32021."""
        required = missing_capability(answer)
        if required is None:
            return None
        return rpc.error(
            call.id,
            MISSING_CAPABILITY,
            f"Tool '{call.tool.name}' needs a client capability the request did not declare",
            {"requiredCapabilities": required},
        )

    def stamp(self, result: Sequence[bytes]) -> list[bytes]:
        return stamp(result, self.shared.complete)

    def stamp_call(self, parts: list[bytes], answer: ToolAnswer) -> list[bytes]:
        if answer.meta:
            return self.stamped(parts)
        ending = self.shared.endings.get(parts[-1])  # (the usual last piece, stamped already)
        if ending is not None:
            parts[-1] = ending
            return parts
        return stamp(parts, self.shared.complete)

    def input_required(
        self, session: Session, request_id: bytes, requests: dict[str, Any], state: str
    ) -> bytes | None:
        """The request (a call or a forwarded one) needs input from the client: it ends here
        with an InputRequiredResult; the client retries with the answers and `state`."""
        call = session.in_flight.pop(request_id, None)
        forward = session.features.forwarded.pop(request_id, None) if call is None else None
        if call is None and forward is None:
            return None
        self.envelopes.pop(request_id, None)
        result: dict[str, Any] = {"resultType": "input_required", "requestState": state}
        if requests:
            result["inputRequests"] = requests
        result["_meta"] = {SERVER_INFO: self.shared.server_info}
        return rpc.result(request_id, result)

    def end(self, session: Session, request_id: bytes, data: bytes) -> bytes | None:
        """End a request in progress with `data` (None: it is over already)."""
        if (
            session.in_flight.pop(request_id, None) is None
            and session.features.forwarded.pop(request_id, None) is None
        ):
            return None
        self.envelopes.pop(request_id, None)
        return data

    # -- what reaches the client besides answers ----------------------------------------
    def log_floor(self, session: Session, related: bytes | None) -> str | None:
        """Only for a request that asked for logs (its logLevel), at or above that level."""
        envelope = self.envelopes.get(related) if related is not None else None
        return envelope.log_level if envelope is not None else None

    def hears_list_changes(self, session: Session) -> bool:
        return bool(self.listens)

    def list_changed(self, session: Session) -> list[Event]:
        """tools/list_changed on the listen streams that asked."""
        note = "notifications/tools/list_changed"
        return [
            Send(listen.tagged(note), listen.id)
            for listen in self.listens.values()
            if listen.honored.get("toolsListChanged")
        ]

    def capabilities_of(self, request_id: bytes) -> dict[str, Any]:
        """What the client declared on a request still in progress ({} if none)."""
        envelope = self.envelopes.get(request_id)
        return envelope.capabilities if envelope is not None else {}


def task_outcome(session: Session, call: Call, answer: ToolAnswer) -> bytes:
    """The CallToolResult a task's call answered, as the task keeps it (stamped)."""
    return b"".join(session.call_result(call, answer))
