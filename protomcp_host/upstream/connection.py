"""One upstream kept connected: connected (the first failure propagates), watched (a ping every
`ping_interval`, lists read again when they change), and after a loss started again (stdio) or
reconnected (HTTP) with the supervisor's backoff. A lost connection is closed only once the
requests sent on it have their own outcome (bounded); a stdio upstream idle with a dropped request
unanswered past `cancel_grace` is restarted to forget it."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import anyio.abc

from protomcp_host.processes.events import ProcessEvents
from protomcp_host.processes.launch import child_environment
from protomcp_host.processes.supervisor import Backoff
from protomcp_host.upstream.answered import watch_answers
from protomcp_host.upstream.errors import OfferRefused, UpstreamError, describe, first
from protomcp_host.upstream.offer import Names, read_offer
from protomcp_host.upstream.questions import OWNER, Questions
from protomcp_host.upstream.requests import InFlight
from protomcp_host.upstream.settings import UpstreamSettings
from protomcp_host.upstream.spec import UpstreamSpec
from protomcp_sdk.wire import envelope_pb2 as pb

PING_TIMEOUT = 10.0  # a ping (or a new list) unanswered this long: the upstream is gone


class Connection:
    """The mcp client session to one upstream, from connect to loss, again and again."""

    def __init__(
        self,
        spec: UpstreamSpec,
        events: ProcessEvents,
        settings: UpstreamSettings,
        in_flight: InFlight,
        questions: Questions,
    ) -> None:
        self.spec, self.label = spec, spec.label
        self.events = events
        self.settings = settings
        self.in_flight = in_flight
        self.questions = questions
        self.backoff = Backoff()
        self.connects = 0  # successful connections, for diagnostics and tests
        self.session: Any = None  # the mcp ClientSession while connected
        self.server_name = ""
        self.names = Names()  # what the served names are on the upstream
        self.stopping = False
        self.recycling = False  # the connection ends to forget dropped requests (see recycle_due)
        self._stopped = asyncio.Event()
        self._ready = asyncio.Event()
        self._lost = asyncio.Event()
        self._relist = False

    async def keep(self, task_status: anyio.abc.TaskStatus[None]) -> UpstreamError | None:
        """Connect, then keep the upstream served until stopped; the first connection's
        failure is returned (the caller raises it outside its task group, unwrapped)."""
        while not self.stopping:
            began = time.monotonic()
            try:
                reason = await self._connection(task_status if not self.connects else None)
            except Exception as exc:
                reason = describe(exc)
                if not self.connects:
                    if isinstance(first(exc), OfferRefused):  # it connected; what it offers cannot be served
                        return UpstreamError(f"{self.label}: connected to {self._target()}, but {reason}")
                    return UpstreamError(f"{self.label}: cannot connect to {self._target()}: {reason}")
            self.in_flight.fail_sent(f"{self.label} went away ({reason})")
            if self.stopping:
                break
            if self.recycling:  # deliberate, not a failure: no backoff, and the line says why
                self.recycling = False
                self.events.problem(f"{self.label}: restarting it: {reason}")
                continue
            delay = self.backoff.next_delay(time.monotonic() - began)
            what = "restarting" if not self.spec.is_http else "reconnecting"
            self.events.problem(f"{self.label} went away ({reason}); {what} in {delay:g}s")
            with anyio.move_on_after(delay):
                await self._stopped.wait()
        return None

    def stop(self) -> None:
        self.stopping = True
        self._stopped.set()
        self._lost.set()

    async def connected(self) -> Any:
        """The session, once there is one (a call waits `restart_wait` for a reconnect)."""
        if self.session is None:
            with anyio.move_on_after(self.settings.restart_wait):
                await self._ready.wait()
        if self.session is None:
            raise UpstreamError(f"{self.label} is not connected (it is being restarted); try again shortly")
        return self.session

    def lose(self, session: Any) -> None:
        """`session` is lost (when it is still the one): calls from now on wait for the next."""
        if session is not None and session is self.session:
            self.session = None
            self._ready.clear()
            self._lost.set()

    def _target(self) -> str:
        return self.spec.url or " ".join(self.spec.command)

    async def _connection(self, task_status: anyio.abc.TaskStatus[None] | None) -> str:
        """One connection, from connect to loss; returns why it ended."""
        async with self.open_client() as session:
            with anyio.fail_after(self.settings.startup_timeout):
                init = await session.initialize()
                offer, self.names = await read_offer(session, self.spec)
            info = getattr(init, "server_info", None)
            self.server_name = getattr(info, "name", "") or ""
            try:
                self.events.loaded(self.label, offer)
            except ValueError as exc:  # a name clash
                raise OfferRefused(str(exc)) from None
            self.session = session
            self._lost = asyncio.Event()
            self._ready.set()
            self.connects += 1
            if task_status is not None:
                task_status.started()
            try:
                return await self.watch(session)
            finally:
                self.lose(session)
                try:
                    await self._settle(session)
                finally:
                    self.in_flight.fail_sent(f"{self.label} went away", session)

    async def _settle(self, session: Any) -> None:
        """Keep the lost connection open (bounded) until each request sent on it has its own
        outcome. Which one it gets says what became of it: a 404 for the session (the
        upstream's new process never saw the request; it is sent again on the next
        connection), or the connection closed under it (it ran on the process that died)."""
        if not self.stopping:
            await self.in_flight.settle(session, self.settings.settle_wait)

    @asynccontextmanager
    async def open_client(self) -> AsyncIterator[Any]:
        """An mcp ClientSession to the upstream: Streamable HTTP, or a stdio server started."""
        from mcp import ClientSession, types

        async with AsyncExitStack() as stack:
            if self.spec.is_http:
                import os

                from mcp.client.streamable_http import streamable_http_client
                from mcp.shared._httpx_utils import create_mcp_http_client

                headers = {}
                if self.spec.token_env:
                    token = os.environ.get(self.spec.token_env, "")
                    if not token:
                        raise UpstreamError(f"the environment variable {self.spec.token_env} is not set")
                    headers["Authorization"] = f"Bearer {token}"
                client = await stack.enter_async_context(create_mcp_http_client(headers=headers))
                read, write = await stack.enter_async_context(
                    streamable_http_client(self.spec.url, http_client=client)
                )
            else:
                from mcp import StdioServerParameters
                from mcp.client.stdio import stdio_client

                command, *args = self.spec.command
                env = child_environment(self.settings.hidden_env)
                params = StdioServerParameters(command=command, args=args, env=env)
                read, write = await stack.enter_async_context(stdio_client(params, errlog=sys.stderr))
                read, write = watch_answers(read, write, OWNER)
            session = await stack.enter_async_context(
                ClientSession(
                    read,
                    write,
                    sampling_callback=self.questions.sampling,
                    elicitation_callback=self.questions.elicitation,
                    logging_callback=self._logging,
                    message_handler=self._message,
                    client_info=types.Implementation(name="protomcp", version=self.settings.version or "0"),
                )
            )
            yield session

    async def watch(self, session: Any) -> str:
        """Until the connection is lost: pings, and lists read again when they change."""
        while not self.stopping:
            with anyio.move_on_after(self.settings.ping_interval):
                await self._lost.wait()
            if self.stopping:
                return "the host is stopping"
            if self._lost.is_set():
                return "its connection closed"
            if self.recycle_due():
                # In this same step, so no call is sent on the connection that ends: calls made
                # from now on wait for the next one.
                count = len(self.in_flight.dropped)
                self.recycling = True
                self.lose(session)
                return (
                    f"it is idle and {count} cancelled request{'s' if count > 1 else ''} it had "
                    f"{'are' if count > 1 else 'is'} still unanswered after {self.settings.cancel_grace:g}s "
                    "(until it restarts, every question it asks is declined)"
                )
            if self._relist:
                self._relist = False
                await self._read_lists_again(session)
                continue
            try:
                with anyio.fail_after(PING_TIMEOUT):
                    await session.send_ping()
            except TimeoutError:
                return f"no answer to a ping for {PING_TIMEOUT:g}s"
            except Exception as exc:
                return describe(exc)
        return "the host is stopping"

    async def _read_lists_again(self, session: Any) -> None:
        try:
            with anyio.fail_after(PING_TIMEOUT):
                offer, self.names = await read_offer(session, self.spec)
            self.events.loaded(self.label, offer)
        except Exception as exc:
            self.events.problem(f"{self.label}: its new lists were not taken: {describe(exc)}")

    def recycle_due(self) -> bool:
        """Whether to restart the upstream to clear its dropped requests: one has been
        unanswered for `cancel_grace` (the official SDK never answers a cancelled request, so
        it would keep every later question declined), and no request of ours is in it or
        waiting for it (nobody loses anything; the work its owner cancelled stops)."""
        in_flight = self.in_flight
        if self.spec.is_http or in_flight.running or not in_flight.still_dropped(self.session):
            return False
        oldest = min(since for _, since, _ in in_flight.dropped)
        return time.monotonic() - oldest >= self.settings.cancel_grace

    async def _message(self, message: Any) -> None:
        """Notifications from the upstream: list changes, resource updates."""
        from mcp import types

        if isinstance(message, Exception):
            return
        root = getattr(message, "root", message)
        if isinstance(
            root,
            types.ToolListChangedNotification
            | types.ResourceListChangedNotification
            | types.PromptListChangedNotification,
        ):
            self._relist = True
        elif isinstance(root, types.ResourceUpdatedNotification):
            uri = str(root.params.uri)
            self.events.notice(
                self.label, pb.Envelope(resource_changed=pb.ResourceChangedNotification(uri=uri))
            )

    async def _logging(self, params: Any) -> None:
        self.events.log(self.label, params.level, params.logger or self.label, params.data)
