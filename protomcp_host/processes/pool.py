"""`--processes N`: N tool processes serving one file, beside (not instead of) the Supervisor.

Each member is an ordinary Supervisor (its own crash restart with backoff, heartbeat and
blue/green reload), so a crash restarts one member while the others keep serving. The pool
adds only what N of them need: each request goes to the least busy serving member; the
first member alone reports what the file offers (one tool list, one middleware registration,
so middleware runs once per call). A pool serves one version: a reload goes to the first
member, and the others follow only once the host took what it offers (a reload the host rejects,
a name clash say, leaves every member on the previous version); a member that restarts with
something else on offer is refused until the pool reloads. Module-level state in the tool file
is per process. In dev only the first member keeps a warm standby (the reload that puts
the new version live); the others load theirs cold: one idle process per file, not N.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from google.protobuf.message import Message

from protomcp_host.processes.channel import Channel
from protomcp_host.processes.events import Leg, Loaded, ProcessEvents, StateReply
from protomcp_host.processes.launch import Launched, label_of
from protomcp_host.processes.settings import ProcessSettings
from protomcp_host.processes.supervisor import Supervisor
from protomcp_host.processes.tool_process import ToolProcessError
from protomcp_sdk.wire import envelope_pb2 as pb


def fingerprint(offer: Loaded) -> bytes:
    """What a process offers, as bytes: two processes serve one version when these are equal."""
    parts: list[Message | None] = [
        *offer.tools,
        *offer.middleware,
        offer.resources,
        offer.templates,
        offer.prompts,
    ]
    return b"\0".join(
        b"-" if part is None else part.SerializeToString(deterministic=True) for part in parts
    ) + (b"c" if offer.completions else b"")


class _Members:
    """The ProcessEvents of a pool's members: the first member's offer goes to the host (which
    may reject it); the others' offers must be the one the host took, and are not reported again
    (one tool list). Everything else passes through."""

    def __init__(self, events: ProcessEvents, leader: bool, serving: list[bytes]) -> None:
        self._events = events
        self._leader = leader
        self._serving = serving  # one cell shared by the pool's members: the version served
        self.share_output = events.share_output

    def loaded(self, label: str, offer: Loaded) -> None:
        if self._leader:
            self._events.loaded(label, offer)
            self._serving[:] = [fingerprint(offer)]
        elif self._serving != [fingerprint(offer)]:
            raise ValueError(
                f"{label}: this pool member loaded a version the pool does not serve "
                "(the file changed); it waits for the pool to reload"
            )

    def unloaded(self, label: str, error: str) -> None:
        if self._leader:  # (each member fails alike: one placeholder)
            self._events.unloaded(label, error)

    # The rest passes through.
    def output(self, label: str, stream: str, line: str) -> None:
        self._events.output(label, stream, line)

    def echo(self, label: str, line: str) -> None:
        self._events.echo(label, line)

    def log(self, label: str, level: str, logger: str, data: Any) -> None:
        self._events.log(label, level, logger, data)

    def logged(self, label: str, level: str, logger: str, data: Any) -> None:
        self._events.logged(label, level, logger, data)

    def problem(self, message: str) -> None:
        self._events.problem(message)

    def stale(self, label: str, error: str) -> None:
        self._events.stale(label, error)

    def notice(self, label: str, envelope: pb.Envelope) -> None:
        self._events.notice(label, envelope)

    def user_state(
        self, caller: dict[str, Any] | None, request: pb.UserStateRequest, reply: StateReply
    ) -> None:
        self._events.user_state(caller, request, reply)


def busy(supervisor: Supervisor) -> int | None:
    """Requests its process works on (None: it is not serving now)."""
    process = supervisor.current
    if process is None or process.death is not None or not supervisor.ready:
        return None
    channel: Channel | None = getattr(process, "channel", None)
    if channel is None:
        return None
    return len(channel.open_requests)


class Pool:
    """N Supervisors of one file behind the interface of one (see ToolSource in calls.execution)."""

    def __init__(
        self,
        file: Path,
        events: ProcessEvents,
        size: int,
        settings: ProcessSettings,
        *,
        launched: Launched | None = None,
    ) -> None:
        if size < 1:
            raise ValueError("a pool needs at least one process")
        self.file = file
        self.label = label_of(file)
        self.settings = settings
        serving: list[bytes] = []
        followers = replace(settings, standby=False)  # one warm standby per file, for the reload that counts
        self.members = [
            Supervisor(
                file,
                _Members(events, i == 0, serving),
                settings if i == 0 else followers,
                launched=launched if i == 0 else None,
            )
            for i in range(size)
        ]
        self.members[0].on_reloaded = self._follow
        self._next = 0  # where the least-busy search starts: ties rotate
        self._tg: anyio.abc.TaskGroup | None = None
        self._stopping = False

    # -- lifecycle (as Supervisor) ---------------------------------------------------------
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Start every member (the first one's offer goes live first); errors propagate."""
        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                await tg.start(self.members[0].run)
                await _start_all(tg, self.members[1:])
            except (ToolProcessError, ValueError) as exc:
                failure = exc  # raised below, outside the task group, so it is not wrapped
                tg.cancel_scope.cancel()
            else:
                task_status.started()
        if failure is not None:
            raise failure

    def request_reload(self) -> None:
        """The first member reloads; the others follow once the host took its offer."""
        self.members[0].request_reload()

    def _follow(self) -> None:
        for member in self.members[1:]:
            member.request_reload()

    async def stop(self, grace: float) -> None:
        self._stopping = True
        async with anyio.create_task_group() as tg:
            for member in self.members:
                tg.start_soon(member.stop, grace)

    @property
    def ready(self) -> bool:
        return any(member.ready for member in self.members)

    @property
    def declared_files(self) -> tuple[Path, ...]:
        return self.members[0].declared_files

    @property
    def reloads(self) -> int:
        return min(member.reloads for member in self.members)

    # -- requests (as Supervisor) -----------------------------------------------------------
    def pick(self) -> Supervisor | None:
        """The serving member with the fewest requests open (ties: the next in turn); None when
        none serves."""
        best: Supervisor | None = None
        least = 0
        count = len(self.members)
        for step in range(count):
            member = self.members[(self._next + step) % count]
            load = busy(member)
            if load is not None and (best is None or load < least):
                best, least = member, load
                if load == 0:
                    break
        self._next = (self._next + 1) % count
        return best

    async def _any_serving(self) -> Supervisor | None:
        """The first member to serve again, waiting (bounded) while every one restarts."""
        found: list[Supervisor] = []
        with anyio.move_on_after(self.settings.restart_wait):
            async with anyio.create_task_group() as tg:

                async def one(member: Supervisor) -> None:
                    await member.wait_ready()
                    found.append(member)
                    tg.cancel_scope.cancel()

                for member in self.members:
                    tg.start_soon(one, member)
        return self.pick() or (found[0] if found else None)

    def start(self, envelope: pb.Envelope, leg: Leg) -> None:
        member = self.pick()
        if member is not None:
            member.start(envelope, leg)
        elif self.members[0].current is None and self.members[0].load_error is not None:
            self.members[0].start(envelope, leg)  # never loaded: it fails the call with the error
        elif self._tg is None or self._stopping:
            leg.failed(f"{self.label}: tool process is not running")
        else:
            self._tg.start_soon(self._start_when_any_serves, envelope, leg)

    async def _start_when_any_serves(self, envelope: pb.Envelope, leg: Leg) -> None:
        member: Supervisor | None = None
        try:
            member = await self._any_serving()
        finally:  # also when the host stops meanwhile: the request must still get an answer
            if not leg.live:
                pass  # its request ended meanwhile: nothing to send
            elif member is not None:
                member.start(envelope, leg)
            else:
                leg.failed(f"{self.label}: tool process is not running (it is restarting; try again shortly)")

    def notify(self, envelope: pb.Envelope) -> None:
        for member in self.members:
            member.notify(envelope)

    def ready_channel(self) -> Channel | None:
        member = self.pick()
        return None if member is None else member.ready_channel()

    async def channel(self) -> Channel | None:
        member = self.pick() or await self._any_serving()
        return None if member is None else member.ready_channel()


async def _start_all(tg: anyio.abc.TaskGroup, members: list[Supervisor]) -> None:
    """Start members concurrently inside `tg` (they keep running there); the first error raises."""
    errors: list[Exception] = []

    async def one(member: Supervisor) -> None:
        try:
            await tg.start(member.run)
        except (ToolProcessError, ValueError) as exc:
            errors.append(exc)

    async with anyio.create_task_group() as starting:
        for member in members:
            starting.start_soon(one, member)
    if errors:
        raise errors[0]
