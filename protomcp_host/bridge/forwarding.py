"""The host's side of resources, prompts and completions: each file's lists merged (staged
during its handshake, applied with its tools), requests forwarded to the tool process that
owns them, resource-change notifications passed to the sessions that subscribed."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from protomcp_host.bridge.envelope import ForwardError, forward_request, forward_result
from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.features import Features, FileFeatures, Forward
from protomcp_sdk.wire import protomcp_pb2 as pb

if TYPE_CHECKING:
    from protomcp_host.bridge.router import Router
    from protomcp_host.processes.channel import Channel
    from protomcp_host.processes.supervisor import Supervisor


def declares_completions(file: Path) -> bool:
    """Whether a tool file uses @completion, read without running it. The stdio transport
    answers initialize before the files have loaded, so the `completions` capability is
    decided from this (and from what loaded files report, once they have)."""
    try:
        tree = ast.parse(file.read_bytes(), str(file))
    except (OSError, SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                if name == "completion":
                    return True
    return False


DEFAULT_TIMEOUT = 60.0  # seconds a read, a prompt or a completion may take without --call-timeout


class Forwarding:
    def __init__(
        self,
        features: Features,
        supervisors: dict[str, Supervisor],
        routers: Callable[[], list[Router]],
        timeout: float | None,
    ) -> None:
        self.spawn: Callable[..., None] | None = None  # runs a task in the host's task group, once started
        self.features = features
        self.supervisors = supervisors
        self.routers = routers
        self.timeout = timeout or DEFAULT_TIMEOUT
        self._staged: dict[str, FileFeatures] = {}

    # -- lists ---------------------------------------------------------------------------
    def stage(self, supervisor: Supervisor, offered: FileFeatures) -> None:
        """A new process's lists, checked against the other files' (raises NameClash)."""
        self.features.check(supervisor.label, offered)
        self._staged[supervisor.label] = offered

    def apply(self, label: str, notify: bool) -> None:
        """The new process goes live: its lists replace its file's; clients hear of changes."""
        offered = self._staged.pop(label, None)
        if offered is None:
            return
        notes = self.features.replace(label, offered)
        if notify and notes:
            for router in self.routers():
                for message in router.session.features.list_changed(notes):
                    router.write(message, None)

    # -- notifications from tool processes -------------------------------------------------
    def on_notice(self, envelope: pb.Envelope) -> None:
        if envelope.WhichOneof("msg") == "resource_changed" and envelope.resource_changed.uri:
            for router in self.routers():
                message = router.session.features.updated(envelope.resource_changed.uri)
                if message is not None:
                    router.write(message, None)

    def roots_changed(self) -> None:
        """A client's roots changed: tell every tool process (its @on_roots_changed hooks run)."""
        for supervisor in self.supervisors.values():
            worker = supervisor.current
            if worker is not None and worker.channel is not None:
                worker.channel.send(pb.Envelope(roots_changed=pb.RootsChangedNotification()))

    # -- forwarded requests ------------------------------------------------------------------
    def forward(self, forward: Forward, router: Router) -> None:
        """Ask the owning tool process; the answer (or why there is none) goes to the router.
        While the process restarts, the request waits for it (bounded), like a call."""
        supervisor = self.supervisors.get(forward.owner)  # type: ignore[call-overload]
        worker = supervisor.current if supervisor is not None else None
        if worker is not None and worker.death is None and worker.channel is not None and supervisor.ready:
            self._ask(worker.channel, forward, router)
        elif supervisor is not None and self.spawn is not None:
            self.spawn(self._forward_when_ready, supervisor, forward, router)
        else:
            router.forward_failed(
                forward, rpc.INTERNAL_ERROR, f"{forward.owner}: tool process is not running"
            )

    async def _forward_when_ready(self, supervisor: Supervisor, forward: Forward, router: Router) -> None:
        channel = await supervisor.channel()
        if router.session.features.forwarded.get(forward.id) is not forward:
            return  # cancelled meanwhile
        if channel is None:
            message = f"{forward.owner}: tool process is not running (it is restarting; try again shortly)"
            router.forward_failed(forward, rpc.INTERNAL_ERROR, message)
        else:
            self._ask(channel, forward, router)

    def _ask(self, channel: Channel, forward: Forward, router: Router) -> None:
        trusted = channel.trusted

        def done(reply: pb.Envelope | None, raw: list[bytes] | None, problem: str | None) -> None:
            forward.cancel = None
            if reply is None:
                router.forward_failed(forward, rpc.INTERNAL_ERROR, problem or "no answer")
                return
            try:
                result = forward_result(forward, reply, raw, trusted)
            except ForwardError as exc:
                router.forward_failed(forward, exc.code, exc.message, exc.data)
            else:
                router.forward_answered(forward, result)

        forward.cancel = channel.ask(forward_request(forward), self.timeout, done)
