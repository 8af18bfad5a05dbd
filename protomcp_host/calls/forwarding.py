"""The host's side of resources, prompts and completions: each file's lists merged (staged
during its handshake, applied with its tools), requests forwarded to the tool process that
owns them, resource-change notifications passed to the sessions that subscribed."""

from __future__ import annotations

import ast
import asyncio
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from protomcp_host.calls.envelope import ForwardError, forward_request, forward_result
from protomcp_host.calls.execution import ToolSource
from protomcp_host.calls.router import Router
from protomcp_host.processes.channel import Channel
from protomcp_host.processes.events import Refused, Reply
from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.features import FeatureCatalog, FileFeatures, Forward
from protomcp_sdk.wire import envelope_pb2 as pb

_COMPLETION = re.compile(rb"@[\w.\s]*\bcompletion\b")


def declares_completions(file: Path) -> bool:
    """Whether a tool file uses @completion, read without running it. The stdio transport
    answers initialize before the files have loaded, so the `completions` capability is
    decided from this (and from what loaded files report, once they have)."""
    try:
        source = file.read_bytes()
        if _COMPLETION.search(source) is None:  # (no parse of a file that cannot have one)
            return False
        tree = ast.parse(source, str(file))
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
        features: FeatureCatalog,
        processes: Mapping[str, ToolSource],
        routers: Callable[[], list[Router]],
        timeout: float | None,
    ) -> None:
        self.features = features
        self.processes = processes
        self.routers = routers
        self.timeout = timeout or DEFAULT_TIMEOUT
        self._staged: dict[str, FileFeatures] = {}

    # -- lists ---------------------------------------------------------------------------
    def stage(self, label: str, offered: FileFeatures) -> None:
        """A new process's lists, checked against the other files' (raises NameClash)."""
        self.features.check(label, offered)
        self._staged[label] = offered

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
    def resource_updated(self, uri: str) -> None:
        """Tell this host's sessions subscribed (or listening) to `uri` that it changed."""
        for router in self.routers():
            for message in router.session.features.updates(uri):
                router.write(message, None)

    def roots_changed(self) -> None:
        """A client's roots changed: tell every tool process (its @on_roots_changed hooks run)."""
        for label in self.processes:
            self.processes[label].notify(pb.Envelope(roots_changed=pb.RootsChangedNotification()))

    # -- forwarded requests ------------------------------------------------------------------
    def forward(self, forward: Forward, router: Router) -> Any:
        """Ask the owning tool process; the answer (or why there is none) goes to the router,
        exactly once. While the process restarts, the request waits for it (bounded), like a call.
        Returns what runs it (None when nothing does)."""
        processes = self.processes.get(forward.owner)
        if processes is None:
            _failed(router, forward, rpc.INTERNAL_ERROR, f"{forward.owner}: tool process is not running")
            return None
        leg = _ForwardLeg(forward, router, self.timeout)
        processes.start(forward_request(forward), leg)
        return leg


def _failed(router: Router, forward: Forward, code: int, message: str, data: Any = None) -> None:
    """The forwarded request's error, to the session that asked."""
    router._emit(router.session.features.failed(forward, code, message, data), forward.id)


class _ForwardLeg:
    """A forwarded request in a tool process: its answer, or why there is none, goes to the
    session that asked, once; its log messages go there too, and nowhere else."""

    __slots__ = ("channel", "finished", "forward", "request_id", "router", "timer")

    def __init__(self, forward: Forward, router: Router, timeout: float) -> None:
        self.forward, self.router = forward, router
        self.finished = False
        self.channel: Channel | None = None
        self.request_id = ""
        self.timer = asyncio.get_running_loop().call_later(timeout, self._timed_out, timeout)
        forward.cancel = self.cancel

    def __str__(self) -> str:
        return (
            f"{self.forward.method} {self.forward.params.get('uri') or self.forward.params.get('name') or ''}"
        )

    @property
    def live(self) -> bool:
        return not self.finished

    @property
    def caller(self) -> dict[str, Any] | None:
        auth = self.forward.params.get("auth")  # (protocol/features.py puts the session's there)
        return auth if isinstance(auth, dict) else None

    def sent(self, channel: Channel, request_id: str) -> None:
        self.channel, self.request_id = channel, request_id

    def _end(self) -> bool:
        if self.finished:
            return False
        self.finished = True
        self.timer.cancel()
        self.forward.cancel = None
        self.router.asking.released(self.router, self, "the request is over")
        return True

    def cancel(self, reason: str = "") -> None:
        """The client cancelled it: no answer; the process is told to stop."""
        if self._end() and self.channel is not None:
            self.channel.drop(self.request_id, cancel=True)

    def _timed_out(self, timeout: float) -> None:
        if self.channel is not None:
            self.channel.drop(self.request_id, cancel=True)
        owner = self.forward.owner
        self.failed(f"{owner}: the tool process did not answer within {timeout:g}s")

    def answered(self, envelope: pb.Envelope, raw: list[bytes] | None, trusted: bool) -> None:
        if not self._end():
            return
        try:
            result = forward_result(self.forward, envelope, raw, trusted)
        except ForwardError as exc:
            _failed(self.router, self.forward, exc.code, exc.message, exc.data)
        else:
            router = self.router
            router._emit(router.session.features.answered(self.forward, *result), self.forward.id)

    def failed(self, reason: str) -> None:
        if self._end():
            _failed(self.router, self.forward, rpc.INTERNAL_ERROR, reason)

    def progress(self, note: pb.ProgressNotification) -> None:
        pass  # resources/read and friends carry no progress token

    def log(self, level: str, logger: str, data: Any) -> None:
        if not self.finished:
            self.router.log(level, logger, data, self.forward.id)

    def task_status(self, note: pb.TaskStatusResponse) -> None:
        pass

    def control(self, envelope: pb.Envelope) -> list[str]:
        raise Refused("tool-list control works only during a tool call")

    def ask_client(
        self, method: str, params: dict[str, Any], timeout: float | None, reply: Reply, key: str = ""
    ) -> None:
        if self.finished:
            reply(None, f"{method} can only be asked while the request is still running")
        else:
            # (only in input rounds can a resource or prompt function ask the client)
            self.router.asking.ask(self.router, self, method, params, timeout, reply, key)
