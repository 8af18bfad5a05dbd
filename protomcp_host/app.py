"""Wires a run together: one Supervisor per tool file, the merged catalog, the client
sessions (connections.py) and what the tool processes tell (tool_events.py); run.py serves it."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.abc
import orjson

from protomcp_host import __version__
from protomcp_host.calls.execution import Dispatcher
from protomcp_host.calls.forwarding import Forwarding, declares_completions
from protomcp_host.calls.held import MAX_SUSPENDED_EACH, Rounds
from protomcp_host.calls.limits import RateLimits
from protomcp_host.calls.metering import task_ended
from protomcp_host.calls.middleware import Middleware
from protomcp_host.calls.router import Router, Writer
from protomcp_host.calls.tasks import TaskRunner
from protomcp_host.connections import LOCAL_PRINCIPAL, Connections
from protomcp_host.processes.launch import STATE_KEY_ENV, Launched, StartupError, label_of
from protomcp_host.processes.pool import Pool
from protomcp_host.processes.supervisor import Supervisor
from protomcp_host.processes.tool_process import ToolProcessError
from protomcp_host.protocol.catalog import Catalog
from protomcp_host.protocol.features import FeatureCatalog
from protomcp_host.protocol.skills import Skills
from protomcp_host.protocol.tasks import TaskStore
from protomcp_host.settings import RunSettings
from protomcp_host.shared.user_state import ANONYMOUS as ANONYMOUS_USER
from protomcp_host.shared.user_state import LOCAL as LOCAL_USER
from protomcp_host.shared.user_state import UserStates
from protomcp_host.store.base import Store, StoreError
from protomcp_host.store.memory import MemoryStore
from protomcp_host.telemetry import audit, metrics
from protomcp_host.tool_events import RESOURCE_UPDATED, ToolEvents, Watcher

if TYPE_CHECKING:
    from protomcp_host.proto_mcp.codec import Descriptors
    from protomcp_host.protocol.discovery import Discovery
    from protomcp_host.shared.tasks import SharedTasks
    from protomcp_host.shared.tool_lists import SharedToolLists
    from protomcp_host.shared.uses import SharedUses
    from protomcp_host.transports.ports import Connection, StartStop

SERVER_INFO = {"name": "protomcp", "version": __version__}
RUN_DEFAULTS = RunSettings()  # a run with every setting at its default
MODERN_ENV = "PROTOMCP_MODERN"
STOP_GRACE = 1.0  # seconds tool processes get to exit on their own once the host is done with them
HEALTH_TIMEOUT = 2.0  # seconds /healthz waits for the store to answer a ping
KEY_CHECK = 1.0  # seconds between reads of the store's requestState key
STORE_START_TIMEOUT = 10.0  # seconds a starting host waits for a store that restarts under it
STORE_RETRY = 0.5  # seconds between its attempts meanwhile
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
    """The long-lived part of a run: supervisors, catalog and sessions. A façade over its
    collaborators: its client sessions are Connections (connections.py), what the tool
    processes tell it is ToolEvents (tool_events.py); run.py serves it."""

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
        # The 2026-07-28 era is served beside the stateful one. PROTOMCP_MODERN=0 turns it off:
        # modern requests then get -32022 naming only the handshake revisions, so clients fall
        # back to initialize.
        self.serve_modern = os.environ.get(MODERN_ENV) != "0"
        self.catalog = Catalog(settings.page_size)
        self.discovery = _discovery(settings.discovery, self.catalog)
        self._descriptors: Descriptors | None = None
        self.draining = False  # shutdown began: /healthz says so, balancers send nothing new
        self.ready = anyio.Event()  # set once every file has loaded (or, in dev, failed to)
        self.task_group: anyio.abc.TaskGroup | None = None  # the one start() was given
        self.started = False
        self.startup_error: str | None = None  # why the tool files did not load (start raised)
        # Observers (the dev playground): host events as (kind, data), and every MCP message of
        # the client sessions as (direction "in"/"out", message, related request id).
        self.watchers: list[Watcher] = []
        self.tool_events = ToolEvents(self, settings)  # what the tool processes tell it
        self.connections = Connections(self)  # its client sessions
        self._wire_calls(files, skills)
        self._wire_store(store or MemoryStore())
        self._wire_sources(files, launched or {})

    def _wire_calls(self, files: list[Path], skills: Skills | None) -> None:
        """What carries calls and requests to the sources of tools, and the tasks they run as."""
        # modern era: calls waiting for their client's input (calls/rounds.py)
        self.rounds = Rounds(per_principal=min(MAX_SUSPENDED_EACH, self.max_in_flight))
        self.supervisors: dict[str, Supervisor | Pool] = {}  # a Pool: --processes N > 1
        self.upstreams: dict[str, Any] = {}  # label -> upstream.source.Upstream (--upstream)
        # every source of tools the calls layer calls: supervisors, upstreams
        self.sources: dict[str, Any] = {}
        self.dispatcher = Dispatcher(self.sources, self.call_timeout)
        self.features = FeatureCatalog(self.settings.page_size)  # resources, templates, prompts of every file
        self.forwarding = Forwarding(self.features, self.sources, self.connections.routers, self.call_timeout)
        self.features.completions_expected = any(declares_completions(file) for file in files)
        if skills is not None:  # --skills: served by the host itself, no tool process
            self.features.serve_skills(skills)
        # One task store for both eras: a stateful session's tasks are its own, a modern-era
        # principal's are the principal's (protocol/tasks.py); modern task calls run in TaskRunner.
        self.task_store = TaskStore()
        if metrics.ON:
            self.task_store.on_status = metrics.task
        if audit.LOG is not None:  # a call gone on as a task: its end is a line of its own
            self.task_store.on_finished = task_ended
        self.task_runner = TaskRunner(self.task_store, self.dispatcher, self.connections.routers)

    def _wire_store(self, store: Store) -> None:
        """The state shared with other hosts (--store): requestState uses, modern-era tasks and
        each principal's tool-list state (imported only with a shared store)."""
        self.store = store
        unauthenticated = LOCAL_USER if self.settings.http is None else ANONYMOUS_USER
        self.user_states = UserStates(store, unauthenticated, self.stderr)  # ctx.user_state
        self.dispatcher.limits = RateLimits(dict(self.settings.rate_limits), store, self.stderr)
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
            store, self.connections.principal_state, self.connections.replace_tool_state, self.stderr
        )

    def _wire_sources(self, files: list[Path], launched: dict[Path, Launched]) -> None:
        """A Supervisor (or a Pool of them) per tool file, an Upstream per --upstream, and the
        peer hosts (--agent-id)."""
        settings = self.settings
        supervision = settings.process_settings()
        if metrics.ON:
            supervision = replace(supervision, lifecycle=metrics.tool_process)
        for file in files:
            self.supervisors[label_of(file)] = (
                Pool(file, self.tool_events, settings.processes, supervision, launched=launched.get(file))
                if settings.processes > 1
                else Supervisor(file, self.tool_events, supervision, launched=launched.get(file))
            )
        if settings.upstreams:
            from protomcp_host.upstream.settings import UpstreamSettings
            from protomcp_host.upstream.source import Upstream  # imports mcp only when it runs

            bounds = UpstreamSettings(
                startup_timeout=settings.startup_timeout, version=__version__, hidden_env=settings.hidden_env
            )
            for spec in settings.upstreams:
                self.upstreams[spec.label] = Upstream(spec, self.tool_events, bounds)
        self.sources.update(self.supervisors)
        self.sources.update(self.upstreams)
        self.peers: Any = None  # peers.hub.PeerHub when this host has peers (--agent-id)
        if settings.bridge is not None:
            from protomcp_host.peers.hub import PeerHub

            self.peers = PeerHub(
                settings.bridge,
                self,
                self.tool_events,
                self.sources,
                call_timeout=self.call_timeout,
                on_event=self._peer_event,
                stderr=self.stderr,
            )

    # -- lifecycle -----------------------------------------------------------------
    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Start every tool process, concurrently. Raises StartupError on any failure."""
        self.task_group = tg
        self.dispatcher.spawn = tg.start_soon
        self.user_states.spawn = tg.start_soon
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
        for name in self.dispatcher.limits.unserved(self.catalog) if self.dispatcher.limits else ():
            self.stderr(
                f"protomcp: --rate-limit {name!r}: no tool of that name is served now (a tool that "
                "comes later, from a peer or a reload, gets it then)"
            )
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
        if metrics.ON:
            metrics.store_up(reachable)
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
        """Every client session's router now (connections.py)."""
        return self.connections.routers()

    # -- the transports' Sessions port (transports/ports.py): connections.py serves it ----------
    def connect(self, write: Writer, *, observed: bool = True) -> Router:
        return self.connections.connect(write, observed=observed)

    def connect_modern(
        self, write: Writer, principal: str = LOCAL_PRINCIPAL, *, measured: bool = False
    ) -> Router:
        return self.connections.connect_modern(write, principal, measured=measured)

    def disconnect(self, connection: Connection) -> None:
        self.connections.disconnect(connection)

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
        if self.tool_events.share_output:
            for router in self.routers:
                router.log("info", "bridge", event)

    def report_problem(self, message: str) -> None:
        """Crashes, restarts, failed reloads: the host's stderr, and the client where there is
        only one (they may quote a tool's output; over HTTP a failed call says why itself)."""
        self.stderr(f"protomcp: {message}")
        self.tell("problem", {"message": message})
        if self.tool_events.share_output:
            for router in self.routers:
                router.log("error", "protomcp", message)


if TYPE_CHECKING:

    def _ports(host: Host, router: Router) -> tuple[StartStop, Connection]:
        """Host and Router are what transports/ports.py says they are: mypy checks it here."""
        return host, router


def _print_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


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
