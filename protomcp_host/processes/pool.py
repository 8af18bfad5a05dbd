"""`--processes N`: N tool processes serving one file, beside (not instead of) the Supervisor.

Each member is an ordinary Supervisor (its own crash restart with backoff, heartbeat and
blue/green reload), so a crash restarts one member while the others keep serving. The pool
adds only what N of them need: each request goes to the least busy serving member; the
first member alone reports what the file offers (one tool list, one middleware registration,
so middleware runs once per call); a reload asks every member (each replaces its process
blue/green). Module-level state in the tool file is per process.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from protomcp_host.processes.channel import Channel
from protomcp_host.processes.events import Leg, Loaded, ProcessEvents
from protomcp_host.processes.launch import Launched, label_of
from protomcp_host.processes.supervisor import Supervisor
from protomcp_host.processes.worker import WorkerError
from protomcp_sdk.wire import protomcp_pb2 as pb


class _Follower:
    """The ProcessEvents of members after the first: what the file offers is the first
    member's to report (the same file, so the same offer); everything else passes through."""

    def __init__(self, events: ProcessEvents) -> None:
        self._events = events
        self.share_output = events.share_output

    def loaded(self, label: str, offer: Loaded) -> None:
        pass

    def __getattr__(self, name: str) -> Any:  # output, echo, log, problem, notice
        return getattr(self._events, name)


def busy(supervisor: Supervisor) -> int | None:
    """Requests its process works on (None: it is not serving now)."""
    worker = supervisor.current
    if worker is None or worker.death is not None or not supervisor.ready:
        return None
    channel: Channel | None = getattr(worker, "channel", None)
    if channel is None:
        return None
    return len(channel.legs) + len(channel.holds)


class Pool:
    """N Supervisors of one file behind the interface of one (see ToolProcesses in the bridge)."""

    def __init__(
        self,
        file: Path,
        events: ProcessEvents,
        size: int,
        *,
        python: str = sys.executable,
        launched: Launched | None = None,
        **options: Any,
    ) -> None:
        if size < 1:
            raise ValueError("a pool needs at least one process")
        self.file = file
        self.label = label_of(file)
        follower = _Follower(events)
        self.members = [
            Supervisor(
                file,
                events if i == 0 else follower,  # type: ignore[arg-type]
                python=python,
                launched=launched if i == 0 else None,
                **options,
            )
            for i in range(size)
        ]
        self._next = 0  # where the least-busy search starts: ties rotate

    # -- lifecycle (as Supervisor) ---------------------------------------------------------
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Start every member (the first one's offer goes live first); errors propagate."""
        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            try:
                await tg.start(self.members[0].run)
                await _start_all(tg, self.members[1:])
            except (WorkerError, ValueError) as exc:
                failure = exc  # raised below, outside the task group, so it is not wrapped
                tg.cancel_scope.cancel()
            else:
                task_status.started()
        if failure is not None:
            raise failure

    def request_reload(self) -> None:
        for member in self.members:
            member.request_reload()

    async def stop(self, grace: float) -> None:
        async with anyio.create_task_group() as tg:
            for member in self.members:
                tg.start_soon(member.stop, grace)

    @property
    def ready(self) -> bool:
        return any(member.ready for member in self.members)

    @property
    def reloads(self) -> int:
        return min(member.reloads for member in self.members)

    # -- requests (as Supervisor) -----------------------------------------------------------
    def pick(self) -> Supervisor:
        """The serving member with the fewest requests open (ties: the next in turn); the
        first member when none serves (its start waits, bounded, for its restart)."""
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
        return best or self.members[0]

    def start(self, envelope: pb.Envelope, leg: Leg) -> None:
        self.pick().start(envelope, leg)

    def notify(self, envelope: pb.Envelope) -> None:
        for member in self.members:
            member.notify(envelope)

    def ready_channel(self) -> Channel | None:
        return self.pick().ready_channel()

    async def channel(self) -> Channel | None:
        return await self.pick().channel()


async def _start_all(tg: anyio.abc.TaskGroup, members: list[Supervisor]) -> None:
    """Start members concurrently inside `tg` (they keep running there); the first error raises."""
    errors: list[Exception] = []

    async def one(member: Supervisor) -> None:
        try:
            await tg.start(member.run)
        except (WorkerError, ValueError) as exc:
            errors.append(exc)

    async with anyio.create_task_group() as starting:
        for member in members:
            starting.start_soon(one, member)
    if errors:
        raise errors[0]
