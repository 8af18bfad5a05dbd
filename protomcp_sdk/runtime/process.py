"""The tool process: imports a tool file and serves Envelope frames on dedicated pipes.

One asyncio loop dispatches frames. Async tools run as tasks; sync tools run start to
finish (argument conversion, the function, the result frame) in a call thread, so a slow
one never blocks another. Frames are written whole under a lock, from whichever thread has
one ready.

Who reads the input depends on the file. The loop reads it while the file loads, and for
good when some tool is async or the file has middleware. When every tool is sync, the
call threads read it in turn instead (CallThreads.read_with): the thread whose read
brings a call runs it itself while the next thread takes over the reading, so a call costs
no hand-off to a sleeping thread; other frames go on to the loop, in order (which costs
them one). PROTOMCP_READER=threads|loop overrides the choice.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import inspect
import itertools
import os
import sys
import threading
import traceback
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, cast

import orjson

from protomcp_sdk.authoring import resources
from protomcp_sdk.authoring.encoding import (
    Encoded,
    encode_error,
    encode_result,
    mcp_result_json_of,
    tool_result_from_mcp,
)
from protomcp_sdk.authoring.middleware import CallNext, MiddlewareSpec, ToolCall
from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.authoring.results import ToolResult
from protomcp_sdk.authoring.schema import ArgumentError
from protomcp_sdk.authoring.tools import ToolSpec
from protomcp_sdk.runtime import client, eager, liveness, logs, output, warmup
from protomcp_sdk.runtime.context import Context
from protomcp_sdk.runtime.features import Features
from protomcp_sdk.runtime.lifespan import Running
from protomcp_sdk.runtime.loading import load_tool_file, report_failure
from protomcp_sdk.runtime.middleware import MiddlewareRunner, as_tool_result, compose, rejection, specs_of
from protomcp_sdk.runtime.spool import Spool
from protomcp_sdk.runtime.threads import CallThreads
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire import framing as wire
from protomcp_sdk.wire import readsize, tracing
from protomcp_sdk.wire.env import (
    CANCEL_GRACE_ENV,
    ENVELOPE_CHOICES,
    ENVELOPE_ENV,
    EXIT_GRACE_ENV,
    FD_ENV,
    READER_ENV,
)
from protomcp_sdk.wire.version import SDK_NAME, installed_version

if TYPE_CHECKING:
    from google.protobuf.message import Message
    from opentelemetry.trace import Span

CANCEL_GRACE = float(os.environ.get(CANCEL_GRACE_ENV, "") or 10.0)
"""Seconds a cancelled (or timed-out) sync call may keep its thread before a warning names it."""

READ_CEILING = 1 << 20  # bytes per read at most, reached only while a large frame streams in
EXIT_GRACE = float(os.environ.get(EXIT_GRACE_ENV, "") or 30.0)
"""Seconds running calls may take to finish once the host closed our input; then we exit anyway."""

READERS = ("auto", "threads", "loop")
READER = os.environ.get(READER_ENV, "") or "auto"
"""Who reads the input once the file is loaded (see the module's docstring)."""


class ProcessRuntime:
    """Serves the tools in REGISTRY over a pair of pipe file descriptors."""

    def __init__(self, read_fd: int, write_fd: int, tool_file: str, *, standby: bool) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.tool_file = tool_file
        self.standby = standby  # a standby process loads the file on the host's first frame
        self.loaded = False  # Hello sent: frames are dispatched
        self.early: list[pb.Envelope] | None = None  # frames that arrived while loading
        self.lifespan: Running | None = None
        self.loading: asyncio.Task[None] | None = None
        self.loop = asyncio.get_running_loop()
        self.loop_thread = threading.get_ident()
        self.decoder = wire.FrameDecoder()
        self.input: asyncio.ReadTransport | None = None  # the loop's (paused once threads read)
        self.threads_read = False
        self.read_size = readsize.SMALL  # the threads' next read, once they read the input
        self.base_context = contextvars.copy_context()  # what calls started by a thread copy
        self.tasks: dict[str, tuple[asyncio.Task[None], Context]] = {}
        self.threads: dict[str, Context] = {}
        self.spans: dict[str, Span] = {}  # tracing: the spans of calls still running
        tracing.SERVICE = "protomcp-tools"  # the service.name of its spans (unless OTEL_* names one)
        self.stuck: dict[str, str] = {}  # request id -> tool: cancelled, thread not back after a grace period
        self.on_call_end: Callable[[], object] | None = None  # set while exiting: waits for running calls
        # Async resource reads, prompts, completions (by request id: cancellable) and roots hooks.
        self.requests: dict[str, asyncio.Task[object]] = {}
        self.features = Features(self)
        self.call_threads = CallThreads()
        self.write_lock = threading.Lock()
        os.register_at_fork(after_in_child=self._forked)
        self.outbox: deque[list[bytes]] = deque()
        self._write_soon = False  # a write of the loop's queued frames is scheduled
        self.spool = Spool()
        self.asks: dict[str, asyncio.Future[pb.Envelope] | concurrent.futures.Future[pb.Envelope]] = {}
        self._ask_ids = itertools.count(1)
        self.middleware = MiddlewareRunner(self)
        self.segments: dict[tuple[str, ...], tuple[list[MiddlewareSpec], bool]] = {}  # by names
        self.broken = False
        self.exit_code: asyncio.Future[int] = self.loop.create_future()

    # -- output --------------------------------------------------------------------
    def send(self, envelope: pb.Envelope) -> None:
        """Write one frame, whole; callable from the loop and from call threads."""
        self._send([wire.encode(envelope)])

    def send_now(self, envelope: pb.Envelope) -> None:
        """Write one frame before returning (after any write under way): what a call prints or
        logs reaches the host even when the process dies right after (os._exit, a crash in C),
        where a frame left to another thread's write would be lost with it."""
        self.outbox.append([wire.encode(envelope)])
        self.flush()

    def _forked(self) -> None:
        """In a child the tool forked: another thread may have held the lock at the fork."""
        self.write_lock = threading.Lock()
        self.outbox.clear()

    def send_result(self, request_id: str, response: pb.CallToolResponse, content: bytes) -> None:
        """A call's answer (see send_payload)."""
        if self.spans:
            self._end_span(request_id, "tool_error" if response.is_error else "")

        def answer(inline: str) -> pb.Envelope:
            response.result_json = inline  # before the Envelope copies the response
            return pb.Envelope(request_id=request_id, call_result=response)

        self.send_payload(request_id, content, wire.RAW_RESULT_JSON, answer)

    def send_payload(
        self, request_id: str, content: bytes, content_type: str, answer: Callable[[str], pb.Envelope]
    ) -> None:
        """An answer carrying JSON `content`. Large content goes ahead of it outside the
        Envelope: as a spool file the host maps (no pipe crossing), or as raw bytes on the
        pipe; `answer("")` is then the frame that follows. Small content goes inside it."""
        if len(content) > wire.RAW_THRESHOLD:
            result = wire.encode(answer(""))
            path = self.spool.put(request_id, content)
            if path:
                self._send([wire.raw_header(request_id, len(content), content_type, path), result])
            else:
                self._send([*wire.encode_raw(request_id, content, content_type), result])
        else:
            self._send([wire.encode(answer(content.decode()))])

    def _send(self, pieces: list[bytes]) -> None:
        """Queue pieces that must stay together and write what is queued.

        Whoever holds the write lock also writes what others queued meanwhile, so no
        thread ever waits for the lock and busy periods need fewer system calls. Frames sent
        on the event loop (async tools, middleware, lists) leave together once per loop turn;
        a call thread writes at once, and takes along whatever the loop queued."""
        self.outbox.append(pieces)
        if threading.get_ident() == self.loop_thread:
            if not self._write_soon:
                self._write_soon = True
                self.loop.call_soon(self._write_queued)
            return
        self._write_queued()

    def _write_queued(self) -> None:
        self._write_soon = False
        while self.outbox and self.write_lock.acquire(blocking=False):
            try:
                small: list[bytes] = []
                while self.outbox:
                    for piece in self.outbox.popleft():
                        if len(piece) > wire.RAW_THRESHOLD:  # write big pieces as they are
                            self._write(b"".join(small))
                            small.clear()
                            self._write(piece)
                        else:
                            small.append(piece)
                self._write(small[0] if len(small) == 1 else b"".join(small))
            finally:
                self.write_lock.release()
            # Pieces queued after our last look are ours to write unless someone took the lock.

    def flush(self) -> None:
        """Write what is still queued, after any write under way in another thread."""
        with self.write_lock:
            while self.outbox:
                for piece in self.outbox.popleft():
                    self._write(piece)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view and not self.broken:
                view = view[os.write(self.write_fd, view) :]
        except OSError:  # the host is gone; the read side will see EOF and end us
            self.broken = True

    def ask(
        self, envelope: pb.Envelope
    ) -> asyncio.Future[pb.Envelope] | concurrent.futures.Future[pb.Envelope]:
        """Send a request to the host; the future completes with its answer frame. An asyncio
        future on the loop (async tools), a concurrent one from call threads (sync tools)."""
        envelope.request_id = request_id = f"p{next(self._ask_ids)}"  # p: asked by the process
        future: asyncio.Future[pb.Envelope] | concurrent.futures.Future[pb.Envelope]
        if threading.get_ident() == self.loop_thread:
            future = self.loop.create_future()
        else:
            future = concurrent.futures.Future()
        self.asks[request_id] = future
        self.send(envelope)
        return future

    def _answered(self, envelope: pb.Envelope) -> None:
        future = self.asks.pop(envelope.request_id, None)
        if future is not None and not future.done():
            future.set_result(envelope)

    # -- lifecycle -----------------------------------------------------------------
    async def serve(self) -> int:
        """Serve frames until the host closes our input; return the exit status."""
        transport, _ = await self.loop.connect_read_pipe(
            lambda: _Frames(self), os.fdopen(self.read_fd, "rb", buffering=0)
        )
        self.input = transport
        if not self.standby:
            self.begin_load()
        watchdog = liveness.Watchdog(self.loop, self.loop_thread, self.send)
        watchdog.start()
        try:
            code = await self.exit_code
        finally:
            if not self.threads_read:  # (a reading thread's fd stays open while it may read)
                transport.close()
            watchdog.stop()
        # Let running calls finish before exiting, within a bound: a stuck one must not keep
        # the process alive once its host has let go of it. Cancelled calls are not waited
        # for (nobody wants their answers; a thread that ignores cancellation may never end).
        settled = asyncio.Event()

        def check() -> None:
            if not self.tasks and all(ctx.cancelled for ctx in list(self.threads.values())):
                settled.set()

        self.on_call_end = lambda: self.loop.call_soon_threadsafe(check)
        check()
        try:
            async with asyncio.timeout(EXIT_GRACE):
                await settled.wait()
        except TimeoutError:
            running = sorted(
                {ctx.tool_name for ctx in self.threads.values()}
                | {ctx.tool_name for _, ctx in self.tasks.values()}
            )
            print(
                f"protomcp tool process: exiting with calls still running after {EXIT_GRACE:g}s "
                f"({', '.join(running)})",
                file=sys.stderr,
            )
            code = code or 1
        if self.lifespan is not None:  # after the calls: they may still use what it opened
            await self.lifespan.stop()
        self.call_threads.close()
        self.flush()  # answers queued behind another thread's write are written before we exit
        self.spool.remove(everything=self.broken)  # unread answer files stay for the host
        return code

    def begin_load(self) -> None:
        self.early = []
        self.loading = self.loop.create_task(self.load())

    async def load(self) -> None:
        """Import the file, start its lifespan, say Hello; then the frames that came meanwhile."""
        logs.install(self.send_now)
        output.install(self.send_now)
        resources.bind(self.send)
        load_error = load_tool_file(self.tool_file)
        if not load_error and REGISTRY.lifespan is not None:
            self.lifespan = Running(REGISTRY.lifespan)
            load_error = await self.lifespan.start()
            if load_error:
                self.lifespan = None
        for warning in [] if load_error else REGISTRY.warnings(Path(self.tool_file).name):
            print(f"warning: {warning}", file=sys.stderr)
        self.send(pb.Envelope(hello=self._hello(load_error)))
        if load_error:
            self.finish(1)
            return
        for registration in self.middleware.registrations():
            self.ask(pb.Envelope(register_middleware=registration))
        self.loaded = True
        early, self.early = self.early or [], None
        for envelope in early:
            self.dispatch(envelope)
        if _threads_read():
            self.read_in_threads()

    def read_in_threads(self) -> None:
        """Hand the input over to the call threads (see the module's docstring). asyncio
        delivers each read at once, so nothing is left behind in the paused transport; a
        frame cut in two stays in the decoder, which the threads go on feeding."""
        if self.input is None or self.threads_read or self.exit_code.done():
            return
        self.input.pause_reading()  # (kept: dropping the transport would close the fd)
        os.set_blocking(self.read_fd, True)  # a reading thread waits in read(), not in the loop
        self.threads_read = True
        self.call_threads.read_with(self._read_input)

    def _read_input(self) -> bool:
        """One read of the input, on the reading thread: its sync calls are queued for the
        threads, any other frame goes to the loop (in order). False once the input has ended."""
        try:
            data = os.read(self.read_fd, self.read_size)
        except OSError:
            data = b""
        if not data:
            self._to_loop(self.input_closed)
            return False
        self.read_size = readsize.next_size(self.read_size, len(data), READ_CEILING)
        forward: list[pb.Envelope] = []
        error: Exception | None = None
        try:
            for envelope in self._envelopes(data):
                if envelope.WhichOneof("msg") != "call_tool" or not self._queue_call(envelope):
                    forward.append(envelope)
        except Exception as exc:  # a bad frame (or a bug): the process ends, as the loop's reading would
            error = exc
        if forward and not self._to_loop(self._dispatch_all, forward):
            return False
        if error is not None:
            self._to_loop(self._bad_frame, error)
            return False
        return True

    def _to_loop(self, callback: Callable[..., None], *args: object) -> bool:
        """Run callback(*args) on the loop; False if the loop is closed (the process is ending)."""
        try:
            self.loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:
            return False
        return True

    def _queue_call(self, envelope: pb.Envelope) -> bool:
        """Queue a call to a sync tool for the threads; False leaves the frame to the loop
        (anything else, or whatever goes wrong here: dispatch answers it)."""
        request = envelope.call_tool
        spec = REGISTRY.tools.get(request.name)
        if spec is None or spec.is_async or request.middleware or self.exit_code.done():
            return False
        try:
            request_id = envelope.request_id
            ctx, context = self._call_context(request_id, request, spec, self.base_context.copy())
            self.threads[request_id] = ctx
            arguments = _arguments_of(request, spec)
            self.call_threads.queue(
                spec.name, context.run, self.run_sync, request_id, spec, arguments, ctx, request.result_proto
            )
        except Exception:
            self.threads.pop(envelope.request_id, None)
            return False
        return True

    def _dispatch_all(self, envelopes: list[pb.Envelope]) -> None:
        for envelope in envelopes:
            self.dispatch(envelope)

    def input_closed(self) -> None:
        try:
            self.decoder.close()
        except wire.FrameError as error:
            print(f"protomcp tool process: {error}", file=sys.stderr)
        self.finish(0)  # the host closed our input: it is stopping us

    def _bad_frame(self, exc: Exception) -> None:
        print(f"protomcp tool process: bad frame from host: {exc}", file=sys.stderr)
        self.finish(2)

    def finish(self, code: int) -> None:
        if not self.exit_code.done():
            self.exit_code.set_result(code)

    def _hello(self, load_error: str) -> pb.Hello:
        return pb.Hello(
            protocol_version=wire.PROTOCOL_VERSION,
            sdk_name=SDK_NAME,
            sdk_version=installed_version(),
            tool_file=self.tool_file,
            pid=os.getpid(),
            python_version=sys.version.split()[0],
            error=load_error,
            completions=bool(REGISTRY.completions),
        )

    # -- input ---------------------------------------------------------------------
    def _envelopes(self, data: bytes) -> Iterator[pb.Envelope]:
        """The Envelopes completed by `data`. Raw payloads travel to the host only."""
        for item in self.decoder.feed(data):
            if isinstance(item, wire.Raw):
                raise wire.FrameError("the host sent a raw payload: a tool process takes none")
            yield item

    def received(self, data: bytes) -> None:
        try:
            for envelope in self._envelopes(data):
                self.dispatch(envelope)
        except wire.FrameError as exc:
            self._bad_frame(exc)

    def dispatch(self, envelope: pb.Envelope) -> None:
        if self.exit_code.done():
            return
        if not self.loaded:
            if self.early is not None:
                self.early.append(envelope)  # loading (a lifespan starting): wait for Hello
            else:
                self.begin_load()  # the first frame to a standby process means "load now"
            return
        kind = envelope.WhichOneof("msg")
        try:
            if kind == "call_tool":
                self.start_call(envelope.request_id, envelope.call_tool)
            elif kind == "cancel":
                self.cancel_call(envelope.cancel.request_id)
            elif kind == "list_tools":
                tools = [spec.definition() for spec in REGISTRY.tools.values()]
                self.send(
                    pb.Envelope(request_id=envelope.request_id, tool_list=pb.ToolListResponse(tools=tools))
                )
            elif kind == "heartbeat":
                self.send(
                    pb.Envelope(
                        request_id=envelope.request_id,
                        heartbeat_reply=liveness.reply(self.call_threads, self.stuck),
                    )
                )
            elif kind in (
                "active_tools",
                "register_middleware_response",
                "sampling_response",
                "elicit_response",
                "list_roots_response",
            ):
                self._answered(envelope)
            elif kind == "middleware_intercept":
                self.middleware.intercept(envelope)
            elif kind == "roots_changed":
                client.run_roots_hooks(self.loop, self.requests)
            elif kind in self.features.handlers:
                self.features.handlers[kind](envelope)
            else:
                print(f"protomcp tool process: ignoring unsupported frame {kind!r}", file=sys.stderr)
        except BaseException as exc:  # whatever a handler raised, its request still gets an answer
            self._handler_failed(kind, envelope, exc)

    def _handler_failed(self, kind: str | None, envelope: pb.Envelope, exc: BaseException) -> None:
        print(
            f"protomcp tool process: handling a {kind!r} frame failed: {type(exc).__name__}: {exc}",
            file=sys.stderr,
            flush=True,
        )
        try:
            if kind == "call_tool":
                self.threads.pop(envelope.request_id, None)  # not running: nothing to wait for
                self.tasks.pop(envelope.request_id, None)
                self.send_result(envelope.request_id, *encode_error(exc, envelope.call_tool.name))
            elif kind == "middleware_intercept":
                reason = f"{type(exc).__name__}: {exc}"
                self.middleware.reply(envelope.request_id, reject=True, failed=True, reject_reason=reason)
            else:
                self.features.fail(kind, envelope.request_id, f"{type(exc).__name__}: {exc}")
        except Exception:  # nothing more to be done; the host's timeout answers
            traceback.print_exc()

    def start_call(self, request_id: str, request: pb.CallToolRequest) -> None:
        spec = REGISTRY.tools.get(request.name)
        if spec is None:
            error = ArgumentError(f"Unknown tool: {request.name}")
            self.send_result(request_id, *encode_error(error, request.name))
            return
        ctx, context = self._call_context(request_id, request, spec, contextvars.copy_context())
        if request.middleware:  # middleware of this process around its tool: all run here
            self._start_through_middleware(request_id, spec, request, ctx, context)
        else:
            arguments = _arguments_of(request, spec)
            self._start_tool(request_id, spec, arguments, ctx, context, request.result_proto)

    def _call_context(
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
            coro = self.run_async(request_id, spec, arguments, ctx, proto)
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
        names = tuple(request.middleware)
        known = self.segments.get(names)
        if known is None:  # (the same few segments come with every call: looked up once)
            specs = specs_of(list(names))
            if isinstance(specs, str):
                self.send_result(request_id, *encode_error(ArgumentError(specs), spec.name))
                return
            known = self.segments[names] = (specs, all(m.before_only for m in specs))
        specs, before_only = known
        if not before_only:  # they see the result: the tool runs inside them
            coro = self.run_chained(
                request_id, spec, request.arguments_json, ctx, specs, request.middleware_owner
            )
            self._running(request_id, self.loop.create_task(coro, context=context), ctx)
            return
        # Each passes the call on as its last step (see before_only): they run up to the tool,
        # then the tool runs as a call without middleware. Run by hand, not as a task, while
        # they await nothing that suspends (the common case: checks, rewrites, logging).
        call = ToolCall(spec.name, orjson.loads(request.arguments_json) if request.arguments_json else {})
        run = self.run_before_only(
            request_id, spec, ctx, context, specs, request.middleware_owner, call, request.result_proto
        )
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

    async def run_before_only(
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
            outcome = await _before_tool(spec, specs, owner, call, ctx)
        except asyncio.CancelledError:  # cancelled by the host, or the process ends
            self._task_over(request_id)
            raise
        except BaseException as exc:  # (_before_tool answers what the middleware raise)
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

    def cancel_call(self, request_id: str) -> None:
        ctx = self.threads.get(request_id)
        if ctx is not None:
            ctx._cancel()  # a thread cannot be interrupted: the tool may check ctx.cancelled
            self.loop.call_later(CANCEL_GRACE, self._warn_if_running, request_id, ctx)
        entry = self.tasks.get(request_id)
        if entry is not None:
            entry[1]._cancel()
            entry[0].cancel()
        request = self.requests.get(request_id)  # a resource read, prompt or completion
        if request is not None:
            request.cancel()

    def _warn_if_running(self, request_id: str, ctx: Context) -> None:
        if self.threads.get(request_id) is ctx:
            self.stuck[request_id] = ctx.tool_name
            print(
                f"protomcp: tool '{ctx.tool_name}' was cancelled {CANCEL_GRACE:g}s ago and its thread "
                "has not returned (it does not check ctx.cancelled, or is stuck in C code); "
                "the thread stays busy until it does",
                file=sys.stderr,
            )

    # A call is over (on_call_end) only once its answer is handed to the writer: a process told
    # to exit waits for that, then flushes, so no finished call loses its answer.
    async def run_async(
        self, request_id: str, spec: ToolSpec, arguments: str | bytes, ctx: Context, proto: bool = False
    ) -> None:
        await self._answer(request_id, _outcome_async(spec, arguments, ctx, proto))

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
        try:
            encoded = _outcome_sync(spec, arguments_json, ctx, proto)
            if not ctx.cancelled:
                self.send_result(request_id, *encoded)
        finally:
            self.threads.pop(request_id, None)
            self.stuck.pop(request_id, None)
            if self.spans:  # no answer was sent: cancelled
                self._end_span(request_id, "cancelled")
            if self.on_call_end is not None:
                self.on_call_end()

    async def run_chained(
        self,
        request_id: str,
        spec: ToolSpec,
        arguments_json: str,
        ctx: Context,
        specs: list[MiddlewareSpec],
        owner: str,
    ) -> None:
        """The call through the middleware of this process right around its tool (named by the
        host), all here: the tool's answer goes back unchanged unless a middleware replaced it."""
        await self._answer(request_id, self._through_middleware(spec, arguments_json, ctx, specs, owner))

    async def _through_middleware(
        self, spec: ToolSpec, arguments_json: str, ctx: Context, specs: list[MiddlewareSpec], owner: str
    ) -> Encoded | None:
        outcome: list[Encoded | None] = []  # the tool's own answer
        seen: list[ToolResult] = []  # ...as the middleware saw it

        async def tool(call: ToolCall) -> ToolResult:
            changed = orjson.dumps(call.arguments).decode()
            encoded = await self._run_tool_here(spec, changed, ctx)
            outcome.append(encoded)
            if encoded is None:  # cancelled: the host has answered
                raise asyncio.CancelledError
            seen.append(tool_result_from_mcp(orjson.loads(mcp_result_json_of(*encoded))))
            return seen[0]

        call = ToolCall(spec.name, orjson.loads(arguments_json) if arguments_json else {})
        try:
            result = await _through(specs, owner, tool, call, ctx)
        except asyncio.CancelledError:
            return None
        if seen and result is seen[0]:
            return outcome[0]
        response, content = encode_result(result, spec)
        own = outcome[0] if outcome else None
        del response.enable_tools[:], response.disable_tools[:]  # the tool's changes stand, no other
        if own is not None:
            response.enable_tools.extend(own[0].enable_tools)
            response.disable_tools.extend(own[0].disable_tools)
        return response, content

    async def _run_tool_here(self, spec: ToolSpec, arguments_json: str, ctx: Context) -> Encoded | None:
        """Run the tool as a call without middleware would (a sync one in a call thread)."""
        if spec.is_async:
            return await _outcome_async(spec, arguments_json, ctx)
        done: asyncio.Future[Encoded] = self.loop.create_future()

        def run() -> None:
            encoded = _outcome_sync(spec, arguments_json, ctx)
            self.loop.call_soon_threadsafe(_settle, done, encoded)

        self.call_threads.submit(spec.name, contextvars.copy_context().run, run)
        return await done


class _Frames(asyncio.Protocol):
    transport: readsize.ResizableRead  # set by connection_made, before any data

    def __init__(self, process: ProcessRuntime) -> None:
        self.process = process

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(readsize.ResizableRead, transport)  # a read pipe (connect_read_pipe)
        self.transport.max_size = readsize.SMALL

    def data_received(self, data: bytes) -> None:
        readsize.adapt(self.transport, len(data), READ_CEILING)
        self.process.received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.process.input_closed()


async def _outcome_async(
    spec: ToolSpec, arguments: str | bytes, ctx: Context, proto: bool = False
) -> Encoded | None:
    """An async tool's answer; None when the call was cancelled from outside."""
    try:
        return encode_result(await spec.fn(**_arguments(spec, arguments, ctx)), spec, proto=proto)
    except asyncio.CancelledError as exc:
        if _cancelled_from_outside(ctx):
            return None
        report_failure(exc, ctx)
        return encode_error(exc, spec.name)  # the tool's own code raised it
    except BaseException as exc:  # SystemExit, KeyboardInterrupt...: still one answer
        report_failure(exc, ctx)
        return encode_error(exc, spec.name)


def _outcome_sync(spec: ToolSpec, arguments: str | bytes, ctx: Context, proto: bool = False) -> Encoded:
    try:
        return encode_result(spec.fn(**_arguments(spec, arguments, ctx)), spec, proto=proto)
    except BaseException as exc:  # SystemExit, KeyboardInterrupt...: still one answer
        report_failure(exc, ctx)
        return encode_error(exc, spec.name)


def _cancelled_from_outside(ctx: Context) -> bool:
    """A CancelledError came from the host cancelling the call (which has answered it) or from
    the process ending, not from the tool's (or a middleware's) own code."""
    task = asyncio.current_task()
    return ctx.cancelled or (task is not None and task.cancelling() > 0)


async def _through(
    specs: list[MiddlewareSpec], owner: str, innermost: CallNext, call: ToolCall, ctx: Context
) -> ToolResult:
    """The call through middleware of this process around `innermost`: their result, or the
    error result that names the outermost when it raised. A cancel from outside propagates."""
    try:
        return as_tool_result(await compose(specs, owner, innermost)(call), specs[0].name)
    except asyncio.CancelledError as exc:
        if _cancelled_from_outside(ctx):
            raise
        return rejection(specs[0], owner, exc)
    except BaseException as exc:  # still one answer; the message names the middleware
        return rejection(specs[0], owner, exc)


async def _before_tool(
    spec: ToolSpec, specs: list[MiddlewareSpec], owner: str, call: ToolCall, ctx: Context
) -> ToolCall | Encoded:
    """Before-only middleware up to the tool: the call they pass on, or their answer."""
    passed_on: list[ToolCall] = []
    mark = ToolResult()

    async def tool(call: ToolCall) -> ToolResult:
        passed_on.append(call)
        return mark

    result = await _through(specs, owner, tool, call, ctx)
    return passed_on[0] if result is mark else encode_result(result, spec)


def _settle(future: asyncio.Future[Encoded], encoded: Encoded) -> None:
    if not future.done():  # (cancelled meanwhile: nobody waits)
        future.set_result(encoded)


def _threads_read() -> bool:
    """Whether the call threads read the input of the file just loaded."""
    if READER != "auto":
        return READER == "threads"
    tools = REGISTRY.tools.values()
    return bool(tools) and not REGISTRY.middleware and not any(spec.is_async for spec in tools)


def _arguments_of(request: pb.CallToolRequest, spec: ToolSpec) -> str | bytes:
    if request.arguments_proto and spec.message is not None:
        return request.arguments_proto  # a typed tool's message, from a proto-mcp client
    return request.arguments_json


def _arguments(spec: ToolSpec, arguments_json: str | bytes, ctx: Context) -> dict[str, object]:
    if isinstance(arguments_json, bytes):  # a typed tool's message as it came: no JSON at all
        kwargs: dict[str, object] = {_the_parameter(spec): _parse(spec, arguments_json)}
    else:
        arguments = orjson.loads(arguments_json) if arguments_json else {}
        if not isinstance(arguments, dict):
            raise ArgumentError(f"Arguments for tool '{spec.name}' must be a JSON object")
        kwargs = spec.convert(arguments)
    if spec.context_param:
        kwargs[spec.context_param] = ctx
    return kwargs


def _the_parameter(spec: ToolSpec) -> str:
    [name] = [p for p in inspect.signature(spec.fn).parameters if p != spec.context_param]
    return name


def _parse(spec: ToolSpec, data: bytes) -> Message:
    from google.protobuf.message import DecodeError

    message = spec.message
    assert message is not None  # bytes come for a typed tool only (_arguments_of)
    try:
        return message.FromString(data)
    except DecodeError as exc:
        raise ArgumentError(
            f"Invalid arguments for tool '{spec.name}': not a {message.DESCRIPTOR.full_name} ({exc})"
        ) from None


def _let_go_of_frames(*fds: int) -> None:
    """In a child the tool forked (os.fork, multiprocessing): point the frame fds at the null
    device, so the child does not keep the host's pipe open after this process is gone (the
    numbers stay valid for whatever Python objects still hold them)."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
    except OSError:
        return
    for fd in fds:
        with contextlib.suppress(OSError):
            os.dup2(null, fd, inheritable=False)
    os.close(null)


USAGE = "usage: python -m protomcp_sdk [--standby] TOOL_FILE  (started by the protomcp host)"


def main(argv: list[str]) -> int:
    if argv[:1] == ["--inspect"]:  # `protomcp inspect`: report what the file defines, serve nothing
        from protomcp_sdk.runtime.inspection import main as inspect

        return inspect(argv[1:])
    standby = argv[:1] == ["--standby"]  # imported the SDK; load the file when the host says so
    if standby:
        argv = argv[1:]
    if len(argv) != 1:
        print(USAGE, file=sys.stderr)
        return 2
    if READER not in READERS:
        choices = ", ".join(READERS)
        print(
            f"protomcp tool process: {READER_ENV} must be one of {choices}, not {READER!r}", file=sys.stderr
        )
        return 2
    envelope = os.environ.get(ENVELOPE_ENV, "") or "upb"
    if envelope not in ENVELOPE_CHOICES:
        choices = ", ".join(ENVELOPE_CHOICES)
        print(
            f"protomcp tool process: {ENVELOPE_ENV} must be one of {choices}, not {envelope!r}",
            file=sys.stderr,
        )
        return 2
    fds = os.environ.get(FD_ENV, "")
    try:
        read_fd, write_fd = (int(part) for part in fds.split(","))
    except ValueError:
        print(
            f"protomcp tool process: {FD_ENV} is not set; tool files are served by the host: "
            f"run `protomcp run {argv[0]}`",
            file=sys.stderr,
        )
        return 2
    for fd in (read_fd, write_fd):  # keep them out of processes the tools start
        os.set_inheritable(fd, False)
    os.register_at_fork(after_in_child=lambda: _let_go_of_frames(read_fd, write_fd))
    tool_file = str(Path(argv[0]).resolve())
    if standby:  # idle until the next save: import what loading the file will need
        warmup.warm(tool_file)

    async def run() -> int:
        return await ProcessRuntime(read_fd, write_fd, tool_file, standby=standby).serve()

    return asyncio.run(run())
