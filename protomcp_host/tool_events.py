"""What tool processes (and upstreams, and peer hosts) tell the host: their tools as they load,
output and log messages outside any call, problems, notices. This is the ProcessEvents
(processes/events.py) of every source; app.Host wires it and keeps the catalog it fills."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import orjson

from protomcp_host.calls.advice import no_description, undescribed
from protomcp_host.calls.envelope import file_features, tool_from_definition
from protomcp_host.calls.execution import Dispatcher
from protomcp_host.calls.forwarding import Forwarding
from protomcp_host.calls.middleware import Middleware
from protomcp_host.calls.router import Router
from protomcp_host.calls.staleness import placeholder_tool, stale_note
from protomcp_host.processes.events import Loaded, StateReply
from protomcp_host.processes.output import LEVELS
from protomcp_host.protocol.catalog import Catalog, NameClash, Tool
from protomcp_host.settings import RunSettings
from protomcp_host.store.base import Store
from protomcp_sdk.wire import envelope_pb2 as pb

RESOURCE_UPDATED = "resource_updated"  # bus topic: a resource changed (payload: its URI)
Watcher = Callable[[str, dict[str, Any]], None]
"""Told of host events: ("loaded", diff), ("problem", message), ("output", line), ("printed",
a line a call printed), ("log", a log message; "call": true when a call sent it), ("playground",
its url)."""


class UserStateServer(Protocol):
    """Serves ctx.user_state (shared/user_state.UserStates)."""

    def serve(
        self, caller: dict[str, Any] | None, request: pb.UserStateRequest, reply: StateReply
    ) -> None: ...


class EventsHost(Protocol):
    """What the tool events read of the host (app.Host)."""

    @property
    def catalog(self) -> Catalog: ...
    @property
    def forwarding(self) -> Forwarding: ...
    @property
    def dispatcher(self) -> Dispatcher: ...
    @property
    def store(self) -> Store: ...
    @property
    def supervisors(self) -> Mapping[str, object]: ...
    @property
    def upstreams(self) -> Mapping[str, object]: ...
    @property
    def peers(self) -> Any: ...
    @property
    def started(self) -> bool: ...
    @property
    def task_group(self) -> object | None: ...
    @property
    def watchers(self) -> list[Watcher]: ...
    @property
    def routers(self) -> list[Router]: ...
    @property
    def stderr(self) -> Callable[[str], None]: ...
    @property
    def user_states(self) -> UserStateServer: ...

    def tell(self, kind: str, data: dict[str, Any]) -> None: ...
    def report_problem(self, message: str) -> None: ...


class ToolEvents:
    """The host's ProcessEvents: a load replaces the file's tools in the catalog (sessions that
    see a change hear of it), what a process prints or logs outside a call goes to stderr, the
    watchers and (stdio) the client."""

    def __init__(self, host: EventsHost, settings: RunSettings) -> None:
        self.host = host
        # Output and log messages outside any call reach clients only where there is exactly
        # one (stdio); over HTTP they go to the host's stderr alone.
        self.share_output = settings.http is None
        self.echo_requests = settings.echo_requests  # what a call prints also goes to stderr
        self.include_tags = set(settings.include_tags)
        self.exclude_tags = set(settings.exclude_tags)
        self._middleware_of: dict[str, list[Middleware]] = {}
        self._placeholders: set[str] = set()  # dev: files served by a placeholder tool (they did not load)
        self._warned: dict[str, set[str]] = {}  # the SDK's load warnings said, per file

    def loaded(self, label: str, offer: Loaded) -> None:
        """A new process goes live with what it offers; raises (a name clash) to reject it."""
        if offer.resources is not None:  # our SDK: resources, templates, prompts too
            assert offer.templates is not None and offer.prompts is not None
            features = file_features(
                label, offer.resources, offer.templates, offer.prompts, offer.completions
            )
            self.host.forwarding.stage(label, features)  # checked first; applied with the tools
        self._on_tools(label, offer.tools, offer.middleware)
        self.host.dispatcher.stale.pop(label, None)  # it serves the file as it is now
        self._warn(label, offer.warnings)

    def stale(self, label: str, error: str) -> None:
        """dev: a save failed to load; the answers of the file's tools say so until a good one."""
        self.host.dispatcher.stale[label] = stale_note(label, error)

    def unloaded(self, label: str, error: str) -> None:
        """dev: the file has not loaded, so it has no tools: a placeholder tool says why, where
        the model looks (its tools), until the file loads and its own tools replace it."""
        with contextlib.suppress(NameClash):  # another file has a tool of that name: stderr says it
            self._serve_tools(label, [placeholder_tool(label, error)], [], placeholder=True)

    def output(self, label: str, stream: str, line: str) -> None:
        """A line a tool process printed outside the frames (no call known)."""
        self.host.stderr(f"[{label}] {line}")
        self.host.tell("output", {"label": label, "stream": stream, "line": line})
        if self.share_output:
            for router in self.host.routers:
                router.log(LEVELS.get(stream, "info"), label, line)

    def echo(self, label: str, line: str) -> None:
        if self.echo_requests:
            self.host.stderr("\n".join(f"[{label}] {part}" for part in line.split("\n")))
        if self.host.watchers:
            self.host.tell("printed", {"label": label, "line": line})

    def log(self, label: str, level: str, logger: str, data: Any) -> None:
        """A log message a tool process sent outside any call."""
        self.host.stderr(
            f"[{label}] {level}: {data if isinstance(data, str) else orjson.dumps(data).decode()}"
        )
        if self.host.watchers:
            self.host.tell("log", {"label": label, "level": level, "logger": logger, "data": data})
        if self.share_output:
            for router in self.host.routers:
                router.log(level, logger, data)

    def logged(self, label: str, level: str, logger: str, data: Any) -> None:
        if self.host.watchers:
            self.host.tell(
                "log", {"label": label, "level": level, "logger": logger, "data": data, "call": True}
            )

    def problem(self, message: str) -> None:
        self.host.report_problem(message)

    def notice(self, label: str, envelope: pb.Envelope) -> None:
        """A tool process's notification outside any call: a resource update goes out on the
        store's bus, so listeners on every host sharing the store hear of it (this one too)."""
        if envelope.WhichOneof("msg") == "resource_changed" and envelope.resource_changed.uri:
            self.host.store.publish(RESOURCE_UPDATED, envelope.resource_changed.uri.encode())

    def user_state(
        self, caller: dict[str, Any] | None, request: pb.UserStateRequest, reply: StateReply
    ) -> None:
        """ctx.user_state of a running request: the caller's own state, in the store."""
        self.host.user_states.serve(caller, request, reply)

    def _on_tools(
        self,
        label: str,
        definitions: list[pb.ToolDefinition],
        middleware: list[pb.RegisterMiddlewareRequest],
    ) -> None:
        rate_of = self.host.dispatcher.limits.rate_of if self.host.dispatcher.limits is not None else None
        tools = [tool_from_definition(d, label, rate_of) for d in definitions if self._exposed(d)]
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
        before = {t.name: (t.mcp, t.hidden, t.pinned) for t in self.host.catalog.tools_of(label)}
        loaded_before = {} if label in self._placeholders else before
        if placeholder:
            self._placeholders.add(label)
        else:
            self._placeholders.discard(label)
        seen = [(router, router.session.tool_list.visible()) for router in self.host.routers]
        changed = self.host.catalog.replace(label, tools)
        self.host.forwarding.apply(label, notify=self.host.started)
        self._middleware_of[label] = [
            Middleware(m.name, m.priority, label, m.before_only, m.composes) for m in middleware
        ]
        self.host.dispatcher.set_middleware(
            sorted((m for chain in self._middleware_of.values() for m in chain), key=lambda m: m.order)
        )
        large = [tool for tool in tools if tool.large]
        if (
            large and self.host.task_group is not None
        ):  # their validators take seconds to build: not on the loop,
            # and not in a thread the host's exit would wait for (a daemon: dropped at exit)
            threading.Thread(target=_prepare, args=(large,), name="protomcp-prepare", daemon=True).start()
        after = {t.name: (t.mcp, t.hidden, t.pinned) for t in tools}
        if not placeholder and label in self.host.supervisors:
            self._advise(label, before, tools)
        if self.host.watchers and not placeholder:
            diff = tool_diff(loaded_before, after)
            self.host.tell("loaded", {"label": label, "initial": not self.host.started, **diff})
        if not self.host.started:
            return
        if not placeholder:
            self.host.stderr(f"protomcp: loaded {label}: {describe_change(loaded_before, after)}")
            if loaded_before.keys() != after.keys():
                self.host.stderr(RESTART_HINT)
        if changed or before != after:
            for router, visible in seen:
                router.carry_out(router.session.tool_list.catalog_changed(visible))
            if self.host.peers is not None and (
                label in self.host.supervisors or label in self.host.upstreams
            ):
                self.host.peers.tools_changed()  # peers see this host's own tools

    def _advise(self, label: str, before: dict[str, Any], tools: list[Tool]) -> None:
        """A tool file's tools that have no description (since this load): stderr and the dev
        diagnostics say so (not the client: it is the author's to fix)."""
        described_before = {name for name, (mcp, _, _) in before.items() if not undescribed([mcp])}
        for name in undescribed(tool.mcp for tool in tools):
            if name in before and name not in described_before:
                continue  # said when it loaded so
            message = f"warning: {label}: {no_description(name)}"
            self.host.stderr(f"protomcp: {message}")
            self.host.tell("problem", {"message": message})

    def _warn(self, label: str, warnings: list[str]) -> None:
        """The SDK's load warnings (a tool naming an app the file does not define, say), said as
        the host says its own: stderr and the dev diagnostics, each once while the file keeps it."""
        said = self._warned.get(label, set())
        for warning in warnings:
            if warning not in said:
                message = f"warning: {label}: {warning}"
                self.host.stderr(f"protomcp: {message}")
                self.host.tell("problem", {"message": message})
        self._warned[label] = set(warnings)

    def _exposed(self, definition: pb.ToolDefinition) -> bool:
        """--include-tag / --exclude-tag: which tools this host exposes at all."""
        tags = set(definition.tags)
        if self.include_tags and not tags & self.include_tags:
            return False
        return not tags & self.exclude_tags


RESTART_HINT = (
    "protomcp: the tool names changed: Claude Desktop and Cursor do not follow tools/list_changed, "
    "restart them (Cursor: refresh the server) to see added or removed tools"
)


def _prepare(tools: list[Tool]) -> None:
    for tool in tools:
        tool.prepare()


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
