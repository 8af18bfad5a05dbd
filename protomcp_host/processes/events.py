"""What the processes layer tells the rest of the host, as two narrow interfaces:
`ProcessEvents` (one per host: loads, output, problems, notices) and `Leg` (one per request
a tool process works on for the calls layer: its answer and everything that happens meanwhile)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from protomcp_sdk.wire import envelope_pb2 as pb


@dataclass(slots=True)
class Loaded:
    """What a new tool process offers, from its handshake (raw Envelope messages)."""

    tools: list[pb.ToolDefinition]
    middleware: list[pb.RegisterMiddlewareRequest] = field(default_factory=list)
    resources: pb.ResourceListResponse | None = None  # None: not asked (not our SDK)
    templates: pb.ResourceTemplateListResponse | None = None
    prompts: pb.PromptListResponse | None = None
    completions: bool = False
    declared_files: tuple[Path, ...] = ()  # what its resources serve from (files=): dev watches them
    warnings: list[str] = field(default_factory=list)  # the SDK's load warnings, for the author


class ProcessEvents(Protocol):
    """The host's side of every tool process (the same object for all of them)."""

    share_output: bool
    """Output outside any call may reach clients (there is one: stdio); else host stderr only."""

    def loaded(self, label: str, offer: Loaded) -> None:
        """A new process is ready to go live; raising (a name clash, say) rejects it."""

    def output(self, label: str, stream: str, line: str) -> None:
        """A line the process printed (stdout/stderr), outside the frames: no call known."""

    def echo(self, label: str, line: str) -> None:
        """A line a request printed, for the host's stderr only (its session got it already)."""

    def log(self, label: str, level: str, logger: str, data: Any) -> None:
        """A log frame sent outside any request of the calls layer."""

    def logged(self, label: str, level: str, logger: str, data: Any) -> None:
        """A log frame a request sent (its session has it already): for the host's observers."""

    def problem(self, message: str) -> None:
        """Something the person running the host should know (crash, restart, failed reload)."""

    def stale(self, label: str, error: str) -> None:
        """A save of the file failed to load (`error`); its previous version keeps serving
        until a process loads it again (then `loaded` comes)."""

    def unloaded(self, label: str, error: str) -> None:
        """dev: the file failed to load (`error`) and has no previous version serving: it
        serves no tools until a process loads it (then `loaded` comes)."""

    def notice(self, label: str, envelope: pb.Envelope) -> None:
        """A notification outside any request (a resource changed)."""

    def user_state(
        self, caller: dict[str, Any] | None, request: pb.UserStateRequest, reply: StateReply
    ) -> None:
        """ctx.user_state asked during a running request whose caller is `caller` (its verified
        token claims; None: no OAuth): the answer goes to `reply`, once."""


StateReply = Callable[[pb.UserStateResponse], None]
"""Answers a tool process's user-state request."""

Reply = Callable[[dict[str, Any] | None, str | None], None]
"""Answers a tool process's request for the client: (result, error)."""


class Refused(Exception):
    """A request from a tool process that cannot be served; the message is its error answer."""


class Leg(Protocol):
    """One request the calls layer has a tool process work on (a tool call, a middleware phase, a
    forwarded read). The channel hands it the answer, or why there is none, exactly once, and
    everything the process sends for it meanwhile. `str(leg)` says what it is doing."""

    @property
    def live(self) -> bool:
        """Still wanted: a leg that waited for a restart is not sent once its request ended."""
        ...

    def sent(self, channel: Any, request_id: str) -> None:
        """It went out to `channel` (a Channel) as `request_id`: where to drop it when it ends."""
        ...

    @property
    def caller(self) -> dict[str, Any] | None:
        """The verified token claims of who made the request (None: no OAuth): whose user
        state the process's ctx.user_state reaches."""
        ...

    def answered(self, envelope: pb.Envelope, raw: list[bytes] | None, trusted: bool) -> None: ...
    def failed(self, reason: str) -> None: ...
    def progress(self, note: pb.ProgressNotification) -> None: ...
    def log(self, level: str, logger: str, data: Any) -> None: ...
    def task_status(self, note: pb.TaskStatusResponse) -> None: ...
    def control(self, envelope: pb.Envelope) -> list[str]:
        """A tool-list control request; returns the active tools. Raises Refused."""
        ...

    def ask_client(
        self, method: str, params: dict[str, Any], timeout: float | None, reply: Reply, key: str = ""
    ) -> None:
        """A request for the client (`key`: its name in a 2026-07-28 input-required round)."""
        ...
