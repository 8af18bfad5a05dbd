"""Carries out one session's events: answers go to its writer, tool calls go to the
tool process that owns the tool, cancellations reach the running call. It is also the
sink of its calls: their answers, progress and log messages come back here.

Every write names the client request it belongs to (`related`), so a transport with
several streams (HTTP) can put it on the right one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from protomcp_host.processes.channel import cancel_call
from protomcp_host.protocol.features import CancelForward, ClientAnswer, ClientRequest, Forward, RootsChanged
from protomcp_host.protocol.session import Call, CancelCall, Event, Send, Session, ToolAnswer
from protomcp_sdk.wire import protomcp_pb2 as pb

if TYPE_CHECKING:
    from protomcp_host.app import Host

CLIENT_TIMEOUT = 300.0  # seconds a tool waits for the client (a person may have to answer)

Writer = Callable[[bytes, bytes | None], None]
"""Writes one message; the second argument is the id of the client request it relates to."""


class Router:
    def __init__(self, host: Host, session: Session, write: Writer) -> None:
        self.host = host
        self.session = session
        self.write = write
        self._idle = anyio.Event()
        self._idle.set()
        self.on_call_end: Callable[[], None] | None = None  # the transport takes held requests then
        self._events: dict[type, Callable[[Any], None]] = {
            Send: self._send,
            Call: self._start,
            CancelCall: self._cancel,
            Forward: self._forward,
            CancelForward: self._cancel_forward,
            ClientAnswer: self._client_answer,
            RootsChanged: lambda _: self.host.forwarding.roots_changed(),
        }
        self._asked: dict[Call, list[ClientRequest]] = {}  # a call's requests to the client

    def feed(self, line: bytes) -> None:
        """Handle one line from the client."""
        self.tick()
        for event in self.session.receive(line):
            self._events[type(event)](event)

    def carry_out(self, events: list[Event]) -> None:
        """Events the host produced for this session (e.g. after a tool-list change)."""
        for event in events:
            self._events[type(event)](event)

    def tick(self) -> None:
        """Tell the session the time: tasks past their ttl expire."""
        self.carry_out(self.session.advance(time.time()))

    def update_tools(self, **change: Any) -> None:
        """Apply a tool-list change to this session (see Session.update_tools)."""
        self.carry_out(self.session.update_tools(**change))

    def _send(self, event: Send) -> None:
        self.write(event.data, event.related)

    def _start(self, call: Call) -> None:
        call.sink = self
        if call.task is None and self._idle.is_set():  # a task's call does not hold a drain up
            self._idle = anyio.Event()
        self.host.dispatch(call)

    def _cancel(self, event: CancelCall) -> None:
        cancel_call(event.call)
        self._drop_asked(event.call, "the tool call was cancelled")
        self._check_idle()

    # -- resources/read, prompts/get, completion/complete (see forwarding.py) ---------------
    def _forward(self, forward: Forward) -> None:
        self.host.forwarding.forward(forward, self)

    def _cancel_forward(self, event: CancelForward) -> None:
        if event.forward.cancel is not None:
            event.forward.cancel()

    def forward_answered(self, forward: Forward, result: list[bytes]) -> None:
        self._emit(self.session.features.answered(forward, *result), forward.id)

    def forward_failed(self, forward: Forward, code: int, message: str, data: Any = None) -> None:
        self._emit(self.session.features.failed(forward, code, message, data), forward.id)

    # -- sampling, elicitation, roots: a tool asks the client during a call ------------------
    def call_request(
        self,
        call: Call,
        method: str,
        params: dict[str, Any],
        timeout: float | None,
        reply: Callable[[dict[str, Any] | None, str | None], None],
    ) -> None:
        """Send the request to this session's client; `reply` gets its answer exactly once
        (or an error: no capability, timeout, the call ended)."""
        features = self.session.features
        problem = features.missing_capability(method, params)
        if problem is not None:
            reply(None, problem)
            return
        asked = self._asked.setdefault(call, [])

        def answered(result: dict[str, Any] | None, error: str | None) -> None:
            if pending.timer is not None:
                pending.timer.cancel()
            if pending in asked:
                asked.remove(pending)
            reply(result, error)

        pending, data = features.request_client(method, params, call.id, answered)
        wait = timeout or CLIENT_TIMEOUT
        pending.timer = asyncio.get_running_loop().call_later(wait, self._client_timed_out, pending, wait)
        asked.append(pending)
        self.write(data, call.id)

    def _client_answer(self, event: ClientAnswer) -> None:
        event.request.on_answer(event.result, event.error)

    def _client_timed_out(self, pending: ClientRequest, wait: float) -> None:
        self._emit(self.session.features.drop_client_request(pending), pending.related)
        pending.on_answer(None, f"the client did not answer {pending.method} within {wait:g}s")

    def _drop_asked(self, call: Call, reason: str) -> None:
        """The call is over: its open client requests are cancelled and answered for the tool."""
        for pending in self._asked.pop(call, []):
            self._emit(self.session.features.drop_client_request(pending), pending.related)
            if pending.timer is not None:
                pending.timer.cancel()
            pending.on_answer(None, reason)

    # -- the calls' sink ---------------------------------------------------------------
    def call_answered(self, call: Call, answer: ToolAnswer, effects: pb.CallToolResponse | None) -> None:
        if effects is not None and (
            effects.enable_tools or effects.disable_tools
        ):  # ToolResult(enable_tools=..., ...)
            self.update_tools(enable=effects.enable_tools, disable=effects.disable_tools)
        self._drop_asked(call, "the tool call is over")
        if call.task is not None:
            self.carry_out(self.session.task_done(call, answer, time.time()))
        else:
            self._emit(self.session.call_done(call, answer), call.id)
        self._check_idle()

    def call_failed(self, call: Call, message: str) -> None:
        self._drop_asked(call, f"the tool call failed: {message}")
        message = f"Tool '{call.tool.name}' failed: {message}"
        if call.task is not None:
            self.carry_out(self.session.task_failed(call, message, time.time()))
        else:
            self._emit(self.session.call_failed(call, message), call.id)
        self._check_idle()

    def call_task_status(self, call: Call, status: str, message: str) -> None:
        self.carry_out(self.session.task_status(call, status, message, time.time()))

    def call_progress(self, call: Call, progress: float, total: float | None, message: str) -> None:
        self._emit(self.session.progress(call, progress, total, message), call.id)

    def call_log(self, call: Call, level: str, logger: str, data: Any) -> None:
        self._emit(self.session.log(level, logger, data, call.task), call.id)

    def _emit(self, data: bytes | None, related: bytes | None = None) -> None:
        if data is not None:
            self.write(data, related)

    # -- draining ----------------------------------------------------------------------
    def _check_idle(self) -> None:
        if not self.session.in_flight:
            self._idle.set()
        if self.on_call_end is not None:
            self.on_call_end()

    async def wait_idle(self) -> None:
        """Return once no call is running."""
        await self._idle.wait()

    def fail_all(self, message: str) -> None:
        """Answer every running call with an error (and tell its tool process to cancel it)."""
        for call in list(self.session.in_flight.values()):
            cancel_call(call)  # tell its tool process to stop it...
            self.call_failed(call, message)  # ...and answer it here

    def cancel_all(self) -> None:
        for call in list(self.session.in_flight.values()):
            cancel_call(call)
        for task in self.session.tasks.store.running():  # nobody is left to fetch their results
            if task.call is not None:
                cancel_call(task.call)
        self.session.in_flight.clear()
        for call in list(self._asked):
            self._drop_asked(call, "the client went away")
        for forward in list(self.session.features.forwarded.values()):
            if forward.cancel is not None:
                forward.cancel()
        self.session.features.forwarded.clear()
        self._idle.set()
