"""One serve(): a host served over stdio until its client goes away, or over HTTP, until a
signal arrives; the signals, the peers' drain and the banner around it. Kept apart from
app.py's Host, which is what is served (and what tests and the playground make alone)."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from protomcp_host.app import STOP_GRACE, Host
from protomcp_host.errout import ErrOut
from protomcp_host.processes.launch import Launched, StartupError
from protomcp_host.protocol.scopes import declared_scopes
from protomcp_host.protocol.skills import Skills
from protomcp_host.settings import RunSettings
from protomcp_host.store.base import Store
from protomcp_host.transports.waiting import cancel_when_set

if TYPE_CHECKING:
    from protomcp_host.transports.http.server import HttpSettings


Banner = Callable[["Host", str | None, bool], str]
"""What to print for a person at a terminal: (host, the HTTP URL or None for stdio, dev mode)."""


Companion = Callable[..., Coroutine[Any, Any, None]]
"""Runs beside the host: `companion(host, shutdown, task_status=...)`, started with
TaskGroup.start (it reports started once it serves) and cancelled when the host stops."""


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
        if not _observe(settings, errout):
            return 1
        host = Host(list(launched), settings, launched=launched, stderr=errout, store=store, skills=skills)
        return await _Run(host, banner).serve(signalled or [], companions)
    finally:
        errout.close(timeout=1.0)


def _observe(settings: RunSettings, stderr: Callable[[str], None]) -> bool:
    """Metrics (Prometheus for GET /metrics over HTTP; OpenTelemetry when OTEL_* ask for it) and
    the audit log (--audit-log), switched on before the host is made: its sessions, tasks and tool
    processes record from their start. False: the audit log cannot be opened."""
    from protomcp_host.telemetry import otel

    otel.enable()
    if settings.http is not None:
        from protomcp_host.telemetry import prometheus

        settings.http.metrics = prometheus.enable()
    if settings.audit_log is not None:
        from protomcp_host.telemetry import audit

        try:
            log = audit.AuditLog.open(
                settings.audit_log, stdio=settings.http is None, arguments=settings.audit_arguments
            )
        except OSError as exc:
            stderr(f"protomcp: cannot start: --audit-log {settings.audit_log}: {exc.strerror or exc}")
            return False
        audit.start(log)
    return True


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

            def declared() -> frozenset[str]:  # the scopes tools, resources, prompts need (a client may ask)
                listed = (host.features.resources, host.features.templates, host.features.prompts)
                return declared_scopes(host.catalog.visible(lambda _: True), *(x.ordered() for x in listed))

            AuthorizationServer(self.settings.oauth_server, host.store, host.stderr, declared).mount(http)
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
