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
from protomcp_host.calls.idle import IdleWatch
from protomcp_host.calls.list_changes import ListChanges
from protomcp_host.calls.metering import OneRequest, RequestMeter, wanted
from protomcp_host.calls.tracing import RequestSpans
from protomcp_host.processes.events import Reply
from protomcp_host.processes.output import LogLimiter
from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.events import Send
from protomcp_host.protocol.features import CancelForward, ClientAnswer, ClientRequest, Forward, RootsChanged
from protomcp_host.protocol.records import TaskCancel, TaskInput, TasksUnsettled
from protomcp_host.protocol.session import Call, CancelCall, Event, Session, ToolAnswer
from protomcp_host.protocol.tasks import Task
from protomcp_host.telemetry import audit, metrics
from protomcp_sdk.wire import tracing
from protomcp_sdk.wire.toollist import ToolListChange

CLIENT_TIMEOUT = 300.0  # seconds a tool waits for the client (a person may have to answer)

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
    def when_settled(self, then: Callable[[], None]) -> None: ...


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
        measured: bool = False,
    ) -> None:
        self.dispatcher = dispatcher
        self.forwarder = forwarder
        self.session = session
        self.write = write
        self.asking: ClientRequests = asking if asking is not None else DirectRequests()
        self.principal = principal  # 2026-07-28: whose connection it is (None: a session's own)
        self.tasks = tasks  # 2026-07-28: the host's tasks (calls/tasks.py)
        self._log_limit: LogLimiter | None = None  # made at the first log message
        self.idle = IdleWatch()  # for a drain: whether a call runs
        self.on_call_end: Callable[[], None] | None = None  # the transport takes held requests then
        self.list_changes = ListChanges()  # tool-list changes wait for one flush
        self.spans: RequestSpans | None = None  # OpenTelemetry: this session's request spans
        if tracing.ON:  # a span per request, from the line that brings it to the message that answers it
            self.spans = RequestSpans(lambda: self.session.version)
            self.write = self.spans.watching(write)
        self.meter: RequestMeter | None = None  # metrics, the audit log: this session's requests measured
        self.one: OneRequest | None = None  # 2026-07-28 over HTTP: its one request, measured (measure)
        if not measured and wanted():  # (measured: its transport measures its one request)
            self.meter = RequestMeter(session)
            self.write = self.meter.watching(self.write)

    # What carries out each kind of event: functions of the router (a table of bound methods
    # made per router would hold the router in reference cycles).
    _events: dict[type, Callable[[Any, Any], None]] = {}

    @property
    def log_limit(self) -> LogLimiter:
        """Per session: one noisy tool cannot flood it."""
        if self._log_limit is None:
            self._log_limit = LogLimiter("protomcp")
        return self._log_limit

    def measure(self, request: rpc.Request) -> OneRequest | None:
        """2026-07-28: its one request, measured by its endpoint (None: nothing measures)."""
        if not metrics.ON and audit.LOG is None:
            return None
        self.one = OneRequest(self.session, request)  # (a successful call is told here instead)
        return self.one

    def feed(self, line: bytes) -> None:
        """Handle one line from the client."""
        self._arrived(line)
        meter = self.meter
        if meter is None:
            self.carry_out(self.session.receive(line))
            return
        decoded = rpc.decode(line)
        if type(decoded) is rpc.Request:  # (RequestMeter.received's common case, inline)
            meter.open[decoded.id] = (decoded, time.perf_counter())
        else:
            meter.received(decoded)
        self.carry_out(self.session.receive_decoded(decoded))

    def feed_loaded(self, line: bytes, data: Any) -> None:
        """feed() of a line the transport has parsed already (`data`, orjson's)."""
        self._arrived(line)
        decoded = rpc.decode_loaded(line, data)
        if self.meter is not None:  # (a stdio modern connection's: HTTP's endpoint measures)
            self.meter.received(decoded)
        self.carry_out(self.session.receive_decoded(decoded))

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
        """A tool-list change for this session, and for whoever shares its tool list (applied
        by self.list_changes)."""
        self.asking.update_tools(self, change)

    def log(self, level: str, logger: str, data: Any, related: bytes | None = None) -> None:
        """A log message for this session's client (rate-limited per session)."""
        if self.log_limit.allow(
            lambda lv, lg, d: self._emit(self.session.log(lv, lg, d, None, related), related)
        ):
            self._emit(self.session.log(level, logger, data, None, related), related)

    def run(self, call: Call) -> None:
        """The call runs (its tool process is asked)."""
        if self.spans is not None:
            call.trace = self.spans.context_of(call.id)
        if call.task is None:  # a task's call does not hold a drain up
            self.idle.mark_busy()
        self.dispatcher.execute(call, self)

    def end_streams(self) -> None:
        """Shutdown: streams that only the server ends are ended (modern listen streams)."""
        self.asking.end_streams(self)

    # -- the executions' session side (calls.execution.CallSink) ---------------------------
    def call_answered(self, call: Call, answer: ToolAnswer) -> None:
        if self.list_changes.timer is not None:  # before the result, so a client refreshing at once sees it
            self.list_changes.flush(self)
        if call.task is not None:
            self.carry_out(self.session.task_events.done(call, answer, time.time()))
        else:
            data = self.session.call_done(call, answer)
            if data is not None:
                if not answer.is_error:  # (an error's kind is read from its bytes, as it is written)
                    if self.meter is not None:
                        self.meter.succeeded(call.id, call.tool.name)
                    elif self.one is not None:
                        self.one.succeeded(call.tool.name)
                self.write(data, call.id)
        self._check_idle()

    def call_failed(self, call: Call, message: str) -> None:
        if self.list_changes.timer is not None:
            self.list_changes.flush(self)
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

    def _emit(self, data: bytes | None, related: bytes | None = None) -> None:
        if data is not None:
            self.write(data, related)

    # -- draining ----------------------------------------------------------------------
    def _check_idle(self) -> None:
        if not self.session.in_flight and self.idle.busy:
            self.idle.now_idle()
        if self.on_call_end is not None:
            self.on_call_end()

    async def wait_idle(self) -> None:
        """Return once no call is running."""
        await self.idle.wait()

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
        if self.meter is not None:
            self.meter.close_all("cancelled")
        self.list_changes.cancel()  # nobody is left to tell
        self.idle.now_idle()
        self.asking.cancelled(self, None, "its request was cancelled (the client went away)")


# -- what carries out each kind of event (Router.carry_out) ------------------------------
def _send(router: Router, event: Send) -> None:
    router.write(event.data, event.related)


def _start(router: Router, call: Call) -> None:
    router.asking.start(router, call)


def _cancel(router: Router, event: CancelCall) -> None:
    if event.call.execution is not None:
        event.call.execution.cancel()
    router._check_idle()
    router.asking.cancelled(router, event.call.id, "its request was cancelled")


def _task_input(router: Router, event: TaskInput) -> None:
    assert router.tasks is not None  # (only a session whose host has tasks makes this event)
    router.tasks.answer(event.task, event.responses)


def _task_cancel(router: Router, event: TaskCancel) -> None:
    assert router.tasks is not None
    router.tasks.cancel(event.task)


def _tasks_unsettled(router: Router, event: TasksUnsettled) -> None:
    """The request is answered once the copies of other hosts' tasks are settled (bounded)."""

    def answer() -> None:
        answered = event.answer()
        router.carry_out(answered if isinstance(answered, list) else [answered])

    if router.tasks is None:  # (only a host whose tasks are shared makes this event)
        answer()
    else:
        router.tasks.when_settled(answer)


def _forward(router: Router, forward: Forward) -> None:
    """resources/read, prompts/get, completion/complete (see forwarding.py)."""
    router.asking.forward(router, forward)


def _cancel_forward(router: Router, event: CancelForward) -> None:
    if event.forward.cancel is not None:
        event.forward.cancel()
    router.asking.cancelled(router, event.forward.id, "its request was cancelled")


def _roots_changed(router: Router, _: RootsChanged) -> None:
    router.forwarder.roots_changed()


def _client_answer(_: Router, event: ClientAnswer) -> None:
    event.request.on_answer(event.result, event.error)


Router._events = {
    Send: _send,
    Call: _start,
    CancelCall: _cancel,
    Forward: _forward,
    CancelForward: _cancel_forward,
    ClientAnswer: _client_answer,
    RootsChanged: _roots_changed,
    TaskInput: _task_input,
    TaskCancel: _task_cancel,
    TasksUnsettled: _tasks_unsettled,
}


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
        router.list_changes.apply(router, change)  # the session's own tool list

    def end_streams(self, router: Router) -> None:
        """A stateful session has none."""
