"""Carries out one session's events: answers go to its writer, tool calls become executions
(calls.execution), forwarded requests go to the tool process that owns them, cancellations
reach what runs. It is the session side of its executions: their answers, progress, logs,
tool-list changes and requests for the client come back here, and only here.

Every write names the client request it belongs to (`related`), so a transport with
several streams (HTTP) can put it on the right one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Protocol

from protomcp_host.calls.execution import Dispatcher, Execution
from protomcp_host.calls.tracing import RequestSpans
from protomcp_host.processes.events import Reply
from protomcp_host.processes.output import LogLimiter
from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.events import Send
from protomcp_host.protocol.features import CancelForward, ClientAnswer, ClientRequest, Forward, RootsChanged
from protomcp_host.protocol.records import TaskCancel, TaskInput
from protomcp_host.protocol.session import Call, CancelCall, Event, Session, ToolAnswer
from protomcp_host.protocol.tasks import Task
from protomcp_sdk.wire import tracing
from protomcp_sdk.wire.toollist import ToolListChange

CLIENT_TIMEOUT = 300.0  # seconds a tool waits for the client (a person may have to answer)
LIST_CHANGED_DELAY = 0.02  # seconds tool-list changes gather before one list_changed (or a result)

Writer = Callable[[bytes, bytes | None], None]
"""Writes one message; the second argument is the id of the client request it relates to."""


class Forwarder(Protocol):
    """Where resources/read, prompts/get and completion/complete go (calls.forwarding)."""

    def forward(self, forward: Forward, router: Router) -> Any:
        """Returns what runs the request (its leg), or None."""

    def roots_changed(self) -> None: ...


class TaskRuns(Protocol):
    """The host's 2026-07-28 tasks, whose calls outlive the request that made them (calls.tasks)."""

    def start(self, call: Call, router: Router) -> None: ...
    def adopt(self, call: Call, execution: Execution, router: Router) -> None: ...
    def answer(self, task: Task, responses: dict[str, Any]) -> None: ...
    def cancel(self, task: Task) -> None: ...


class ClientRequests(Protocol):
    """How a router's requests start and how what they ask of the client reaches it: at once
    on the session's stream (DirectRequests, 2025-11-25), or gathered into input rounds that
    the client answers by retrying its request (calls.rounds.InputRounds, 2026-07-28). Each
    method is given the router: the strategy keeps no reference to it, so that a router made
    per request is freed by reference counting."""

    def start(self, router: Router, call: Call) -> None:
        """A call the session accepted starts (or goes on, for a retried request)."""

    def forward(self, router: Router, forward: Forward) -> None:
        """A read, a prompt or a completion goes to the tool process that owns it."""

    def ask(
        self,
        router: Router,
        owner: Any,
        method: str,
        params: dict[str, Any],
        timeout: float | None,
        reply: Reply,
        key: str,
    ) -> None:
        """`owner` (an Execution, or a forwarded request's leg) asks the client: `reply` gets
        the answer exactly once, or an error."""

    def released(self, router: Router, owner: Any, reason: str) -> None:
        """`owner` ended: what it still asks is answered for its tool process."""

    def cancelled(self, router: Router, request_id: bytes | None, reason: str) -> None:
        """The client cancelled a request (None: every request; the client went away)."""

    def update_tools(self, router: Router, change: ToolListChange) -> None:
        """A tool-list change for the router's session (and whoever shares its tool list)."""

    def end_streams(self, router: Router) -> None:
        """Shutdown: streams only the server ends are ended."""


class Router:
    def __init__(
        self,
        dispatcher: Dispatcher,
        forwarder: Forwarder,
        session: Session,
        write: Writer,
        asking: ClientRequests | None = None,
        *,
        principal: str | None = None,
        tasks: TaskRuns | None = None,
    ) -> None:
        self.dispatcher = dispatcher
        self.forwarder = forwarder
        self.session = session
        self.write = write
        self.asking: ClientRequests = asking if asking is not None else DirectRequests()
        self.principal = principal  # 2026-07-28: whose connection it is (None: a session's own)
        self.tasks = tasks  # 2026-07-28: the host's tasks (calls/tasks.py)
        self._log_limit: LogLimiter | None = None  # made at the first log message
        self._busy = False  # a call runs (or a request waits for its answer)
        self._idle: asyncio.Event | None = None  # made for wait_idle while busy; set once idle
        self.on_call_end: Callable[[], None] | None = None  # the transport takes held requests then
        self._flush_timer: asyncio.TimerHandle | None = None  # a flush_notifications is due
        self.spans: RequestSpans | None = None  # OpenTelemetry: this session's request spans
        if tracing.ON:
            self._trace(write)

    # What carries out each kind of event: a table of the class (a table of bound methods
    # made per router would hold the router in reference cycles).
    _events: dict[type, Callable[[Any, Any], None]] = {}

    @property
    def log_limit(self) -> LogLimiter:
        """Per session: one noisy tool cannot flood it."""
        if self._log_limit is None:
            self._log_limit = LogLimiter("protomcp")
        return self._log_limit

    def _trace(self, write: Writer) -> None:
        """A span per request, from the line that brings it to the message that answers it."""
        spans = self.spans = RequestSpans(lambda: self.session.version)

        def traced(data: bytes, related: bytes | None = None) -> None:
            spans.sent(data)
            write(data, related)

        self.write = traced

    def feed(self, line: bytes) -> None:
        """Handle one line from the client."""
        self._arrived(line)
        self.carry_out(self.session.receive(line))

    def feed_loaded(self, line: bytes, data: Any) -> None:
        """feed() of a line the transport has parsed already (`data`, orjson's)."""
        self._arrived(line)
        self.carry_out(self.session.receive_decoded(rpc.decode_loaded(line, data)))

    def _arrived(self, line: bytes) -> None:
        if self.spans is not None:
            self.spans.received(line)
        self.tick()

    def carry_out(self, events: list[Event]) -> None:
        """Carry out the session's events (from a line, or the host's, e.g. a tool-list change)."""
        table = self._events
        for event in events:
            table[type(event)](self, event)

    def tick(self) -> None:
        """Tell the session the time: tasks past their ttl expire."""
        self.carry_out(self.session.task_events.advance(time.time()))

    def update_tools(self, change: ToolListChange) -> None:
        """A tool-list change for this session, and for whoever shares its tool list."""
        self.asking.update_tools(self, change)

    def apply_tools(self, change: ToolListChange) -> None:
        """Apply a tool-list change to this session (see Session.update_tools). Changes gather:
        one list_changed, if the list changed, goes out LIST_CHANGED_DELAY later or before
        the next call result of this session, whichever comes first."""
        self.session.tool_list.update(change)
        self.flush_soon()

    def flush_soon(self) -> None:
        """A flush_notifications LIST_CHANGED_DELAY from now (unless one is due already)."""
        if self._flush_timer is None:
            loop = asyncio.get_running_loop()
            self._flush_timer = loop.call_later(LIST_CHANGED_DELAY, self.flush_notifications)

    def flush_notifications(self) -> None:
        """Send the one tools/list_changed the changes since the last flush call for, if any."""
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        if self.session.tool_list.pending:
            self.carry_out(self.session.tool_list.flush())

    def log(self, level: str, logger: str, data: Any, related: bytes | None = None) -> None:
        """A log message for this session's client (rate-limited per session)."""
        if self.log_limit.allow(
            lambda lv, lg, d: self._emit(self.session.log(lv, lg, d, None, related), related)
        ):
            self._emit(self.session.log(level, logger, data, None, related), related)

    def _send(self, event: Send) -> None:
        self.write(event.data, event.related)

    def _start(self, call: Call) -> None:
        self.asking.start(self, call)

    def run(self, call: Call) -> None:
        """The call runs (its tool process is asked)."""
        if self.spans is not None:
            call.trace = self.spans.context_of(call.id)
        if call.task is None:  # a task's call does not hold a drain up
            self._mark_busy()
        self.dispatcher.execute(call, self)

    def _mark_busy(self) -> None:
        """Something runs now: wait_idle waits for it."""
        self._busy = True

    def _now_idle(self) -> None:
        self._busy = False
        if self._idle is not None:
            self._idle.set()  # (the waiters wake)
            self._idle = None

    def _cancel(self, event: CancelCall) -> None:
        if event.call.execution is not None:
            event.call.execution.cancel()
        self._check_idle()
        self.asking.cancelled(self, event.call.id, "its request was cancelled")

    def _task_input(self, event: TaskInput) -> None:
        assert self.tasks is not None  # (only a session whose host has tasks makes this event)
        self.tasks.answer(event.task, event.responses)

    def _task_cancel(self, event: TaskCancel) -> None:
        assert self.tasks is not None
        self.tasks.cancel(event.task)

    # -- resources/read, prompts/get, completion/complete (see forwarding.py) ---------------
    def _forward(self, forward: Forward) -> None:
        self.asking.forward(self, forward)

    def _cancel_forward(self, event: CancelForward) -> None:
        if event.forward.cancel is not None:
            event.forward.cancel()
        self.asking.cancelled(self, event.forward.id, "its request was cancelled")

    def forward_request(
        self, leg: Any, method: str, params: dict[str, Any], timeout: float | None, reply: Reply, key: str
    ) -> None:
        """A resource or prompt function asks the client (only in input rounds can it)."""
        self.asking.ask(self, leg, method, params, timeout, reply, key)

    def end_streams(self) -> None:
        """Shutdown: streams that only the server ends are ended (modern listen streams)."""
        self.asking.end_streams(self)

    def forward_released(self, leg: Any) -> None:
        """A forwarded request ended (answered, failed, cancelled)."""
        self.asking.released(self, leg, "the request is over")

    def forward_answered(self, forward: Forward, result: list[bytes]) -> None:
        self._emit(self.session.features.answered(forward, *result), forward.id)

    def forward_failed(self, forward: Forward, code: int, message: str, data: Any = None) -> None:
        self._emit(self.session.features.failed(forward, code, message, data), forward.id)

    # -- the executions' session side (calls.execution.CallSink) ---------------------------
    def call_answered(self, call: Call, answer: ToolAnswer) -> None:
        if self._flush_timer is not None:  # before the result, so a client refreshing at once sees it
            self.flush_notifications()
        if call.task is not None:
            self.carry_out(self.session.task_events.done(call, answer, time.time()))
        else:
            self._emit(self.session.call_done(call, answer), call.id)
        self._check_idle()

    def call_failed(self, call: Call, message: str) -> None:
        if self._flush_timer is not None:
            self.flush_notifications()
        message = f"Tool '{call.tool.name}' failed: {message}"
        if call.task is not None:
            self.carry_out(self.session.task_events.failed(call, message, time.time()))
        else:
            self._emit(self.session.call_failed(call, message), call.id)
        self._check_idle()

    def call_task_status(self, call: Call, status: str, message: str) -> None:
        self.carry_out(self.session.task_events.status(call, status, message, time.time()))

    def call_progress(self, call: Call, progress: float, total: float | None, message: str) -> None:
        self._emit(self.session.progress(call, progress, total, message), call.id)

    def call_log(self, call: Call, level: str, logger: str, data: Any) -> None:
        if self.log_limit.allow(
            lambda lv, lg, d: self._emit(self.session.log(lv, lg, d, call.task, call.id), call.id)
        ):
            self._emit(self.session.log(level, logger, data, call.task, call.id), call.id)

    def call_control(self, change: ToolListChange | None) -> list[str]:
        """A running call changes this session's tool list (None: it only asks): the tools
        now active here."""
        if change is not None:
            self.update_tools(change)
        return self.session.tool_list.active()

    def call_request(
        self,
        execution: Execution,
        method: str,
        params: dict[str, Any],
        timeout: float | None,
        reply: Reply,
        key: str = "",
    ) -> None:
        """Sampling, elicitation, roots: `reply` gets the client's answer exactly once (or an
        error: no capability, timeout, the call ended)."""
        self.asking.ask(self, execution, method, params, timeout, reply, key)

    def call_released(self, execution: Execution, reason: str) -> None:
        """The execution ended: its open requests to the client are answered for the tool process."""
        self.asking.released(self, execution, reason)

    def _roots_changed(self, _: RootsChanged) -> None:
        self.forwarder.roots_changed()

    def _client_answer(self, event: ClientAnswer) -> None:
        event.request.on_answer(event.result, event.error)

    def _emit(self, data: bytes | None, related: bytes | None = None) -> None:
        if data is not None:
            self.write(data, related)

    # -- draining ----------------------------------------------------------------------
    def _check_idle(self) -> None:
        if not self.session.in_flight and self._busy:
            self._now_idle()
        if self.on_call_end is not None:
            self.on_call_end()

    async def wait_idle(self) -> None:
        """Return once no call is running."""
        if self._busy:
            if self._idle is None:
                self._idle = asyncio.Event()
            await self._idle.wait()

    def fail_all(self, message: str) -> None:
        """Answer every running call with an error (and tell its tool process to stop it)."""
        for call in list(self.session.in_flight.values()):
            if call.execution is not None:
                call.execution.fail(message)
            else:
                self.call_failed(call, message)

    def cancel_all(self) -> None:
        """The client went away: everything it started stops, unanswered."""
        calls = list(self.session.in_flight.values())
        calls += [task.call for task in self.session.tasks.running() if task.call is not None]
        self.session.in_flight.clear()
        for call in calls:
            if call.execution is not None:
                call.execution.cancel("the client went away")
        forwards = self.session.forwards()
        if forwards:
            for forward in list(forwards.values()):
                if forward.cancel is not None:
                    forward.cancel()
            forwards.clear()
        if self.spans is not None:
            self.spans.close_all("cancelled")
        if self._flush_timer is not None:  # nobody is left to tell
            self._flush_timer.cancel()
            self._flush_timer = None
        self._now_idle()
        self.asking.cancelled(self, None, "its request was cancelled (the client went away)")


def event_table(router: type[Router]) -> dict[type, Callable[[Any, Any], None]]:
    """What carries out each kind of event on a router of this class (its overrides)."""
    return {
        Send: router._send,
        Call: router._start,
        CancelCall: router._cancel,
        Forward: router._forward,
        CancelForward: router._cancel_forward,
        ClientAnswer: router._client_answer,
        RootsChanged: router._roots_changed,
        TaskInput: router._task_input,
        TaskCancel: router._task_cancel,
    }


Router._events = event_table(Router)


class DirectRequests:
    """2025-11-25: a call's request for the client goes out at once on the session's stream and
    its answer comes back as a response; a read or a prompt cannot ask."""

    __slots__ = ("asked",)

    def __init__(self) -> None:
        self.asked: dict[Any, list[ClientRequest]] = {}  # an execution's requests to the client

    def start(self, router: Router, call: Call) -> None:
        router.run(call)

    def forward(self, router: Router, forward: Forward) -> None:
        router.forwarder.forward(forward, router)

    def ask(
        self,
        router: Router,
        owner: Any,
        method: str,
        params: dict[str, Any],
        timeout: float | None,
        reply: Reply,
        key: str,
    ) -> None:
        if not isinstance(owner, Execution):
            reply(None, f"{method} can only be asked during a tool call")
            return
        client = router.session.features.client
        problem = client.missing_capability(method, params)
        if problem is not None:
            reply(None, problem)
            return
        asked = self.asked.setdefault(owner, [])

        def answered(result: dict[str, Any] | None, error: str | None) -> None:
            if pending.timer is not None:
                pending.timer.cancel()
            if pending in asked:
                asked.remove(pending)
            reply(result, error)

        related = owner.call.id
        pending, data = client.request_client(method, params, related, answered)
        wait = timeout or CLIENT_TIMEOUT
        loop = asyncio.get_running_loop()
        pending.timer = loop.call_later(wait, self._timed_out, router, pending, wait)
        asked.append(pending)
        router.write(data, related)

    def released(self, router: Router, owner: Any, reason: str) -> None:
        """Its open requests to the client are cancelled, and answered for the tool process so
        nothing there waits for them."""
        if not self.asked:  # (the common case: the call asked the client nothing)
            return
        for pending in list(self.asked.pop(owner, [])):  # on_answer removes from that list
            router._emit(router.session.features.client.drop_client_request(pending), pending.related)
            if pending.timer is not None:
                pending.timer.cancel()
            pending.on_answer(None, reason)

    def _timed_out(self, router: Router, pending: ClientRequest, wait: float) -> None:
        router._emit(router.session.features.client.drop_client_request(pending), pending.related)
        pending.on_answer(None, f"the client did not answer {pending.method} within {wait:g}s")

    def cancelled(self, router: Router, request_id: bytes | None, reason: str) -> None:
        """Nothing to add: a request's calls end with it."""

    def update_tools(self, router: Router, change: ToolListChange) -> None:
        router.apply_tools(change)  # the session's own tool list

    def end_streams(self, router: Router) -> None:
        """A stateful session has none."""
