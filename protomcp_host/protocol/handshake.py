"""The handshake era of MCP (2024-11-05 to 2025-11-25), sans-IO: what a ``Session`` given a
``StatefulEra`` does that the 2026-07-28 era does not. ``initialize`` fixes the revision and
the client's capabilities for the whole session, ``logging/setLevel`` its log level,
``notifications/initialized`` opens it for notifications, and its tasks (2025-11-25) are its
own. Everything both eras do is the session's (session.py); this is only what differs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol

import orjson

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.events import Batch, Send
from protomcp_host.protocol.features import FeatureCatalog, FeatureEra, FeatureMethods
from protomcp_host.protocol.methods import STATEFUL
from protomcp_host.protocol.records import Call, Event, ToolAnswer
from protomcp_host.protocol.tasks import Effects, TaskMethods

SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = SUPPORTED_VERSIONS[-1]
TASK_VERSIONS = frozenset({"2025-11-25"})
TASKS_CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class EraSession(Protocol):
    """What an era reads and sets of its session (session.Session)."""

    version: str | None
    client_info: dict[str, Any]
    client_capabilities: dict[str, Any]
    capabilities_json: str
    initialized: bool
    log_level: str | None
    server_info: dict[str, Any]
    instructions: str | None
    tasks: TaskMethods

    @property
    def features(self) -> FeatureMethods: ...

    def refuse_early(self, message: rpc.Request) -> Send | None: ...
    def answer(self, message: rpc.Request, batch: Batch | None) -> Event | list[Event] | None: ...
    def notified(self, message: rpc.Notification) -> Event | None: ...
    def start_call(self, request: rpc.Request, batch: Batch | None) -> Event | list[Event]: ...
    def carry(self, effects: Effects) -> list[Event]: ...


class StatefulEra:
    """The session's handshake: one per session, as long as it lasts."""

    __slots__ = ()
    name = STATEFUL
    tool_list_scope = "in this session"  # whose tools a tool-list change changes
    listens: Mapping[bytes, Any] = MappingProxyType({})  # (2026-07-28 listen streams: none here)

    def begin(self, session: EraSession) -> None:
        """The session starts: it learns its revision from initialize."""

    def feature_era(self) -> FeatureEra | None:
        return None  # resources and prompts by the 2025-11-25 rules

    # -- requests ------------------------------------------------------------------------
    def request(
        self, session: EraSession, message: rpc.Request, batch: Batch | None
    ) -> Event | list[Event] | None:
        refused = session.refuse_early(message)
        if refused is not None:
            return refused
        if session.version is None and message.method not in ("initialize", "ping"):
            return Send(
                rpc.error(
                    message.id,
                    rpc.INVALID_REQUEST,
                    "Invalid Request: the session is not initialized; send initialize first",
                )
            )
        return session.answer(message, batch)

    def notification(self, session: EraSession, message: rpc.Notification) -> Event | None:
        return session.notified(message)

    def tools_call(
        self, session: EraSession, request: rpc.Request, batch: Batch | None
    ) -> Event | list[Event]:
        return session.start_call(request, batch)

    def _initialize(self, session: EraSession, request: rpc.Request, _: Batch | None) -> Event:
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
        if session.version is not None:
            return Send(
                rpc.error(
                    request.id, rpc.INVALID_REQUEST, "Invalid Request: the session is already initialized"
                )
            )
        session.version = requested if requested in SUPPORTED_VERSIONS else LATEST_VERSION
        session.client_info = params.get("clientInfo", {})
        session.client_capabilities = params.get("capabilities", {})
        session.capabilities_json = orjson.dumps(session.client_capabilities).decode()
        capabilities: dict[str, Any] = {"logging": {}, "tools": {"listChanged": True}}
        if session.version in TASK_VERSIONS:
            capabilities["tasks"] = TASKS_CAPABILITY
        capabilities.update(session.features.capabilities())
        result: dict[str, Any] = {
            "protocolVersion": session.version,
            "capabilities": capabilities,
            "serverInfo": session.server_info,
        }
        if session.instructions and session.version != "2024-11-05":  # instructions came in 2025-03-26
            result["instructions"] = session.instructions
        return Send(rpc.result(request.id, result))

    def _ping(self, session: EraSession, request: rpc.Request, _: Batch | None) -> Event:
        return Send(rpc.result(request.id, {}))

    def _set_level(self, session: EraSession, request: rpc.Request, _: Batch | None) -> Event:
        level = request.params.get("level")
        if level not in LOG_LEVELS:
            return Send(
                rpc.error(
                    request.id,
                    rpc.INVALID_PARAMS,
                    f"Invalid params: level must be one of {', '.join(LOG_LEVELS)}",
                )
            )
        session.log_level = level
        return Send(rpc.result(request.id, {}))

    def _task_request(
        self, session: EraSession, request: rpc.Request, _: Batch | None
    ) -> Event | list[Event]:
        """tasks/get, tasks/result, tasks/list, tasks/cancel of the session's own tasks (tasks.py)."""
        if session.version not in TASK_VERSIONS:
            return Send(
                rpc.error(
                    request.id,
                    rpc.METHOD_NOT_FOUND,
                    f"Method not found: {request.method} (tasks need protocol revision 2025-11-25)",
                )
            )
        return session.carry(session.tasks.handle(request))

    _task_get = _task_result = _task_list = _task_cancel = _task_request

    # -- answers -------------------------------------------------------------------------
    def ended(self, request_id: bytes) -> None:
        """A request is over (nothing is kept per request in this era)."""

    def refused(self, call: Call, answer: ToolAnswer) -> bytes | None:
        return None  # an isError result is the client's to read

    def stamp(self, result: Sequence[bytes]) -> list[bytes]:
        return list(result)  # results carry nothing more in this era

    def stamp_call(self, parts: list[bytes], answer: ToolAnswer) -> list[bytes]:
        return parts

    # -- what reaches the client besides answers -------------------------------------------
    def log_floor(self, session: EraSession, related: bytes | None) -> str | None:
        """The lowest level sent ("": every level), or None: no log messages now."""
        if session.version is None:
            return None
        return session.log_level or ""

    def hears_list_changes(self, session: EraSession) -> bool:
        return session.initialized

    def list_changed(self, session: EraSession) -> list[Event]:
        return [Send(rpc.notification("notifications/tools/list_changed"))]


def offered(features: FeatureCatalog | None) -> frozenset[str]:
    """What a stateful session serves besides tools (its own 2025-11-25 tasks always)."""
    if features is None:
        return frozenset({"tasks"})
    if features.skills is None:
        return frozenset({"tasks", "features"})
    return frozenset({"tasks", "features", "skills"})
