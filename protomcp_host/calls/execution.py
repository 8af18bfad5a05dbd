"""One tools/call from the session's request to its one answer: the `Execution`.

It owns everything the call starts — its timer, the requests it has tool processes work on
(the tool's own call, middleware phases), the requests it makes of the client, its progress
and log routing, its tool-list changes — and the session it belongs to. Every frame a tool
process sends for it arrives here (it is the channel's `Leg`), so nothing of it can reach
another session. It ends exactly once (answer, error, timeout, cancel, crash, reload), and
ending releases all of it.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import orjson

from protomcp_host.calls.deadlines import Deadlines
from protomcp_host.calls.envelope import tool_answer
from protomcp_host.calls.limits import RateLimits
from protomcp_host.calls.middleware import ChainRun, Middleware, segments
from protomcp_host.calls.staleness import with_note
from protomcp_host.processes.channel import Channel
from protomcp_host.processes.events import Leg, Refused, Reply
from protomcp_host.processes.output import TokenBucket
from protomcp_host.protocol.session import Call, ToolAnswer
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire.toollist import ToolListChange

_ids = itertools.count(1)

PROGRESS_BURST = 32  # progress notifications a call sends at once; then PROGRESS_RATE per second,
PROGRESS_RATE = 20.0  # the latest one kept and sent when its turn comes (a flood costs nothing)


class ToolSource(Protocol):
    """A tool file's serving process, as the calls layer sees it (a processes.Supervisor)."""

    def start(self, envelope: pb.Envelope, leg: Leg) -> None: ...
    def notify(self, envelope: pb.Envelope) -> None: ...
    def ready_channel(self) -> Channel | None: ...
    async def channel(self) -> Channel | None: ...


class CallSink(Protocol):
    """The session side of a call (the calls layer's Router): answers and what comes before them."""

    def call_answered(self, call: Call, answer: ToolAnswer) -> None: ...
    def call_failed(self, call: Call, message: str) -> None: ...
    def call_progress(self, call: Call, progress: float, total: float | None, message: str) -> None: ...
    def call_log(self, call: Call, level: str, logger: str, data: Any) -> None: ...
    def call_task_status(self, call: Call, status: str, message: str) -> None: ...
    def call_control(self, change: ToolListChange | None) -> list[str]: ...
    def call_request(
        self,
        execution: Execution,
        method: str,
        params: dict[str, Any],
        timeout: float | None,
        reply: Reply,
        key: str = "",
    ) -> None: ...
    def call_released(self, execution: Execution, reason: str) -> None: ...


class Dispatcher:
    """Starts executions: where each tool's file is served, the middleware chain, the timeout."""

    def __init__(self, processes: Mapping[str, ToolSource], call_timeout: float | None) -> None:
        self.processes = processes
        self.call_timeout = call_timeout
        self.middleware: list[Middleware] = []  # every file's, in chain order (see set_middleware)
        self._plans: dict[str, tuple[list[Middleware], Middleware | None]] = {}
        self.spawn: Callable[..., object] | None = None  # runs a task in the host's task group
        self.deadlines = Deadlines()  # every call's timeout, on one shared tick
        # dev: files whose last save failed to load (label -> note for their tools' answers)
        self.stale: dict[str, str] = {}
        self.limits: RateLimits | None = None  # rate limits (the tools that have one are checked)

    def set_middleware(self, chain: list[Middleware]) -> None:
        self.middleware[:] = chain
        self._plans.clear()

    def plan(self, owner: str) -> tuple[list[Middleware], Middleware | None]:
        """How a call to a tool of file `owner` goes through the middleware: the segments that
        other processes run (see middleware.segments), and the innermost one, when the tool's
        own process defines it (it runs it around the tool, in the same frame)."""
        plan = self._plans.get(owner)
        if plan is None:
            chain = segments(self.middleware)
            here = chain.pop() if chain and chain[-1].owner == owner and chain[-1].composes else None
            plan = self._plans[owner] = (chain, here)
        return plan

    def execute(self, call: Call, sink: CallSink) -> Execution:
        execution = Execution(self, call, sink)
        rate = call.tool.rate_limit  # (a tool without a limit pays this test alone)
        # (2026-07-28: a retry that brings a requestState continues a call its limit admitted:
        # the host issued that state to a running call, and checked it before this retry came)
        if rate is not None and self.limits is not None and (call.retry is None or call.retry.state is None):
            self.limits.admit(execution, rate, self.spawn)  # -> execution.start(), or a refusal
        else:
            execution.start()
        return execution


class Execution:
    __slots__ = (
        "_progress_timer",
        "_progress_waiting",
        "call",
        "chain",
        "dispatcher",
        "finished",
        "id",
        "legs",
        "progress_bucket",
        "sink",
        "timeout",
        "timer",
    )

    def __init__(self, dispatcher: Dispatcher, call: Call, sink: CallSink) -> None:
        self.id = next(_ids)
        self.dispatcher = dispatcher
        self.call = call
        self.sink = sink
        self.legs: dict[str, Channel] = {}  # requests it has tool processes work on, by request id
        self.timer: int | None = None  # its tick in dispatcher.deadlines
        self.timeout: float | None = None  # seconds (None: no limit)
        self.chain: ChainRun | None = None
        self.finished = False
        self.progress_bucket: TokenBucket | None = None  # made at the first progress
        self._progress_waiting: tuple[float, float | None, str] | None = None
        self._progress_timer: asyncio.TimerHandle | None = None
        call.execution = self

    def __str__(self) -> str:
        return f"tool '{self.call.tool.name}'"

    @property
    def serving(self) -> Mapping[str, ToolSource]:
        return self.dispatcher.processes

    def start(self) -> None:
        """The call runs: its timer starts, the middleware or the tool's process is asked."""
        timeout = self.timeout = self.call.tool.timeout or self.dispatcher.call_timeout
        if timeout:
            self.timer = self.dispatcher.deadlines.add(self.id, timeout, self._timed_out)
        if not self.dispatcher.middleware or self.dispatcher.spawn is None:
            self.run_tool(self.call.arguments, self)
            return
        outer, here = self.dispatcher.plan(self.call.tool.owner)
        if outer:
            self.chain = ChainRun(self, outer, here)
            self.chain.start()
        else:  # only middleware of the tool's own file: its process runs them, no round trip
            self.run_tool(self.call.arguments, self, here)

    def run_tool(
        self, arguments: dict[str, Any], leg: Leg, here: Middleware | None = None, arguments_json: str = ""
    ) -> None:
        """Send the tool's own call to the process serving its file, with the middleware that
        process runs around it (`here`); `arguments_json`: the arguments' JSON, when known."""
        call = self.call
        envelope = pb.Envelope()
        request = envelope.call_tool  # filled in place: no copy of a request made apart
        request.name = call.tool.name
        request.arguments_json = arguments_json or orjson.dumps(arguments).decode()
        if here is not None:
            request.middleware.extend(here.names)
            request.middleware_owner = here.owner
        if call.progress_token is not None:
            request.progress_token = str(call.progress_token)
        if call.task is not None:
            request.task_id = call.task.id
        if call.auth is not None:
            request.auth_json = orjson.dumps(call.auth).decode()
        if call.capabilities:
            request.client_capabilities_json = call.capabilities
        if call.answers:
            request.input_answers_json = call.answers
        if call.trace[0]:
            request.trace_parent, request.trace_state = call.trace
        if call.arguments_proto and arguments is call.arguments and here is None:  # middleware work on JSON
            request.arguments_proto = call.arguments_proto
        if call.result_proto and (
            self.chain is None or not self.chain.asked.entries
        ):  # none has a phase "after"
            request.result_proto = True  # (the tool's process knows whether its own middleware read it)
        self.dispatcher.processes[call.tool.owner].start(envelope, leg)

    # -- the channel's Leg (the tool's own call, without middleware) -------------------------
    @property
    def live(self) -> bool:
        return not self.finished

    @property
    def caller(self) -> dict[str, Any] | None:
        return self.call.auth

    def sent(self, channel: Channel, request_id: str) -> None:
        self.legs[request_id] = channel

    def answered(self, envelope: pb.Envelope, raw: list[bytes] | None, trusted: bool) -> None:
        self.legs.clear()  # it is its own leg only without middleware: the tool's call was its one leg
        response = envelope.call_result
        self.finish(tool_answer(response, raw, trusted), response)

    def failed(self, reason: str) -> None:
        self.fail(reason)

    def progress(self, note: pb.ProgressNotification) -> None:
        if self.finished:
            return
        progress = note.progress_value or float(note.progress)
        total = note.total_value or (float(note.total) if note.total else None)
        bucket = self.progress_bucket
        if bucket is None:
            bucket = self.progress_bucket = TokenBucket(PROGRESS_RATE, PROGRESS_BURST)
        if self._progress_timer is None and bucket.take():
            self.sink.call_progress(self.call, progress, total, note.message)
            return
        self._progress_waiting = (progress, total, note.message)  # only the latest counts
        if self._progress_timer is None:
            self._progress_timer = asyncio.get_running_loop().call_later(
                1 / PROGRESS_RATE, self._send_waiting_progress
            )

    def _send_waiting_progress(self) -> None:
        self._progress_timer = None
        waiting, self._progress_waiting = self._progress_waiting, None
        if waiting is not None and not self.finished:
            if self.progress_bucket is not None:
                self.progress_bucket.take()
            self.sink.call_progress(self.call, *waiting)

    def log(self, level: str, logger: str, data: Any) -> None:
        if not self.finished:
            self.sink.call_log(self.call, level, logger, data)

    def task_status(self, note: pb.TaskStatusResponse) -> None:
        if not self.finished and self.call.task is not None:
            message = note.message or (f"{note.progress}/{note.total}" if note.total else "")
            self.sink.call_task_status(self.call, note.state, message)

    def control(self, envelope: pb.Envelope) -> list[str]:
        if self.finished:
            raise Refused("the tool call is over: its session's tool list was not changed")
        return self.sink.call_control(ToolListChange.from_envelope(envelope))  # None: get_active_tools

    def ask_client(
        self, method: str, params: dict[str, Any], timeout: float | None, reply: Reply, key: str = ""
    ) -> None:
        if self.finished:
            reply(None, f"{method} can only be asked during a tool call that is still running")
        else:
            self.sink.call_request(self, method, params, timeout, reply, key)

    # -- endings: each happens once ---------------------------------------------------------
    def finish(self, answer: ToolAnswer, effects: pb.CallToolResponse | None) -> None:
        """The call's answer (the tool's, or what the middleware made of it)."""
        if self.finished:
            return
        self._end(cancel=False, reason="the tool call is over")
        change = ToolListChange.from_response(effects) if effects is not None else None
        if change is not None:  # ToolResult(enable_tools=..., disable_tools=...)
            self.sink.call_control(change)
        stale = self.dispatcher.stale
        if stale and self.call.tool.owner in stale:
            answer = with_note(answer, stale[self.call.tool.owner], self.call.tool.owner)
        self.sink.call_answered(self.call, answer)

    def fail(self, message: str) -> None:
        """An error answer; whatever still runs for the call is told to stop."""
        if self.finished:
            return
        self._end(cancel=True, reason=f"the tool call failed: {message}")
        stale = self.dispatcher.stale
        if stale and self.call.tool.owner in stale:
            message = f"{message}\n{stale[self.call.tool.owner]}"
        self.sink.call_failed(self.call, message)

    def cancel(self, reason: str = "the tool call was cancelled") -> None:
        """The client dropped the call: no answer; whatever still runs is told to stop."""
        if not self.finished:
            self._end(cancel=True, reason=reason)

    def _timed_out(self) -> None:
        self.timer = None
        timeout = self.timeout
        if self.chain is not None and self.chain.stage:
            self.fail(f"timed out after {timeout:g}s in {self.chain.stage}")
        else:
            self.fail(f"timed out after {timeout:g}s and was cancelled")

    def _end(self, *, cancel: bool, reason: str) -> None:
        self.finished = True
        if self.timer is not None:
            self.dispatcher.deadlines.remove(self.id, self.timer)
            self.timer = None
        if self._progress_timer is not None:
            self._progress_timer.cancel()
            self._progress_timer = None
            if self._progress_waiting is not None and not cancel:  # the last word before the answer
                self.sink.call_progress(self.call, *self._progress_waiting)
        legs, self.legs = self.legs, {}
        for request_id, channel in legs.items():
            channel.drop(request_id, cancel=cancel)
        chain = self.chain
        if chain is not None:
            self.chain = None  # break the Execution <-> ChainRun cycle too (see below)
            chain.release(reason)
        self.sink.call_released(self, reason)
        if self.call.execution is self:  # break the Call <-> Execution cycle: refcounting frees
            self.call.execution = None  # both at once, instead of the cyclic GC, once per call
