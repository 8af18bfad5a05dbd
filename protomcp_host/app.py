"""Wires a run together: one Supervisor per tool file, the merged catalog, the client
sessions, and the transport. Also the home of what the host prints on stderr."""

from __future__ import annotations

import contextlib
import gc
import itertools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.abc
import orjson

from protomcp_host import __version__
from protomcp_host.calls.advice import no_description, undescribed
from protomcp_host.calls.envelope import file_features, tool_from_definition
from protomcp_host.calls.execution import Dispatcher
from protomcp_host.calls.forwarding import Forwarding, declares_completions
from protomcp_host.calls.held import MAX_SUSPENDED_EACH, Rounds
from protomcp_host.calls.middleware import Middleware
from protomcp_host.calls.rounds import InputRounds
from protomcp_host.calls.router import Router, Writer
from protomcp_host.calls.staleness import placeholder_tool, stale_note
from protomcp_host.calls.tasks import TaskRunner
from protomcp_host.errout import ErrOut
from protomcp_host.processes.events import Loaded
from protomcp_host.processes.launch import STATE_KEY_ENV, Launched, StartupError, label_of
from protomcp_host.processes.output import LEVELS
from protomcp_host.processes.pool import Pool
from protomcp_host.processes.supervisor import Supervisor
from protomcp_host.processes.tool_process import ToolProcessError
from protomcp_host.protocol.catalog import Catalog, NameClash, Tool
from protomcp_host.protocol.features import FeatureCatalog
from protomcp_host.protocol.modern import ModernShared
from protomcp_host.protocol.session import Session
from protomcp_host.protocol.skills import Skills
from protomcp_host.protocol.tasks import TaskMethods, TaskStore
from protomcp_host.protocol.visibility import ToolVisibility
from protomcp_host.settings import RunSettings
from protomcp_host.store.base import Store, StoreError
from protomcp_host.store.memory import MemoryStore
from protomcp_host.transports.waiting import cancel_when_set
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire.toollist import ToolListChange

if TYPE_CHECKING:
    from protomcp_host.proto_mcp.codec import Descriptors
    from protomcp_host.protocol.discovery import Discovery
    from protomcp_host.shared.tasks import SharedTasks
    from protomcp_host.shared.tool_lists import SharedToolLists
    from protomcp_host.shared.uses import SharedUses
    from protomcp_host.transports.http.server import HttpSettings
    from protomcp_host.transports.ports import Connection, StartStop

SERVER_INFO = {"name": "protomcp", "version": __version__}
RUN_DEFAULTS = RunSettings()  # a run with every setting at its default
MODERN_ENV = "PROTOMCP_MODERN"
MAX_PRINCIPALS = 10_000  # modern era: principals whose tool-list state is kept (the idle ones go first)
NO_CHANGE = ToolListChange()
LOCAL_PRINCIPAL = "local"  # the one principal of a stdio client
STOP_GRACE = 1.0  # seconds tool processes get to exit on their own once the host is done with them
HEALTH_TIMEOUT = 2.0  # seconds /healthz waits for the store to answer a ping
KEY_CHECK = 1.0  # seconds between reads of the store's requestState key
STORE_START_TIMEOUT = 10.0  # seconds a starting host waits for a store that restarts under it
STORE_RETRY = 0.5  # seconds between its attempts meanwhile
RESOURCE_UPDATED = "resource_updated"  # bus topic: a resource changed (payload: its URI)
T = TypeVar("T")


def _discovery(mode: str, catalog: Catalog) -> Discovery | None:
    """--discovery search: sessions list meta-tools and find the rest on demand
    (protocol/discovery.py, imported only then: the ranking index is not small)."""
    if mode not in ("full", "search"):
        raise ValueError(f"discovery must be 'full' or 'search', not {mode!r}")
    if mode == "full":
        return None
    from protomcp_host.protocol.discovery import Discovery

    return Discovery(catalog)


class Host:
    """The long-lived part of a run: supervisors, catalog and sessions. It is the
    ProcessEvents of every tool process (loads, output outside calls, problems, notices)."""

    def __init__(
        self,
        files: list[Path],
        settings: RunSettings = RUN_DEFAULTS,
        *,
        launched: dict[Path, Launched] | None = None,
        stderr: Callable[[str], None] | None = None,
        store: Store | None = None,
        skills: Skills | None = None,
    ) -> None:
        """`files`: the tool files (their processes: `launched` where the CLI started them
        early); `store`: the one `settings.store` names (None: this host's memory); `skills`:
        those of the `settings.skills` folders."""
        self.files = files
        self.settings = settings
        self.stderr = stderr or _print_stderr
        self.server_info = {**SERVER_INFO, "name": settings.server_name or SERVER_INFO["name"]}
        self.instructions = settings.instructions
        self.call_timeout = settings.call_timeout or None  # (0: no limit)
        self.max_in_flight = settings.max_in_flight
        self.include_tags = set(settings.include_tags)
        self.exclude_tags = set(settings.exclude_tags)
        # Output and log messages outside any call reach clients only where there is exactly
        # one (stdio); over HTTP they go to the host's stderr alone.
        self.share_output = settings.http is None
        self.echo_requests = settings.echo_requests  # what a call prints also goes to stderr
        # The 2026-07-28 era is served beside the stateful one. PROTOMCP_MODERN=0 turns it off:
        # modern requests then get -32022 naming only the handshake revisions, so clients fall
        # back to initialize.
        self.serve_modern = os.environ.get(MODERN_ENV) != "0"
        self.catalog = Catalog(settings.page_size)
        self.discovery = _discovery(settings.discovery, self.catalog)
        self._descriptors: Descriptors | None = None
        self.draining = False  # shutdown began: /healthz says so, balancers send nothing new
        self._routers: dict[Router, None] = {}  # one per client session (in order; removed at once)
        self._middleware_of: dict[str, list[Middleware]] = {}
        self._placeholders: set[str] = set()  # dev: files served by a placeholder tool (they did not load)
        self.ready = anyio.Event()  # set once every file has loaded (or, in dev, failed to)
        self._tg: anyio.abc.TaskGroup | None = None
        self._sessions = itertools.count(1)
        self.started = False
        self.startup_error: str | None = None  # why the tool files did not load (start raised)
        # Observers (the dev playground): host events as (kind, data), and every MCP message of
        # the client sessions as (direction "in"/"out", message, related request id).
        self.watchers: list[Watcher] = []
        self.wire_tap: WireTap | None = None
        self._tapped = 0  # sessions the wire tap has seen (numbers them)
        self._wire_calls(files, skills)
        self._wire_store(store or MemoryStore())
        self._wire_sources(files, launched or {})

    def _wire_calls(self, files: list[Path], skills: Skills | None) -> None:
        """What carries calls and requests to the sources of tools, and the tasks they run as."""
        self.principals: dict[str, ToolVisibility] = {}  # modern era: tool-list state per principal
        # modern era: calls waiting for their client's input (calls/rounds.py)
        self.rounds = Rounds(per_principal=min(MAX_SUSPENDED_EACH, self.max_in_flight))
        self.supervisors: dict[str, Supervisor | Pool] = {}  # a Pool: --processes N > 1
        self.upstreams: dict[str, Any] = {}  # label -> upstream.source.Upstream (--upstream)
        # every source of tools the calls layer calls: supervisors, upstreams
        self.sources: dict[str, Any] = {}
        self.dispatcher = Dispatcher(self.sources, self.call_timeout)
        self.features = FeatureCatalog(self.settings.page_size)  # resources, templates, prompts of every file
        self.forwarding = Forwarding(self.features, self.sources, self.routers_now, self.call_timeout)
        self.features.completions_expected = any(declares_completions(file) for file in files)
        if skills is not None:  # --skills: served by the host itself, no tool process
            self.features.serve_skills(skills)
        # One task store for both eras: a stateful session's tasks are its own, a modern-era
        # principal's are the principal's (protocol/tasks.py); modern task calls run in TaskRunner.
        self.task_store = TaskStore()
        self.task_runner = TaskRunner(self.task_store, self.dispatcher, self.routers_now)
        self._modern: ModernShared | None = None  # what the modern era's connections share

    def _wire_store(self, store: Store) -> None:
        """The state shared with other hosts (--store): requestState uses, modern-era tasks and
        each principal's tool-list state (imported only with a shared store)."""
        self.store = store
        self._key_missed: anyio.Event | None = None  # set: a requestState did not open (--store)
        self.sharing: SharedTasks | None = None
        self.shared_tools: SharedToolLists | None = None
        self.shared_uses: SharedUses | None = None
        if isinstance(store, MemoryStore):
            return
        from protomcp_host.shared.tasks import SharedTasks
        from protomcp_host.shared.tool_lists import SharedToolLists
        from protomcp_host.shared.uses import SharedUses

        self.rounds.uses.publish = store.publish  # each use of a requestState, told to the others
        self.shared_uses = SharedUses(store, self.rounds.uses)  # claimed in the store: the first runs
        self.sharing = SharedTasks(store, self.task_store, self.task_runner, self.stderr)
        self.shared_tools = SharedToolLists(
            store, self._principal_state, self._replace_tool_state, self.stderr
        )

    def _wire_sources(self, files: list[Path], launched: dict[Path, Launched]) -> None:
        """A Supervisor (or a Pool of them) per tool file, an Upstream per --upstream, and the
        peer hosts (--agent-id)."""
        settings = self.settings
        supervision = settings.process_settings()
        for file in files:
            self.supervisors[label_of(file)] = (
                Pool(file, self, settings.processes, supervision, launched=launched.get(file))
                if settings.processes > 1
                else Supervisor(file, self, supervision, launched=launched.get(file))
            )
        if settings.upstreams:
            from protomcp_host.upstream.settings import UpstreamSettings
            from protomcp_host.upstream.source import Upstream  # imports mcp only when it runs

            bounds = UpstreamSettings(
                startup_timeout=settings.startup_timeout, version=__version__, hidden_env=settings.hidden_env
            )
            for spec in settings.upstreams:
                self.upstreams[spec.label] = Upstream(spec, self, bounds)
        self.sources.update(self.supervisors)
        self.sources.update(self.upstreams)
        self.peers: Any = None  # peers.hub.PeerHub when this host has peers (--agent-id)
        if settings.bridge is not None:
            from protomcp_host.peers.hub import PeerHub

            self.peers = PeerHub(
                settings.bridge,
                self,
                self,
                self.sources,
                call_timeout=self.call_timeout,
                on_event=self._peer_event,
                stderr=self.stderr,
            )

    # -- lifecycle -----------------------------------------------------------------
    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Start every tool process, concurrently. Raises StartupError on any failure."""
        self._tg = tg
        self.dispatcher.spawn = tg.start_soon
        errors: list[str] = []
        await self._open_store(tg)

        async def start_one(supervisor: Supervisor | Pool) -> None:
            try:
                await tg.start(supervisor.run)
            except (ToolProcessError, ValueError) as exc:
                errors.append(str(exc))

        async with anyio.create_task_group() as starting:
            for supervisor in self.supervisors.values():
                starting.start_soon(start_one, supervisor)
            for upstream in self.upstreams.values():
                starting.start_soon(start_one, upstream)
        if errors:
            self.startup_error = "\n".join(errors)
            raise StartupError(self.startup_error)
        if self.peers is not None:
            await tg.start(self.peers.run)
        self.started = True
        # What exists now (modules, classes, the catalog) lives as long as the host: keep it out
        # of the cyclic GC's full collections, which otherwise walk it all every few seconds
        # under load (~40 ms each in the HTTP benchmark).
        gc.freeze()
        self.ready.set()

    async def _open_store(self, tg: anyio.abc.TaskGroup) -> None:
        """Connect the shared store: its bus carries resource updates between hosts, and its
        key seals requestState (PROTOMCP_STATE_KEY, when set, is used instead)."""
        try:
            await tg.start(self.store.run)
            patient_until = time.monotonic() + STORE_START_TIMEOUT
            if not isinstance(self.store, MemoryStore) and not os.environ.get(STATE_KEY_ENV):
                self.rounds.key = await _patiently(self.store.state_key, patient_until)
                tg.start_soon(self._keep_state_key)
            self.store.subscribe(self._on_bus)
            self.store.subscribe(self.rounds.on_bus)
            if self.shared_uses is not None:
                self.store.subscribe(self.shared_uses.on_bus)
                await tg.start(self.shared_uses.run)
            if self.sharing is not None:
                self.store.subscribe(self.sharing.on_bus)
                await _patiently(partial(tg.start, self.sharing.run), patient_until)
            if self.shared_tools is not None:
                self.store.subscribe(self.shared_tools.on_bus)
                await _patiently(partial(tg.start, self.shared_tools.run), patient_until)
        except StoreError as exc:
            self.startup_error = str(exc)
            raise StartupError(str(exc)) from None

    async def _keep_state_key(self) -> None:
        """One requestState key for every host of the store, always: read again (and put back
        if it vanished) every KEY_CHECK seconds, and at once when a requestState did not open."""
        self.rounds.on_miss = self._state_key_missed
        while True:
            self._key_missed = anyio.Event()
            with anyio.move_on_after(KEY_CHECK):
                await self._key_missed.wait()
            with contextlib.suppress(StoreError):  # (the store reports its outage; the key stays)
                self.rounds.use_key(await self.store.state_key())

    def _state_key_missed(self) -> None:
        if self._key_missed is not None:
            self._key_missed.set()

    def _on_bus(self, topic: str, payload: bytes) -> None:
        """A message from the store's bus (published here or by another host)."""
        if topic == RESOURCE_UPDATED:
            self.forwarding.resource_updated(payload.decode(errors="replace"))

    async def health(self) -> tuple[bool, dict[str, Any]]:
        """Readiness: loaded, every file has a process serving, the store answers, not draining."""
        files = {label: supervisor.ready for label, supervisor in self.supervisors.items()}
        reachable = False
        with anyio.move_on_after(HEALTH_TIMEOUT):
            reachable = await self.store.ping()
        if self.draining:
            status = "draining"
        elif not self.started:
            status = "starting"
        else:
            status = "ok" if reachable and all(files.values()) else "unready"
        body = {
            "status": status,
            "pid": os.getpid(),
            "files": files,
            "store": {"url": self.store.url, "reachable": reachable},
        }
        return status == "ok", body

    async def stop(self, grace: float) -> None:
        if self.peers is not None:
            await self.peers.stop(grace)
        async with anyio.create_task_group() as tg:
            for source in self.sources.values():
                tg.start_soon(source.stop, grace)

    @property
    def middleware(self) -> list[Middleware]:
        return self.dispatcher.middleware

    @property
    def descriptors(self) -> Descriptors:
        """proto-mcp: each tool's protobuf messages (by reference with --schema-registry), made
        when the first proto-mcp client comes (JSON-RPC-only hosts never import protobuf's
        descriptor machinery for it)."""
        if self._descriptors is None:
            from protomcp_host.proto_mcp.codec import Descriptors, SchemaRegistry

            folder = self.settings.schema_registry
            registry = SchemaRegistry(folder) if folder is not None else None
            self._descriptors = Descriptors(
                self.catalog, registry, direct=lambda: not self.dispatcher.middleware
            )
        return self._descriptors

    # -- sessions ------------------------------------------------------------------
    @property
    def routers(self) -> list[Router]:
        return self.routers_now()

    def routers_now(self) -> list[Router]:
        """Every client session's router now (a copy: sessions may come and go meanwhile)."""
        return list(self._routers)

    def connect(self, write: Writer, *, observed: bool = True) -> Router:
        """A new client session whose messages go to `write` (`observed`: shown to the
        wire tap, if any; the playground's own session records itself)."""
        tap = self._session_tap(self.wire_tap) if observed and self.wire_tap is not None else None
        if tap is not None:
            write = _tapped_write(write, tap)
        session = Session(
            self.catalog,
            self.server_info,
            self.instructions,
            self.features,
            max_in_flight=self.max_in_flight,
            tasks=TaskMethods(self.task_store, f"session:{next(self._sessions)}"),
        )
        if self.discovery is not None:
            self.discovery.attach(session)
        router = Router(self.dispatcher, self.forwarding, session, write)
        if tap is not None:
            _tap_feed(router, tap)
        self._routers[router] = None
        return router

    def connect_modern(self, write: Writer, principal: str = LOCAL_PRINCIPAL) -> Router:
        """A connection serving modern-era (2026-07-28) requests for `principal`, whose
        tool-list control state it shares with the principal's other connections."""
        visibility = self._principal_state(principal)
        session = self._modern_shared().session(visibility=visibility, owner=f"principal:{principal}")
        if self.discovery is not None:
            self.discovery.attach(session)
        tap = self._session_tap(self.wire_tap) if self.wire_tap is not None else None
        if tap is not None:
            write = _tapped_write(write, tap)
        # (a stdio client is no one else's: other hosts need not hear of its tool list)
        shared = self.shared_tools if principal != LOCAL_PRINCIPAL else None
        asking = InputRounds(self.rounds, self.routers_now, shared.changed if shared is not None else None)
        router = Router(
            self.dispatcher,
            self.forwarding,
            session,
            write,
            asking,
            principal=principal,
            tasks=self.task_runner,
        )
        if tap is not None:
            _tap_feed(router, tap)
        self._routers[router] = None
        return router

    def _modern_shared(self) -> ModernShared:
        """What every modern-era connection shares (made with the first)."""
        if self._modern is None:
            self._modern = ModernShared(
                self.catalog,
                self.server_info,
                self.instructions,
                self.features,
                serve_modern=self.serve_modern,
                max_in_flight=self.max_in_flight,
                task_store=self.task_store,
            )
        return self._modern

    def _principal_state(self, principal: str) -> ToolVisibility:
        """The principal's tool-list state (made when it is new)."""
        visibility = self.principals.get(principal)
        if visibility is None:
            if len(self.principals) >= MAX_PRINCIPALS:
                self._forget_idle_principals()
            visibility = self.principals[principal] = ToolVisibility()
        return visibility

    def _replace_tool_state(self, principal: str, apply: Callable[[], None]) -> None:
        """Another host changed the principal's tool list: `apply` its state here; the principal's
        listen streams here hear of it as of a change made here (one list_changed, if it changed)."""
        listening = [
            router for router in self.routers if router.principal == principal and router.session.era.listens
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
        connected = {r.principal for r in self.routers if r.principal is not None}
        for name in list(self.principals):
            if name not in connected:
                del self.principals[name]
                if self.shared_tools is not None:
                    self.shared_tools.stamps.pop(name, None)
                if len(self.principals) < MAX_PRINCIPALS // 2:
                    return

    def disconnect(self, connection: Connection) -> None:
        self._routers.pop(connection, None)  # type: ignore[call-overload]
        connection.session.tasks.forget_all()  # a stateful session's tasks end with it (a principal's stay)

    async def wait_tasks(self) -> None:
        """Until no modern-era task's call runs on this host (a drain finishes them)."""
        await self.task_runner.wait_idle()

    def tasks_running(self) -> int:
        return len(self.task_runner.sinks)

    async def expire_tasks(self, period: float = 1.0) -> None:
        """Task ttl expiry in idle sessions (a session also expires its tasks on each message)."""
        while True:
            await anyio.sleep(period)
            for router in self.routers:
                router.tick()
            self.task_runner.tick(time.time())

    # -- ProcessEvents: what tool processes tell the host --------------------------------
    def loaded(self, label: str, offer: Loaded) -> None:
        """A new process goes live with what it offers; raises (a name clash) to reject it."""
        if offer.resources is not None:  # our SDK: resources, templates, prompts too
            assert offer.templates is not None and offer.prompts is not None
            features = file_features(
                label, offer.resources, offer.templates, offer.prompts, offer.completions
            )
            self.forwarding.stage(label, features)  # checked first; applied with the tools
        self._on_tools(label, offer.tools, offer.middleware)
        self.dispatcher.stale.pop(label, None)  # it serves the file as it is now

    def stale(self, label: str, error: str) -> None:
        """dev: a save failed to load; the answers of the file's tools say so until a good one."""
        self.dispatcher.stale[label] = stale_note(label, error)

    def unloaded(self, label: str, error: str) -> None:
        """dev: the file has not loaded, so it has no tools: a placeholder tool says why, where
        the model looks (its tools), until the file loads and its own tools replace it."""
        with contextlib.suppress(NameClash):  # another file has a tool of that name: stderr says it
            self._serve_tools(label, [placeholder_tool(label, error)], [], placeholder=True)

    def output(self, label: str, stream: str, line: str) -> None:
        """A line a tool process printed outside the frames (no call known)."""
        self.stderr(f"[{label}] {line}")
        self.tell("output", {"label": label, "stream": stream, "line": line})
        if self.share_output:
            for router in self.routers:
                router.log(LEVELS.get(stream, "info"), label, line)

    def echo(self, label: str, line: str) -> None:
        if self.echo_requests:
            self.stderr("\n".join(f"[{label}] {part}" for part in line.split("\n")))
        if self.watchers:
            self.tell("printed", {"label": label, "line": line})

    def log(self, label: str, level: str, logger: str, data: Any) -> None:
        """A log message a tool process sent outside any call."""
        self.stderr(f"[{label}] {level}: {data if isinstance(data, str) else orjson.dumps(data).decode()}")
        if self.watchers:
            self.tell("log", {"label": label, "level": level, "logger": logger, "data": data})
        if self.share_output:
            for router in self.routers:
                router.log(level, logger, data)

    def logged(self, label: str, level: str, logger: str, data: Any) -> None:
        if self.watchers:
            self.tell("log", {"label": label, "level": level, "logger": logger, "data": data, "call": True})

    def problem(self, message: str) -> None:
        self.report_problem(message)

    def notice(self, label: str, envelope: pb.Envelope) -> None:
        """A tool process's notification outside any call: a resource update goes out on the
        store's bus, so listeners on every host sharing the store hear of it (this one too)."""
        if envelope.WhichOneof("msg") == "resource_changed" and envelope.resource_changed.uri:
            self.store.publish(RESOURCE_UPDATED, envelope.resource_changed.uri.encode())

    def _on_tools(
        self,
        label: str,
        definitions: list[pb.ToolDefinition],
        middleware: list[pb.RegisterMiddlewareRequest],
    ) -> None:
        tools = [tool_from_definition(d, label) for d in definitions if self._exposed(d)]
        self._serve_tools(label, tools, middleware)

    def _serve_tools(
        self,
        label: str,
        tools: list[Tool],
        middleware: list[pb.RegisterMiddlewareRequest],
        placeholder: bool = False,
    ) -> None:
        """`label`'s tools are now `tools`: sessions that see a change hear of it. A
        `placeholder` (dev: the file did not load) is no load to report, nor what was before."""
        before = {t.name: (t.mcp, t.hidden, t.pinned) for t in self.catalog.tools_of(label)}
        loaded_before = {} if label in self._placeholders else before
        if placeholder:
            self._placeholders.add(label)
        else:
            self._placeholders.discard(label)
        seen = [(router, router.session.tool_list.visible()) for router in self.routers]
        changed = self.catalog.replace(label, tools)
        self.forwarding.apply(label, notify=self.started)
        self._middleware_of[label] = [
            Middleware(m.name, m.priority, label, m.before_only, m.composes) for m in middleware
        ]
        self.dispatcher.set_middleware(
            sorted((m for chain in self._middleware_of.values() for m in chain), key=lambda m: m.order)
        )
        large = [tool for tool in tools if tool.large]
        if large and self._tg is not None:  # their validators take seconds to build: not on the loop,
            # and not in a thread the host's exit would wait for (a daemon: dropped at exit)
            threading.Thread(target=_prepare, args=(large,), name="protomcp-prepare", daemon=True).start()
        after = {t.name: (t.mcp, t.hidden, t.pinned) for t in tools}
        if not placeholder and label in self.supervisors:
            self._advise(label, before, tools)
        if self.watchers and not placeholder:
            diff = tool_diff(loaded_before, after)
            self.tell("loaded", {"label": label, "initial": not self.started, **diff})
        if not self.started:
            return
        if not placeholder:
            self.stderr(f"protomcp: loaded {label}: {describe_change(loaded_before, after)}")
            if loaded_before.keys() != after.keys():
                self.stderr(RESTART_HINT)
        if changed or before != after:
            for router, visible in seen:
                router.carry_out(router.session.tool_list.catalog_changed(visible))
            if self.peers is not None and (label in self.supervisors or label in self.upstreams):
                self.peers.tools_changed()  # peers see this host's own tools

    def _advise(self, label: str, before: dict[str, Any], tools: list[Tool]) -> None:
        """A tool file's tools that have no description (since this load): stderr and the dev
        diagnostics say so (not the client: it is the author's to fix)."""
        described_before = {name for name, (mcp, _, _) in before.items() if not undescribed([mcp])}
        for name in undescribed(tool.mcp for tool in tools):
            if name in before and name not in described_before:
                continue  # said when it loaded so
            message = f"warning: {label}: {no_description(name)}"
            self.stderr(f"protomcp: {message}")
            self.tell("problem", {"message": message})

    def reload_skills(self) -> None:
        """dev: a --skills folder changed. Serve it as it is now; if it is not fit to serve, say
        why and keep serving the skills as they were."""
        from protomcp_host.protocol.listing import NameClash
        from protomcp_host.skillfolder import SkillError, load_skills

        before = self.features.skills
        try:
            notes = self.features.serve_skills(load_skills(self.settings.skills, self.catalog.page_size))
        except (SkillError, NameClash, OSError) as exc:
            self.report_problem(f"skills not reloaded (the previous ones are served): {exc}")
            return
        after = self.features.skills
        if before is not None and after is not None:  # subscribers hear of each file changed or gone
            for uri, file in before.files.items():
                now = after.files.get(uri)
                if now is None or now.digest != file.digest:
                    self.forwarding.resource_updated(uri)
        count = len(self.features.skills or ())
        self.stderr(f"protomcp: reloaded skills: {count} skill{'s' * (count != 1)}")
        self.tell("skills", {"count": count})
        for router in self.routers:
            for message in router.session.features.list_changed(notes):
                router.write(message, None)

    def tell(self, kind: str, data: dict[str, Any]) -> None:
        """A host event for the watchers (reloads, problems, output outside calls)."""
        for watcher in self.watchers:
            watcher(kind, data)

    def _exposed(self, definition: pb.ToolDefinition) -> bool:
        """--include-tag / --exclude-tag: which tools this host exposes at all."""
        tags = set(definition.tags)
        if self.include_tags and not tags & self.include_tags:
            return False
        return not tags & self.exclude_tags

    def _peer_event(self, message: Any) -> None:
        """A notification from a peer host (bridge): stderr, and the client as a log message where
        there is only one (stdio). Over HTTP it is addressed to this host, not to any one user, so
        it never goes to every session."""
        event = {
            "sender_id": message.sender_id,
            "event_type": message.payload.event_type,
            "data": message.payload.data,
            "priority": message.priority.value,
        }
        if message.receiver_id is not None:
            event["receiver_id"] = message.receiver_id
        self.stderr(f"protomcp: bridge: event {orjson.dumps(event).decode()}")
        if self.share_output:
            for router in self.routers:
                router.log("info", "bridge", event)

    def report_problem(self, message: str) -> None:
        """Crashes, restarts, failed reloads: the host's stderr, and the client where there is
        only one (they may quote a tool's output; over HTTP a failed call says why itself)."""
        self.stderr(f"protomcp: {message}")
        self.tell("problem", {"message": message})
        if self.share_output:
            for router in self.routers:
                router.log("error", "protomcp", message)


if TYPE_CHECKING:

    def _ports(host: Host, router: Router) -> tuple[StartStop, Connection]:
        """Host and Router are what transports/ports.py says they are: mypy checks it here."""
        return host, router


RESTART_HINT = (
    "protomcp: the tool names changed: Claude Desktop and Cursor do not follow tools/list_changed, "
    "restart them (Cursor: refresh the server) to see added or removed tools"
)


def _prepare(tools: list[Tool]) -> None:
    for tool in tools:
        tool.prepare()


Watcher = Callable[[str, dict[str, Any]], None]
"""Told of host events: ("loaded", diff), ("problem", message), ("output", line), ("printed",
a line a call printed), ("log", a log message; "call": true when a call sent it), ("playground",
its url)."""
WireTap = Callable[[int, str, bytes, bytes | None], None]
"""Shown every MCP message of the observed sessions: (session number, "in" | "out", message,
related request id)."""
SessionTap = Callable[[str, bytes, bytes | None], None]


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


def tool_diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Added, changed and removed tool names, and each changed tool's MCP shape before and after."""
    changed = sorted(name for name in after.keys() & before.keys() if after[name] != before[name])
    return {
        "added": sorted(after.keys() - before.keys()),
        "removed": sorted(before.keys() - after.keys()),
        "changed": changed,
        "before": {name: before[name][0] for name in changed},
        "tools": {name: value[0] for name, value in after.items()},
    }


def describe_change(before: dict[str, Any], after: dict[str, Any]) -> str:
    added = sorted(after.keys() - before.keys())
    removed = sorted(before.keys() - after.keys())
    changed = sorted(name for name in after.keys() & before.keys() if after[name] != before[name])
    parts = [
        f"{label} {', '.join(names)}"
        for label, names in (("added", added), ("changed", changed), ("removed", removed))
        if names
    ]
    return plural(len(after), "tool") + (
        f" ({'; '.join(parts)})" if parts else ", no change to the tool list"
    )


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


Banner = Callable[["Host", str | None, bool], str]
"""What to print for a person at a terminal: (host, the HTTP URL or None for stdio, dev mode)."""


Companion = Callable[..., Coroutine[Any, Any, None]]
"""Runs beside the host: `companion(host, shutdown, task_status=...)`, started with
TaskGroup.start (it reports started once it serves) and cancelled when the host stops."""


def _print_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def serve(
    settings: RunSettings,
    launched: dict[Path, Launched],
    *,
    store: Store | None = None,
    skills: Skills | None = None,
    signalled: list[int] | None = None,
    banner: Banner | None = None,
    companions: tuple[Companion, ...] = (),
) -> int:
    """Serve the tool processes the CLI launched (one per tool file) over stdio until the
    client goes away or a signal arrives, or over HTTP (`settings.http`) until a signal arrives.
    Returns the exit code. `banner(host, url, reload)` says what a person at a terminal needs
    to know (url None: stdio). `companions` run beside the host until it stops (the dev
    playground); each is started before the tool files load, so it sees the first load.

    In dev (`settings.reload`), tool files are watched and reloaded (blue/green) when they change."""
    errout = ErrOut()  # stderr writes never block the loop, even when nobody reads them
    try:
        host = Host(list(launched), settings, launched=launched, stderr=errout, store=store, skills=skills)
        return await _Run(host, banner).serve(signalled or [], companions)
    finally:
        errout.close(timeout=1.0)


class _Run:
    """One serve(): the host, the event that stops it, and the exit code."""

    def __init__(self, host: Host, banner: Banner | None) -> None:
        self.host = host
        self.settings = host.settings
        self.banner = banner
        self.shutdown = anyio.Event()
        self.peers_drained = anyio.Event()  # (set at once without peers)
        self.code = 0

    async def serve(self, signalled: list[int], companions: tuple[Companion, ...]) -> int:
        """`signalled`: the signals that arrived before this loop's own handlers existed (see
        cli.serving.serve)."""
        host = self.host
        async with anyio.create_task_group() as tg:
            await tg.start(_on_signals, self.shutdown)  # first: a signal during start-up stops cleanly
            if signalled:  # (read once those handlers exist: no signal is missed in between)
                self.shutdown.set()
            for companion in companions:
                try:
                    await tg.start(companion, host, self.shutdown)
                except OSError as exc:  # e.g. its port is taken
                    self._cannot_start(f"protomcp: cannot start: {exc}")
            self._run_beside(tg)
            if self.settings.http is not None:
                await self._serve_http(tg, self.settings.http)
            else:
                tg.start_soon(self._start_and_greet, tg)
                from protomcp_host.transports.stdio import serve_stdio

                await serve_stdio(host, self.shutdown, self.settings.drain_timeout)
            self.shutdown.set()
            await self.peers_drained.wait()  # (bounded by the drain timeout)
            await host.stop(STOP_GRACE)  # every call is answered by now: the processes may go
            tg.cancel_scope.cancel()
        return self.code

    def _cannot_start(self, message: str) -> None:
        self.host.stderr(message)
        self.code = 1
        self.shutdown.set()

    def _run_beside(self, tg: anyio.abc.TaskGroup) -> None:
        """Task expiry, the draining flag, dev's watchers and the peers' drain."""
        host, dev = self.host, self.settings.dev
        tg.start_soon(host.expire_tasks)
        tg.start_soon(self._note_draining)
        if dev is not None and dev.reload:  # (watchfiles is imported by `protomcp dev` only)
            from protomcp_host.processes.reloader import watch_and_reload, watch_folders

            tg.start_soon(watch_and_reload, list(host.supervisors.values()), list(dev.watch), self.shutdown)
            if self.settings.skills:
                tg.start_soon(watch_folders, list(self.settings.skills), host.reload_skills, self.shutdown)
        if host.peers is not None:
            drain = self.settings.drain_timeout
            tg.start_soon(_drain_peers_on, self.shutdown, host.peers, drain, self.peers_drained)
        else:
            self.peers_drained.set()

    async def _note_draining(self) -> None:
        await self.shutdown.wait()
        self.host.draining = True

    async def _start(self, tg: anyio.abc.TaskGroup) -> bool:
        """Load the files (a signal cancels it); False when the host is not serving."""
        try:
            with anyio.CancelScope() as starting:
                tg.start_soon(cancel_when_set, self.shutdown, starting)
                await self.host.start(tg)
        except StartupError as exc:
            self._cannot_start(f"protomcp: cannot start:\n{exc}")
        return self.host.started

    def _greet(self, url: str | None) -> None:
        if self.banner is not None:
            self.host.stderr(self.banner(self.host, url, self.settings.reload))

    async def _start_and_greet(self, tg: anyio.abc.TaskGroup) -> None:
        """stdio: the client is served while the files load; initialize is answered at once
        and tools/* requests wait in the transport until this is done."""
        if await self._start(tg) and sys.stdin.isatty():
            self._greet(None)

    async def _serve_http(self, tg: anyio.abc.TaskGroup, http: HttpSettings) -> None:
        """HTTP clients come and go: served once the files have loaded (and with the peers'
        /bridge beside the MCP endpoint)."""
        host = self.host
        if host.peers is not None:
            from protomcp_host.peers.credentials import bridge_authenticator
            from protomcp_host.peers.endpoint import BRIDGE_PATH, BridgeEndpoint

            http.websockets[BRIDGE_PATH] = BridgeEndpoint(host.peers)
            http.path_auth[BRIDGE_PATH] = bridge_authenticator(host.peers.settings.credentials, http.auth)
            http.before_exit.append(self.peers_drained.wait)
        if not await self._start(tg):
            return
        if self.settings.oauth_server is not None:  # (the store is open now: its records are there)
            from protomcp_host.oauth.server import AuthorizationServer

            AuthorizationServer(self.settings.oauth_server, host.store, host.stderr).mount(http)
        from protomcp_host.transports.http.server import serve_http

        try:
            await serve_http(host, http, self.shutdown, self.settings.drain_timeout, self._greet)
        except StartupError as exc:
            self.host.stderr(f"protomcp: cannot start: {exc}")
            self.code = 1


async def _drain_peers_on(event: anyio.Event, peers: Any, timeout: float, drained: anyio.Event) -> None:
    """Shutdown: the peers' calls in flight finish (bounded) while their links stay open; the
    links close with the host (host.stop)."""
    await event.wait()
    with anyio.move_on_after(timeout):
        await peers.drain()
    drained.set()


async def _on_signals(
    shutdown: anyio.Event, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """The first SIGTERM or SIGINT starts the graceful stop. A SIGTERM after it is absorbed:
    clients such as Claude Code send SIGINT, then SIGTERM 100 ms later (then SIGKILL), and dying
    at the SIGTERM would cut the tool processes' @lifespan teardown short. A second SIGINT (Ctrl+C
    again) stops at once."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        task_status.started()
        async for signum in signals:
            if not shutdown.is_set():
                shutdown.set()
            elif signum == signal.SIGINT:
                raise KeyboardInterrupt


async def _patiently(step: Callable[[], Coroutine[Any, Any, T]], until: float) -> T:
    """A starting host's step that reads the store, tried again while the store cannot be
    reached (Redis restarting under a --workers worker that starts), until `until`."""
    while True:
        try:
            return await step()
        except StoreError:
            if time.monotonic() + STORE_RETRY >= until:
                raise
        await anyio.sleep(STORE_RETRY)
