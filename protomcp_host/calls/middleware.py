"""Middleware across tool processes: runs one tools/call through every registered
middleware (lower priority outermost; ties by file, then name), each in its own tool
process, around the tool's own process.

Per middleware the host sends phase "before" (the call's name and arguments) and, once
the inner part answered, phase "after" (the CallToolResult); the middleware's coroutine
waits in ``call_next`` in between. A middleware registered ``before_only`` (it ends with
``return await call_next(call)``: authoring/middleware.before_only) gets phase "before"
alone. Rejections, failures and invalid rewritten arguments become an error result that
the outer middleware still see in their "after" phase. A
middleware that hangs past the call timeout or whose process dies fails the call with a
message naming it; every middleware still waiting is released when the call ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Protocol

import orjson

from protomcp_host.calls.envelope import tool_answer
from protomcp_host.processes.channel import Channel, new_request_id
from protomcp_host.processes.events import Leg, Reply
from protomcp_host.processes.loop import running_loop
from protomcp_host.protocol.session import Call, ToolAnswer
from protomcp_sdk.wire import envelope_pb2 as pb


@dataclass(frozen=True)
class Middleware:
    name: str
    priority: int
    owner: str  # the label of the tool file that defines it
    before_only: bool = False  # it has no phase "after" (its process said so at registration)
    composes: bool = False  # its process runs it with others of its file, or around its tools
    inner: tuple[str, ...] = ()  # the next ones of its file in the chain, run with it (segments)

    @property
    def order(self) -> tuple[int, str, str]:
        return (self.priority, self.owner, self.name)

    @cached_property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.inner)

    @cached_property
    def stage(self) -> str:
        """What runs while the call waits for it, for a timeout's message."""
        return f"middleware {', '.join(repr(name) for name in self.names)} ({self.owner})"

    def __str__(self) -> str:
        return f"middleware '{self.name}' ({self.owner})"


def segments(chain: list[Middleware]) -> list[Middleware]:
    """The chain with each run of one file's middleware next to each other as one: its
    process runs them together, so a call costs one frame per phase for the lot (when it
    composes its middleware: protomcp's SDK does; another may not)."""
    out: list[Middleware] = []
    for middleware in chain:
        last = out[-1] if out else None
        if last is not None and last.owner == middleware.owner and last.composes and middleware.composes:
            before_only = last.before_only and middleware.before_only
            out[-1] = replace(last, inner=(*last.inner, middleware.name), before_only=before_only)
        else:
            out.append(middleware)
    return out


class Abort(Exception):
    """The chain cannot go on (a middleware's process died or is not running)."""


class Serving(Protocol):
    def ready_channel(self) -> Channel | None: ...
    async def channel(self) -> Channel | None: ...


class Chained(Protocol):
    """What a chain run needs of the execution it serves (calls.execution.Execution)."""

    id: int
    call: Call
    finished: bool
    legs: dict[str, Channel]

    @property
    def serving(self) -> Mapping[str, Serving]: ...
    def run_tool(
        self, arguments: dict[str, Any], leg: Leg, here: Middleware | None = None, arguments_json: str = ""
    ) -> None: ...
    def finish(self, answer: ToolAnswer, effects: pb.CallToolResponse | None) -> None: ...
    def fail(self, message: str) -> None: ...
    def progress(self, note: pb.ProgressNotification) -> None: ...
    def log(self, level: str, logger: str, data: Any) -> None: ...
    def task_status(self, note: pb.TaskStatusResponse) -> None: ...
    def control(self, envelope: pb.Envelope) -> list[str]: ...
    def ask_client(
        self, method: str, params: dict[str, Any], timeout: float | None, reply: Reply, key: str = ""
    ) -> None: ...


Outcome = tuple[ToolAnswer, pb.CallToolResponse | None]


class AskedMiddleware:
    """The middleware one run has asked and not yet given its "after" phase (innermost last):
    in "before", or waiting in call_next. Their processes are held open until "after"
    reaches them, or until the call ends and each gets an error result as its "after"."""

    __slots__ = ("call_id", "entries")

    def __init__(self, call_id: str) -> None:
        self.call_id = call_id
        self.entries: list[tuple[Middleware, Channel]] = []

    def add(self, middleware: Middleware, channel: Channel) -> None:
        self.entries.append((middleware, channel))
        if not middleware.before_only:  # its process stays open until "after" reached it
            channel.hold(self._key(middleware))  # (its one request holds it open otherwise)

    def done_with(self, middleware: Middleware, channel: Channel) -> None:
        if not middleware.before_only:
            channel.release(self._key(middleware))

    def release(self, reason: str) -> None:
        """The call ended: each gets an error result as its "after" phase, so none waits
        forever (nobody waits for their replies)."""
        entries, self.entries = self.entries, []
        for middleware, channel in entries:
            request = pb.MiddlewareInterceptRequest(
                middleware_name=middleware.name,
                phase="after",
                method="tools/call",
                params_json=_result_json(_error(reason)),
            )
            channel.send(
                pb.Envelope(request_id=new_request_id(), call_id=self.call_id, middleware_intercept=request)
            )
            self.done_with(middleware, channel)

    def _key(self, middleware: Middleware) -> str:
        return f"{self.call_id}/{middleware.name}"


class ChainRun:
    """One call on its way through the middleware chain. Its execution owns it: ending the
    execution stops the run and releases every middleware that was asked (waiting in
    call_next, or still in its "before" phase).

    A state machine driven by the answers of the processes it asks, not a task: a task per
    call, its steps and the futures it waits on cost more than the round trip to a
    middleware's process. A task runs only while a middleware's process restarts and the run
    waits for it. The run has one request open at a time (a middleware phase, or the tool's
    own call), and is that request's channel `Leg` itself: the answer (or failure) goes to
    the step waiting for it, once; whatever the process sends meanwhile goes to the execution."""

    __slots__ = (
        "asked",
        "asking",
        "at",
        "call_id",
        "chain",
        "execution",
        "here",
        "over",
        "request_id",
        "then",
        "waiting",
    )

    def __init__(self, execution: Chained, chain: list[Middleware], here: Middleware | None = None) -> None:
        self.execution = execution
        self.chain = chain  # segments (see segments) in other processes than the tool's...
        self.here = here  # ...and the one the tool's process runs around it, if any
        self.call_id = f"m{execution.id}"  # names this call in the middleware's process, never reused
        self.at: Middleware | bool = False  # what runs now: a middleware, True for the tool (stage)
        self.asked = AskedMiddleware(self.call_id)  # in "before" or waiting in call_next
        self.waiting: asyncio.Task[None] | None = None  # for a restarting middleware process
        self.over = False
        self.request_id = ""  # the open request's
        self.then: Callable[..., None] | None = None  # the step its answer goes to
        self.asking: tuple[Any, ...] = ()  # a middleware phase: (middleware, channel, after, then, args)

    @property
    def stage(self) -> str:
        """What runs now, for a timeout message ("" before anything was asked)."""
        at = self.at
        if isinstance(at, Middleware):
            return at.stage
        if not at:
            return ""
        name = self.execution.call.tool.name
        return f"tool '{name}'" if self.here is None else f"tool '{name}' or its {self.here.stage}"

    def start(self) -> None:
        self._step(self._before, 0, self.execution.call.arguments, "")

    def _step(self, step: Callable[..., None], *args: Any) -> None:
        """Run one step; whatever goes wrong in it still ends the call, once."""
        if self.over or self.execution.finished:
            return
        try:
            step(*args)
        except Abort as exc:
            self._end_with(None, str(exc))
        except Exception as exc:  # a bug here must still answer the call, and not stop the host
            self._end_with(None, f"internal error in the middleware chain: {exc!r}")

    def _end_with(self, outcome: Outcome | None, problem: str) -> None:
        self.over = True
        if outcome is None:
            self.execution.fail(problem)  # (a no-op when the call ended already)
        else:
            self.execution.finish(*outcome)

    # -- the steps ---------------------------------------------------------------------
    def _before(self, index: int, arguments: dict[str, Any], arguments_json: str) -> None:
        """`arguments_json`: the arguments' JSON when known already ("": not yet)."""
        call = self.execution.call
        if index == len(self.chain):
            problem = call.tool.validate(arguments) if arguments is not call.arguments else None
            if problem:
                self._after((_error(problem), None))
            else:
                self._tool(arguments, arguments_json)
            return
        middleware = self.chain[index]
        if not arguments_json:
            arguments_json = orjson.dumps(arguments).decode()
        params = f'{{"name":{orjson.dumps(call.tool.name).decode()},"arguments":{arguments_json}}}'
        self._ask(middleware, "before", params, None, self._before_replied, index, arguments, arguments_json)

    def _before_replied(
        self,
        reply: pb.MiddlewareInterceptResponse,
        index: int,
        arguments: dict[str, Any],
        arguments_json: str,
    ) -> None:
        middleware = self.chain[index]
        if reply.reject or reply.result_json:
            self.asked.done_with(*self.asked.entries.pop())
            if reply.reject:
                self._after((_rejected(middleware, reply), None))
            else:  # it answered the call itself
                self._after((_answer_of(reply.result_json), None))
            return
        if reply.params_json:
            arguments = orjson.loads(reply.params_json).get("arguments") or {}
            arguments_json = ""
        if middleware.before_only:  # done with it: one round trip, no phase "after" (nothing held)
            self.asked.entries.pop()
        self._before(index + 1, arguments, arguments_json)

    def _tool(self, arguments: dict[str, Any], arguments_json: str) -> None:
        """Run the tool itself; its answer comes back here, not to the client."""
        self.at = True
        self.then = self._tool_answered
        self.execution.run_tool(arguments, self, self.here, arguments_json)

    def _tool_answered(
        self, envelope: pb.Envelope | None, failure: str, raw: list[bytes] | None, trusted: bool
    ) -> None:
        if envelope is None:
            name = self.execution.call.tool.name
            self._after((_error(f"Tool '{name}' failed: {failure}"), None))
        else:
            result = envelope.call_result
            self._after((tool_answer(result, raw, trusted), result))

    def _after(self, result: Outcome) -> None:
        """Phase "after" for the middleware still asked, innermost first; then the answer."""
        if not self.asked.entries:
            self._end_with(result, "")
            return
        middleware, channel = self.asked.entries.pop()
        params = _result_json(result[0])
        self._ask(middleware, "after", params, channel, self._after_replied, middleware, result)

    def _after_replied(
        self, reply: pb.MiddlewareInterceptResponse, middleware: Middleware, result: Outcome
    ) -> None:
        effects = result[1]
        if reply.reject:
            result = (_rejected(middleware, reply), effects)
        elif reply.params_json:
            result = (_answer_of(reply.params_json), effects)
        self._after(result)

    # -- asking a middleware's process ---------------------------------------------------
    def _ask(
        self,
        middleware: Middleware,
        phase: str,
        params_json: str,
        channel: Channel | None,
        then: Callable[..., None],
        *args: Any,
    ) -> None:
        """Send one phase to `middleware`'s process; `then(reply, *args)` runs on its answer."""
        self.at = middleware
        if channel is None:
            channel = self.execution.serving[middleware.owner].ready_channel()
            if channel is None:  # restarting, or not there: wait (bounded) in a task
                self.waiting = running_loop().create_task(
                    self._ask_when_ready(middleware, phase, params_json, then, *args)
                )
                return
            self.asked.add(middleware, channel)
        envelope = pb.Envelope(call_id=self.call_id)
        request = envelope.middleware_intercept  # filled in place: no copy of a request made apart
        request.middleware_name = middleware.name
        request.phase = phase
        request.method = "tools/call"
        request.params_json = params_json
        if middleware.inner:
            request.chain.extend(middleware.inner)
            request.owner = middleware.owner
        self.asking = (middleware, channel, phase == "after", then, args)
        self.then = self._reply
        channel.start(envelope, self)

    def _reply(
        self, envelope: pb.Envelope | None, failure: str, raw: list[bytes] | None, trusted: bool
    ) -> None:
        middleware, channel, after, then, args = self.asking
        self.asking = ()  # (it holds a bound method of this run: no cycle left behind)
        if after:
            self.asked.done_with(middleware, channel)
        if envelope is None:
            raise Abort(f"{middleware} failed: {failure}")
        then(envelope.middleware_intercept_response, *args)

    async def _ask_when_ready(
        self, middleware: Middleware, phase: str, params_json: str, then: Callable[..., None], *args: Any
    ) -> None:
        try:
            channel = await self.execution.serving[middleware.owner].channel()
        except Exception as exc:  # (the step below ends the call with it)
            failure: Exception | None = exc
            channel = None
        else:
            failure = None
        self.waiting = None

        def ask() -> None:
            if failure is not None:
                raise failure
            if channel is None:
                raise Abort(f"{middleware} is not available: its tool process is not running")
            self.asked.add(middleware, channel)
            self._ask(middleware, phase, params_json, channel, then, *args)

        self._step(ask)

    def release(self, reason: str) -> None:
        """The call ended: the run stops, and every middleware that was asked gets an error
        result as its "after" phase, so none waits forever (nobody waits for their replies)."""
        self.over = True
        self.then, self.asking = None, ()  # (bound methods of this run: no cycle left behind)
        if self.waiting is not None:
            self.waiting.cancel()
        self.asked.release(reason)

    # -- the channel's Leg of its open request -------------------------------------------
    def __str__(self) -> str:
        at = self.at
        return str(at) if isinstance(at, Middleware) else self.stage

    @property
    def live(self) -> bool:
        return not self.execution.finished

    @property
    def caller(self) -> dict[str, Any] | None:
        return self.execution.call.auth

    def sent(self, channel: Channel, request_id: str) -> None:
        self.request_id = request_id
        self.execution.legs[request_id] = channel

    def answered(self, envelope: pb.Envelope, raw: list[bytes] | None, trusted: bool) -> None:
        self.execution.legs.pop(self.request_id, None)  # (the channel has forgotten it already)
        then, self.then = self.then, None
        if then is not None:  # (its answer goes to one step, once)
            self._step(then, envelope, "", raw, trusted)

    def failed(self, reason: str) -> None:
        self.execution.legs.pop(self.request_id, None)
        then, self.then = self.then, None
        if then is not None:
            self._step(then, None, reason, None, False)

    def progress(self, note: pb.ProgressNotification) -> None:
        self.execution.progress(note)

    def log(self, level: str, logger: str, data: Any) -> None:
        self.execution.log(level, logger, data)

    def task_status(self, note: pb.TaskStatusResponse) -> None:
        self.execution.task_status(note)

    def control(self, envelope: pb.Envelope) -> list[str]:
        return self.execution.control(envelope)

    def ask_client(
        self, method: str, params: dict[str, Any], timeout: float | None, reply: Reply, key: str = ""
    ) -> None:
        self.execution.ask_client(method, params, timeout, reply, key)


def _error(message: str) -> ToolAnswer:
    return ToolAnswer([orjson.dumps([{"type": "text", "text": message}])], is_error=True, trusted=True)


def _rejected(middleware: Middleware, reply: pb.MiddlewareInterceptResponse) -> ToolAnswer:
    if reply.failed:
        return _error(f"{middleware.__str__().capitalize()} failed: {reply.reject_reason}")
    return _error(f"Rejected by {middleware}: {reply.reject_reason}")


def _result_json(answer: ToolAnswer) -> str:
    parts = [b'{"content":', *answer.content]
    if answer.structured:
        parts += [b',"structuredContent":', answer.structured]
    if answer.meta:
        parts += [b',"_meta":', answer.meta]
    parts.append(b',"isError":true}' if answer.is_error else b',"isError":false}')
    return b"".join(bytes(part) for part in parts).decode()


def _answer_of(result_json: str) -> ToolAnswer:
    """A CallToolResult a middleware wrote (checked again by the session before it is sent)."""
    try:
        result = orjson.loads(result_json)
        content = orjson.dumps(result.get("content", []))
        structured = result.get("structuredContent")
        meta = result.get("_meta")
    except (orjson.JSONDecodeError, AttributeError):
        return _error("a middleware returned a malformed result")
    return ToolAnswer(
        [content],
        orjson.dumps(structured) if structured is not None else b"",
        bool(result.get("isError")),
        meta=orjson.dumps(meta) if isinstance(meta, dict) and meta else b"",
    )
