"""The host's client sessions: each one a Session and its Router, wired to the calls layer; the
modern era's principals and their tool-list state; the wire taps that observe them. Kept apart
from app.Host (the façade the transports see) so that the session wiring reads in one place."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from protomcp_host.calls.execution import Dispatcher
from protomcp_host.calls.forwarding import Forwarding
from protomcp_host.calls.held import Rounds
from protomcp_host.calls.rounds import InputRounds
from protomcp_host.calls.router import Router, Writer
from protomcp_host.calls.tasks import TaskRunner
from protomcp_host.protocol.catalog import Catalog
from protomcp_host.protocol.features import FeatureCatalog
from protomcp_host.protocol.modern import ModernShared
from protomcp_host.protocol.session import Session
from protomcp_host.protocol.tasks import TaskMethods, TaskStore
from protomcp_host.protocol.visibility import ToolVisibility
from protomcp_host.telemetry import metrics
from protomcp_sdk.wire.toollist import ToolListChange

if TYPE_CHECKING:
    from protomcp_host.protocol.discovery import Discovery
    from protomcp_host.shared.tool_lists import SharedToolLists
    from protomcp_host.transports.ports import Connection

MAX_PRINCIPALS = 10_000  # modern era: principals whose tool-list state is kept (the idle ones go first)
NO_CHANGE = ToolListChange()
LOCAL_PRINCIPAL = "local"  # the one principal of a stdio client

WireTap = Callable[[int, str, bytes, bytes | None], None]
"""Shown every MCP message of the observed sessions: (session number, "in" | "out", message,
related request id)."""
SessionTap = Callable[[str, bytes, bytes | None], None]


class ConnectingHost(Protocol):
    """What a new session is made of (app.Host)."""

    @property
    def catalog(self) -> Catalog: ...
    @property
    def server_info(self) -> dict[str, Any]: ...
    @property
    def instructions(self) -> str | None: ...
    @property
    def features(self) -> FeatureCatalog: ...
    @property
    def max_in_flight(self) -> int: ...
    @property
    def serve_modern(self) -> bool: ...
    @property
    def task_store(self) -> TaskStore: ...
    @property
    def task_runner(self) -> TaskRunner: ...
    @property
    def discovery(self) -> Discovery | None: ...
    @property
    def dispatcher(self) -> Dispatcher: ...
    @property
    def forwarding(self) -> Forwarding: ...
    @property
    def rounds(self) -> Rounds: ...
    @property
    def shared_tools(self) -> SharedToolLists | None: ...


class Connections:
    """Every client session's router (in order; removed at once), and what they share."""

    def __init__(self, host: ConnectingHost) -> None:
        self.host = host
        self._routers: dict[Router, None] = {}
        self._sessions = itertools.count(1)
        self.wire_tap: WireTap | None = None
        self._tapped = 0  # sessions the wire tap has seen (numbers them)
        self.principals: dict[str, ToolVisibility] = {}  # modern era: tool-list state per principal
        self._modern: ModernShared | None = None  # what the modern era's connections share

    def routers(self) -> list[Router]:
        """Every client session's router now (a copy: sessions may come and go meanwhile)."""
        return list(self._routers)

    def connect(self, write: Writer, *, observed: bool = True) -> Router:
        """A new client session whose messages go to `write` (`observed`: shown to the
        wire tap, if any; the playground's own session records itself)."""
        host = self.host
        tap = self._session_tap(self.wire_tap) if observed and self.wire_tap is not None else None
        if tap is not None:
            write = _tapped_write(write, tap)
        session = Session(
            host.catalog,
            host.server_info,
            host.instructions,
            host.features,
            max_in_flight=host.max_in_flight,
            tasks=TaskMethods(host.task_store, f"session:{next(self._sessions)}"),
        )
        if host.discovery is not None:
            host.discovery.attach(session)
        router = Router(host.dispatcher, host.forwarding, session, write)
        if tap is not None:
            _tap_feed(router, tap)
        self._routers[router] = None
        if metrics.ON:
            metrics.session_opened()
        return router

    def connect_modern(
        self, write: Writer, principal: str = LOCAL_PRINCIPAL, *, measured: bool = False
    ) -> Router:
        """A connection serving modern-era (2026-07-28) requests for `principal`, whose
        tool-list control state it shares with the principal's other connections. `measured`:
        its transport measures its one request (the HTTP endpoint), so its router does not."""
        host = self.host
        visibility = self.principal_state(principal)
        session = self._modern_shared().session(visibility=visibility, owner=f"principal:{principal}")
        if host.discovery is not None:
            host.discovery.attach(session)
        tap = self._session_tap(self.wire_tap) if self.wire_tap is not None else None
        if tap is not None:
            write = _tapped_write(write, tap)
        # (a stdio client is no one else's: other hosts need not hear of its tool list)
        shared = host.shared_tools if principal != LOCAL_PRINCIPAL else None
        asking = InputRounds(host.rounds, self.routers, shared.changed if shared is not None else None)
        router = Router(
            host.dispatcher,
            host.forwarding,
            session,
            write,
            asking,
            principal=principal,
            tasks=host.task_runner,
            measured=measured,
        )
        if tap is not None:
            _tap_feed(router, tap)
        self._routers[router] = None
        return router

    def _modern_shared(self) -> ModernShared:
        """What every modern-era connection shares (made with the first)."""
        if self._modern is None:
            host = self.host
            self._modern = ModernShared(
                host.catalog,
                host.server_info,
                host.instructions,
                host.features,
                serve_modern=host.serve_modern,
                max_in_flight=host.max_in_flight,
                task_store=host.task_store,
            )
        return self._modern

    def principal_state(self, principal: str) -> ToolVisibility:
        """The principal's tool-list state (made when it is new)."""
        visibility = self.principals.get(principal)
        if visibility is None:
            if len(self.principals) >= MAX_PRINCIPALS:
                self._forget_idle_principals()
            visibility = self.principals[principal] = ToolVisibility()
        return visibility

    def replace_tool_state(self, principal: str, apply: Callable[[], None]) -> None:
        """Another host changed the principal's tool list: `apply` its state here; the principal's
        listen streams here hear of it as of a change made here (one list_changed, if it changed)."""
        listening = [
            router
            for router in self.routers()
            if router.principal == principal and router.session.era.listens
        ]
        for router in listening:  # (an empty change: the list as it is now is what the flush compares to)
            router.list_changes.apply(router, NO_CHANGE)
        apply()

    def add_wire_tap(self, tap: WireTap) -> None:
        """Show `tap` every message of the sessions connected from now on, beside any tap set."""
        previous = self.wire_tap
        self.wire_tap = tap if previous is None else _both_taps(previous, tap)

    def _session_tap(self, tap: WireTap) -> SessionTap:
        """The wire tap for one new session: its messages carry the session's number."""
        self._tapped += 1
        return partial(tap, self._tapped)

    def _forget_idle_principals(self) -> None:
        """Keep the principals map bounded: drop those with no connection now (oldest first)."""
        connected = {r.principal for r in self.routers() if r.principal is not None}
        shared_tools = self.host.shared_tools
        for name in list(self.principals):
            if name not in connected:
                del self.principals[name]
                if shared_tools is not None:
                    shared_tools.stamps.pop(name, None)
                if len(self.principals) < MAX_PRINCIPALS // 2:
                    return

    def disconnect(self, connection: Connection) -> None:
        known = connection in self._routers
        self._routers.pop(connection, None)  # type: ignore[call-overload]
        if known and metrics.ON and getattr(connection, "principal", None) is None:
            metrics.session_closed()  # (a stateful session: a modern connection is one request's)
        connection.session.tasks.forget_all()  # a stateful session's tasks end with it (a principal's stay)


def _both_taps(first: WireTap, second: WireTap) -> WireTap:
    def both(session: int, direction: str, data: bytes, related: bytes | None) -> None:
        first(session, direction, data, related)
        second(session, direction, data, related)

    return both


def _tapped_write(write: Writer, tap: SessionTap) -> Writer:
    def tapped(data: bytes, related: bytes | None) -> None:
        tap("out", data, related)
        write(data, related)

    return tapped


def _tap_feed(router: Router, tap: SessionTap) -> None:
    """Show the tap each message the client sends to `router` (only when a tap is set: the
    hot path of an unobserved session is the plain method)."""
    feed = router.feed

    def tapped(line: bytes) -> None:
        tap("in", line, None)
        feed(line)

    def tapped_loaded(line: bytes, _: Any) -> None:
        tapped(line)

    router.feed = tapped  # type: ignore[method-assign]
    router.feed_loaded = tapped_loaded  # type: ignore[method-assign,assignment]
