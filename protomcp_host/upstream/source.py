"""One upstream MCP server served as a source of tools: `Upstream`.

To the calls layer it is what a tool file's Supervisor is (`ToolSource`): `start(envelope, leg)`
runs a tools/call, resources/read, prompts/get or completion/complete on the upstream with the
official `mcp` client and hands the answer to the leg as the Envelope a tool process would
have sent. What it offers (tools namespaced `NAME_`, resources, prompts) reaches the host as a
`Loaded`, again on every list change. A stdio upstream that dies is started again, an HTTP one
reconnected, with the supervisor's backoff; calls made meanwhile wait for it (bounded), then
fail with a message that says why. A lost connection is closed only once the requests sent on
it have their own outcome (bounded): a request the upstream's new process refused for its
unknown session is sent again, one in flight on the process that died fails.

A façade over its collaborators: `connection.Connection` (connect, watch, reconnect),
`requests.InFlight` (the requests it has, and those dropped), `questions.Questions` (its
sampling and elicitation, asked of the right client), `forward` (one request sent, its answer
as an Envelope) and `offer` (what it offers, as a tool process would send it).
"""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import anyio.abc

from protomcp_host.processes.events import Leg, ProcessEvents
from protomcp_host.upstream import forward
from protomcp_host.upstream.connection import Connection
from protomcp_host.upstream.errors import CONNECTION_CLOSED, UpstreamError, describe, import_mcp, session_gone
from protomcp_host.upstream.questions import OWNER, Questions
from protomcp_host.upstream.requests import Forwarded, InFlight, carried
from protomcp_host.upstream.settings import UpstreamSettings
from protomcp_host.upstream.spec import UpstreamSpec
from protomcp_sdk.wire import envelope_pb2 as pb


class Upstream:
    """Keeps one upstream connected and forwards requests of the calls layer to it."""

    def __init__(self, spec: UpstreamSpec, events: ProcessEvents, settings: UpstreamSettings) -> None:
        self.spec = spec
        self.label = spec.label
        self.in_flight = InFlight(over_http=spec.is_http)
        self.questions = Questions(self.in_flight, lambda: self.connection.session)
        self.connection = Connection(spec, events, settings, self.in_flight, self.questions)
        self._ids = itertools.count(1)
        self._tg: anyio.abc.TaskGroup | None = None

    def __str__(self) -> str:
        return self.label

    @property
    def connects(self) -> int:
        """Successful connections so far (diagnostics, tests)."""
        return self.connection.connects

    @property
    def server_name(self) -> str:
        """The name the upstream gave in its serverInfo ("" before it connected)."""
        return self.connection.server_name

    # -- lifecycle -----------------------------------------------------------------
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Connect (errors of the first connection propagate), then keep the upstream served."""
        import_mcp()
        async with anyio.create_task_group() as tg:
            self._tg = tg
            failure = await self.connection.keep(task_status)
            tg.cancel_scope.cancel()
        if failure is not None:  # raised here, outside the task group, so it is not wrapped
            raise failure

    async def stop(self, grace: float) -> None:
        """Let running requests finish (up to `grace` seconds), then close the connection."""
        with anyio.move_on_after(grace):
            while self.in_flight.running:
                await anyio.sleep(0.02)
        self.connection.stop()

    # -- ToolSource: what the calls layer asks of it -----------------------------------------
    def start(self, envelope: pb.Envelope, leg: Leg) -> None:
        if self._tg is None or self.connection.stopping:
            leg.failed(f"{self.label} is not running")
            return
        request_id = f"u{next(self._ids)}"
        kind = envelope.WhichOneof("msg") or ""
        request = self.in_flight.running[request_id] = Forwarded(leg, kind, carried(envelope, kind))
        leg.sent(self, request_id)
        self._tg.start_soon(self._serve, envelope, request, request_id)

    def notify(self, envelope: pb.Envelope) -> None:
        """Notifications for tool processes (roots changed) are not forwarded to upstreams."""

    def ready_channel(self) -> None:
        """An upstream has no Envelope channel: it registers no middleware of its own."""
        return None

    async def channel(self) -> None:
        return None

    def drop(self, request_id: str, cancel: bool = True) -> None:
        """The request's owner is done with it: stop it (the mcp client tells the upstream).
        Over stdio, one the upstream had stays a possible owner of the upstream's questions
        until the upstream answers it or its connection ends (the upstream restarts, or is
        restarted: `Connection.recycle_due`)."""
        self.in_flight.drop(request_id, self.connection.session)

    def running(self) -> list[str]:
        return [str(request.leg) for request in self.in_flight.running.values()]

    async def _serve(self, envelope: pb.Envelope, request: Forwarded, request_id: str) -> None:
        leg = request.leg
        OWNER.set(request)  # this task's context: see Questions.owner_of
        try:
            reply, failure = await self._outcome(envelope, request)
        finally:
            request.on = None
            self.in_flight.moved()
        if self.in_flight.running.pop(request_id, None) is None:
            return  # dropped (cancelled, timed out) or failed already: nobody waits for it
        if reply is not None:
            leg.answered(reply, None, True)
        else:
            leg.failed(failure or f"{self.label}: no answer")

    async def _outcome(self, envelope: pb.Envelope, request: Forwarded) -> tuple[pb.Envelope | None, str]:
        """The request sent (once more on the next connection after a 404 for the session):
        its answer, or why there is none."""
        from mcp.shared.exceptions import MCPError

        connection = self.connection
        reply: pb.Envelope | None = None
        failure = ""
        session = None
        with request.scope:
            try:
                try:
                    session = await connection.connected()
                    reply, failure = await self._send(session, envelope, request)
                except MCPError as exc:
                    if not session_gone(exc):
                        raise
                    # The upstream restarted and forgot the session: this request was never
                    # served. Open a new session (the next connection) and send it once more.
                    request.on = None  # it waits for the next connection, not failed with this one
                    self.in_flight.moved()
                    connection.lose(session)
                    session = await connection.connected()
                    reply, failure = await self._send(session, envelope, request)
            except MCPError as exc:
                reply = forward.error_reply(request.kind, exc.error.code, exc.error.message)
                if exc.error.code == CONNECTION_CLOSED or session_gone(exc):
                    connection.lose(session)  # calls from now on wait for the next connection
                    failure = f"{self.label} went away during the request ({exc.error.message})"
                elif reply is None:
                    failure = f"{self.label}: {exc.error.message}"
            except UpstreamError as exc:
                failure = str(exc)
            except Exception as exc:
                failure = f"{self.label}: {describe(exc)}"
        return reply, failure

    async def _send(
        self, session: Any, envelope: pb.Envelope, request: Forwarded
    ) -> tuple[pb.Envelope | None, str]:
        request.on = session
        return await forward.send(session, envelope, request.leg, self.connection.names)
