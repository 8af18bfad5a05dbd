"""Tool calls in the tool process: started, run (async tools as tasks, sync ones in call
threads), cancelled and ended.

A call is over (on_call_end) only once its answer is handed to the writer: a process told to
exit waits for that, then flushes, so no finished call loses its answer.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import orjson

from protomcp_sdk.authoring.arguments import ArgumentError
from protomcp_sdk.authoring.encoding import Encoded, encode_error
from protomcp_sdk.authoring.middleware import MiddlewareSpec, ToolCall
from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.authoring.tools import ToolSpec
from protomcp_sdk.runtime import eager, logs
from protomcp_sdk.runtime.around_tool import AroundTool, before_tool
from protomcp_sdk.runtime.context import Ask, Context, mark_cancelled
from protomcp_sdk.runtime.outcomes import arguments_of, outcome_async, outcome_sync
from protomcp_sdk.runtime.threads import CallThreads
from protomcp_sdk.runtime.writer import FrameWriter
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire import framing as wire
from protomcp_sdk.wire import tracing
from protomcp_sdk.wire.env import CANCEL_GRACE_ENV

if TYPE_CHECKING:
    from opentelemetry.trace import Span

CANCEL_GRACE = float(os.environ.get(CANCEL_GRACE_ENV, "") or 10.0)
"""Seconds a cancelled (or timed-out) sync call may keep its thread before a warning names it."""


class ToolCalls:
    """The process's running tool calls, by request id."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        writer: FrameWriter,
        ask: Ask,
        call_threads: CallThreads,
        exit_code: asyncio.Future[int],
    ) -> None:
        self.loop = loop
        self.send = writer.send  # (bound once: what every call's Context holds)
        self.send_payload = writer.send_payload
        self.ask = ask
        self.call_threads = call_threads
        self.exit_code = exit_code  # set: the process is ending, no call starts
        self.base_context = contextvars.copy_context()  # what calls started by a thread copy
        self.tasks: dict[str, tuple[asyncio.Task[None], Context]] = {}
        self.threads: dict[str, Context] = {}
        self.spans: dict[str, Span] = {}  # tracing: the spans of calls still running
        self.stuck: dict[str, str] = {}  # request id -> tool: cancelled, thread not back after a grace period
        self.on_call_end: Callable[[], object] | None = None  # set while exiting: waits for running calls
        self.around = AroundTool(loop, call_threads)

    # -- starting ------------------------------------------------------------------
    def start(self, request_id: str, request: pb.CallToolRequest) -> None:
        """A call the loop read."""
        spec = REGISTRY.tools.get(request.name)
        if spec is None:
            error = ArgumentError(f"Unknown tool: {request.name}")
            self.send_result(request_id, *encode_error(error, request.name))
            return
        ctx, context = self._context(request_id, request, spec, contextvars.copy_context())
        if request.middleware:  # middleware of this process around its tool: all run here
            self._start_through_middleware(request_id, spec, request, ctx, context)
        else:
            arguments = arguments_of(request, spec)
            self._start_tool(request_id, spec, arguments, ctx, context, request.result_proto)

    def queue_sync(self, envelope: pb.Envelope) -> bool:
        """Queue a call the reading thread read, to a sync tool, for the threads; False leaves
        the frame to the loop (anything else, or whatever goes wrong here: dispatch answers it)."""
        request = envelope.call_tool
        spec = REGISTRY.tools.get(request.name)
        if spec is None or spec.is_async or request.middleware or self.exit_code.done():
            return False
        try:
            request_id = envelope.request_id
            ctx, context = self._context(request_id, request, spec, self.base_context.copy())
            self.threads[request_id] = ctx
            arguments = arguments_of(request, spec)
            self.call_threads.queue(
                spec.name, context.run, self.run_sync, request_id, spec, arguments, ctx, request.result_proto
            )
        except Exception:
            self.threads.pop(envelope.request_id, None)
            return False
        return True

    def _context(
        self, request_id: str, request: pb.CallToolRequest, spec: ToolSpec, context: contextvars.Context
    ) -> tuple[Context, contextvars.Context]:
        """The call's Context, and the contextvars it runs in (`context`, a fresh copy)."""
        ctx = Context(
            request_id,
            request.progress_token,
            self.send,
            spec.name,
            self.ask,
            request.task_id,
            request.auth_json,
            request.client_capabilities_json,
            request.input_answers_json,
        )
        context.run(logs.CURRENT_CALL.set, request_id)  # logging records made by the call carry its id
        if tracing.ON:
            self._trace(request_id, request, context)
        return ctx, context

    def _start_tool(
        self,
        request_id: str,
        spec: ToolSpec,
        arguments: str | bytes,
        ctx: Context,
        context: contextvars.Context,
        proto: bool = False,
    ) -> None:
        """`proto`: a result that is the tool's output message goes back serialized, without
        JSON (CallToolRequest.result_proto)."""
        if spec.is_async:
            coro = self._run_async(request_id, spec, arguments, ctx, proto)
            self._running(request_id, self.loop.create_task(coro, context=context), ctx)
        else:
            self.threads[request_id] = ctx
            self.call_threads.submit(
                spec.name, context.run, self.run_sync, request_id, spec, arguments, ctx, proto
            )

    def _start_through_middleware(
        self,
        request_id: str,
        spec: ToolSpec,
        request: pb.CallToolRequest,
        ctx: Context,
        context: contextvars.Context,
    ) -> None:
        segment = self.around.segment(tuple(request.middleware))
        if isinstance(segment, str):
            self.send_result(request_id, *encode_error(ArgumentError(segment), spec.name))
            return
        specs, before_only = segment
        owner = request.middleware_owner
        if not before_only:  # they see the result: the tool runs inside them
            coro = self._run_around(request_id, spec, request.arguments_json, ctx, specs, owner)
            self._running(request_id, self.loop.create_task(coro, context=context), ctx)
            return
        # Each passes the call on as its last step (see before_only): they run up to the tool,
        # then the tool runs as a call without middleware. Run by hand, not as a task, while
        # they await nothing that suspends (the common case: checks, rewrites, logging).
        call = ToolCall(spec.name, orjson.loads(request.arguments_json) if request.arguments_json else {})
        run = self._run_before_only(request_id, spec, ctx, context, specs, owner, call, request.result_proto)
        task = eager.start(self.loop, run, context)
        if task is not None:
            self._running(request_id, task, ctx)

    def _running(self, request_id: str, task: asyncio.Task[None], ctx: Context) -> None:
        """A call running as a task. Its coroutine ends the call (see _task_over), unless the
        task is cancelled before its first step (a cancel right behind the call, in the same
        read): then it never runs, and the call ends here."""
        self.tasks[request_id] = (task, ctx)

        def done(_: asyncio.Task[None]) -> None:
            entry = self.tasks.get(request_id)
            if entry is not None and entry[0] is task:
                self._task_over(request_id)

        task.add_done_callback(done)

    async def _run_before_only(
        self,
        request_id: str,
        spec: ToolSpec,
        ctx: Context,
        context: contextvars.Context,
        specs: list[MiddlewareSpec],
        owner: str,
        call: ToolCall,
        proto: bool = False,
    ) -> None:
        try:
            outcome = await before_tool(spec, specs, owner, call, ctx)
        except asyncio.CancelledError:  # cancelled by the host, or the process ends
            self._task_over(request_id)
            raise
        except BaseException as exc:  # (before_tool answers what the middleware raise)
            outcome = encode_error(exc, spec.name)
        self.tasks.pop(request_id, None)
        # (a copy: a call thread must not enter the context this runs in)
        self._after_middleware(request_id, spec, ctx, context.copy(), outcome, proto)

    def _after_middleware(
        self,
        request_id: str,
        spec: ToolSpec,
        ctx: Context,
        context: contextvars.Context,
        outcome: ToolCall | Encoded,
        proto: bool = False,
    ) -> None:
        """Before-only middleware passed the call on (run the tool: they never see its result),
        or answered it."""
        if isinstance(outcome, ToolCall):
            arguments = orjson.dumps(outcome.arguments).decode()
            self._start_tool(request_id, spec, arguments, ctx, context, proto)
            return
        self.send_result(request_id, *outcome)
        if self.on_call_end is not None:
            self.on_call_end()

    # -- tracing -------------------------------------------------------------------
    def _trace(self, request_id: str, request: pb.CallToolRequest, context: contextvars.Context) -> None:
        """The call's span, a child of the host's (through the Envelope's trace context); the
        tool's own spans nest under it."""
        attributes = {
            "mcp.method.name": "tools/call",
            "gen_ai.tool.name": request.name,
            "gen_ai.operation.name": "execute_tool",
        }
        span = tracing.start(
            f"tools/call {request.name}", request.trace_parent, request.trace_state, attributes, server=False
        )
        self.spans[request_id] = span
        context.run(tracing.attach, span)

    def _end_span(self, request_id: str, error: str) -> None:
        span = self.spans.pop(request_id, None)
        if span is not None:
            tracing.end(span, error)

    # -- cancelling ----------------------------------------------------------------
    def cancel(self, request_id: str) -> None:
        ctx = self.threads.get(request_id)
        if ctx is not None:
            mark_cancelled(ctx)  # a thread cannot be interrupted: the tool may check ctx.cancelled
            self.loop.call_later(CANCEL_GRACE, self._warn_if_running, request_id, ctx)
        entry = self.tasks.get(request_id)
        if entry is not None:
            mark_cancelled(entry[1])
            entry[0].cancel()

    def _warn_if_running(self, request_id: str, ctx: Context) -> None:
        if self.threads.get(request_id) is ctx:
            self.stuck[request_id] = ctx.tool_name
            print(
                f"protomcp: tool '{ctx.tool_name}' was cancelled {CANCEL_GRACE:g}s ago and its thread "
                "has not returned (it does not check ctx.cancelled, or is stuck in C code); "
                "the thread stays busy until it does",
                file=sys.stderr,
            )

    # -- running and ending ---------------------------------------------------------
    async def _run_async(
        self, request_id: str, spec: ToolSpec, arguments: str | bytes, ctx: Context, proto: bool = False
    ) -> None:
        await self._answer(request_id, outcome_async(spec, arguments, ctx, proto))

    async def _run_around(
        self,
        request_id: str,
        spec: ToolSpec,
        arguments_json: str,
        ctx: Context,
        specs: list[MiddlewareSpec],
        owner: str,
    ) -> None:
        """The call through the middleware of this process right around its tool."""
        await self._answer(request_id, self.around.through(spec, arguments_json, ctx, specs, owner))

    async def _answer(self, request_id: str, outcome: Awaitable[Encoded | None]) -> None:
        """Send what a call running as a task comes to (None: cancelled, by the host, which
        has answered, or by exiting); then the call is over."""
        try:
            encoded = await outcome
            if encoded is not None:
                self.send_result(request_id, *encoded)
        finally:
            self._task_over(request_id)

    def _task_over(self, request_id: str) -> None:
        self.tasks.pop(request_id, None)
        if self.spans:  # no answer was sent: cancelled
            self._end_span(request_id, "cancelled")
        if self.on_call_end is not None:
            self.on_call_end()

    def run_sync(
        self, request_id: str, spec: ToolSpec, arguments_json: str | bytes, ctx: Context, proto: bool = False
    ) -> None:
        """A call to a sync tool, start to finish, in a call thread."""
        try:
            encoded = outcome_sync(spec, arguments_json, ctx, proto)
            if not ctx.cancelled:
                self.send_result(request_id, *encoded)
        finally:
            self.threads.pop(request_id, None)
            self.stuck.pop(request_id, None)
            if self.spans:  # no answer was sent: cancelled
                self._end_span(request_id, "cancelled")
            if self.on_call_end is not None:
                self.on_call_end()

    def send_result(self, request_id: str, response: pb.CallToolResponse, content: bytes) -> None:
        """A call's answer (see FrameWriter.send_payload)."""
        if self.spans:
            self._end_span(request_id, "tool_error" if response.is_error else "")

        def answer(inline: str) -> pb.Envelope:
            response.result_json = inline  # before the Envelope copies the response
            return pb.Envelope(request_id=request_id, call_result=response)

        self.send_payload(request_id, content, wire.RAW_RESULT_JSON, answer)

    def failed(self, request_id: str, tool_name: str, exc: BaseException) -> None:
        """Starting the call raised: it is not running, and its answer is the error."""
        self.threads.pop(request_id, None)  # not running: nothing to wait for
        self.tasks.pop(request_id, None)
        self.send_result(request_id, *encode_error(exc, tool_name))

    def running_tools(self) -> list[str]:
        """The tools of the calls still running, by name."""
        return sorted(
            {ctx.tool_name for ctx in self.threads.values()} | {c.tool_name for _, c in self.tasks.values()}
        )

    def settled(self) -> bool:
        """No call is left to wait for (cancelled calls in threads are not waited for)."""
        return not self.tasks and all(ctx.cancelled for ctx in list(self.threads.values()))
