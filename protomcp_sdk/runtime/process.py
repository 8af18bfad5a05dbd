"""The tool process: imports a tool file and serves Envelope frames on dedicated pipes.

One asyncio loop dispatches frames. Async tools run as tasks; sync tools run start to
finish (argument conversion, the function, the result frame) in a call thread, so a slow
one never blocks another. ProcessRuntime is the façade over the collaborators that do the
work: the input (reading.py: the loop, or the call threads in turn), the output (writer.py:
whole frames under a lock, from whichever thread has one ready), the tool calls (calls.py),
the process's requests to the host (host_requests.py), resources, prompts and completions
(features.py) and middleware invocations for the host (middleware.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
import traceback
from pathlib import Path

from protomcp_sdk.authoring import resources
from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.runtime import client, liveness, logs, output, warmup
from protomcp_sdk.runtime.calls import ToolCalls
from protomcp_sdk.runtime.features import FeatureRequests
from protomcp_sdk.runtime.host_requests import HostRequests
from protomcp_sdk.runtime.lifespan import Running
from protomcp_sdk.runtime.loading import load_tool_file
from protomcp_sdk.runtime.middleware import MiddlewareRunner
from protomcp_sdk.runtime.reading import READER, READERS, InputReader, threads_should_read
from protomcp_sdk.runtime.threads import CallThreads
from protomcp_sdk.runtime.writer import FrameWriter
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire import framing as wire
from protomcp_sdk.wire import tracing
from protomcp_sdk.wire.env import ENVELOPE_CHOICES, ENVELOPE_ENV, EXIT_GRACE_ENV, FD_ENV, READER_ENV
from protomcp_sdk.wire.version import SDK_NAME, installed_version

EXIT_GRACE = float(os.environ.get(EXIT_GRACE_ENV, "") or 30.0)
"""Seconds running calls may take to finish once the host closed our input; then we exit anyway."""

ANSWERS = frozenset(
    (
        "active_tools",
        "register_middleware_response",
        "sampling_response",
        "elicit_response",
        "list_roots_response",
        "user_state_response",
    )
)
"""The frames that answer a request this process made of the host."""


class ProcessRuntime:
    """Serves the tools in REGISTRY over a pair of pipe file descriptors."""

    def __init__(self, read_fd: int, write_fd: int, tool_file: str, *, standby: bool) -> None:
        self.tool_file = tool_file
        self.standby = standby  # a standby process loads the file on the host's first frame
        self.loaded = False  # Hello sent: frames are dispatched
        self.early: list[pb.Envelope] | None = None  # frames that arrived while loading
        self.lifespan: Running | None = None
        self.loading: asyncio.Task[None] | None = None
        self.loop = asyncio.get_running_loop()
        self.loop_thread = threading.get_ident()
        self.exit_code: asyncio.Future[int] = self.loop.create_future()
        tracing.SERVICE = "protomcp-tools"  # the service.name of its spans (unless OTEL_* names one)
        self.call_threads = CallThreads()
        self.writer = FrameWriter(write_fd, self.loop, self.loop_thread)
        self.send = self.writer.send
        self.host = HostRequests(self.loop, self.loop_thread, self.send)
        self.calls = ToolCalls(self.loop, self.writer, self.host.ask, self.call_threads, self.exit_code)
        self.features = FeatureRequests(self.loop, self.writer, self.host.ask, self.call_threads)
        self.middleware = MiddlewareRunner(self.loop, self.send)
        self.reader = InputReader(
            read_fd,
            self.loop,
            self.call_threads,
            self.dispatch,
            self.calls.queue_sync,
            self.finish,
            self.exit_code,
        )

    # -- lifecycle -----------------------------------------------------------------
    async def serve(self) -> int:
        """Serve frames until the host closes our input; return the exit status."""
        await self.reader.connect()
        if not self.standby:
            self.begin_load()
        watchdog = liveness.Watchdog(self.loop, self.loop_thread, self.send)
        watchdog.start()
        try:
            code = await self.exit_code
        finally:
            self.reader.close()
            watchdog.stop()
        if not await self._calls_settled():
            code = code or 1
        if self.lifespan is not None:  # after the calls: they may still use what it opened
            await self.lifespan.stop()
        self.call_threads.close()
        self.writer.flush()  # answers queued behind another thread's write are written before we exit
        self.writer.spool.remove(everything=self.writer.broken)  # unread answer files stay for the host
        return code

    async def _calls_settled(self) -> bool:
        """Let running calls finish before exiting, within a bound: a stuck one must not keep
        the process alive once its host has let go of it. Cancelled calls are not waited for
        (nobody wants their answers; a thread that ignores cancellation may never end)."""
        settled = asyncio.Event()

        def check() -> None:
            if self.calls.settled():
                settled.set()

        self.calls.on_call_end = lambda: self.loop.call_soon_threadsafe(check)
        check()
        try:
            async with asyncio.timeout(EXIT_GRACE):
                await settled.wait()
        except TimeoutError:
            print(
                f"protomcp tool process: exiting with calls still running after {EXIT_GRACE:g}s "
                f"({', '.join(self.calls.running_tools())})",
                file=sys.stderr,
            )
            return False
        return True

    def begin_load(self) -> None:
        self.early = []
        self.loading = self.loop.create_task(self.load())

    async def load(self) -> None:
        """Import the file, start its lifespan, say Hello; then the frames that came meanwhile."""
        logs.install(self.writer.send_now)
        output.install(self.writer.send_now)
        resources.bind(self.send)
        load_error = load_tool_file(self.tool_file)
        if not load_error and REGISTRY.lifespan is not None:
            self.lifespan = Running(REGISTRY.lifespan)
            load_error = await self.lifespan.start()
            if load_error:
                self.lifespan = None
        self.send(pb.Envelope(hello=self._hello(load_error)))
        if load_error:
            self.finish(1)
            return
        for registration in self.middleware.registrations():
            self.host.ask(pb.Envelope(register_middleware=registration))
        self.loaded = True
        early, self.early = self.early or [], None
        for envelope in early:
            self.dispatch(envelope)
        if threads_should_read():
            self.reader.read_in_threads()

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
            declared_files=REGISTRY.declared_files(),
            warnings=[] if load_error else REGISTRY.warnings(Path(self.tool_file).name),
        )

    # -- frames --------------------------------------------------------------------
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
                self.calls.start(envelope.request_id, envelope.call_tool)
            elif kind == "cancel":
                self._cancel(envelope.cancel.request_id)
            elif kind == "list_tools":
                tools = [spec.definition() for spec in REGISTRY.tools.values()]
                self.send(
                    pb.Envelope(request_id=envelope.request_id, tool_list=pb.ToolListResponse(tools=tools))
                )
            elif kind == "heartbeat":
                self.send(
                    pb.Envelope(
                        request_id=envelope.request_id,
                        heartbeat_reply=liveness.reply(self.call_threads, self.calls.stuck),
                    )
                )
            elif kind in ANSWERS:
                self.host.answered(envelope)
            elif kind == "middleware_intercept":
                self.middleware.intercept(envelope)
            elif kind == "roots_changed":
                client.run_roots_hooks(self.loop, self.features.requests)
            elif kind in self.features.handlers:
                self.features.handlers[kind](envelope)
            else:
                print(f"protomcp tool process: ignoring unsupported frame {kind!r}", file=sys.stderr)
        except BaseException as exc:  # whatever a handler raised, its request still gets an answer
            self._handler_failed(kind, envelope, exc)

    def _cancel(self, request_id: str) -> None:
        self.calls.cancel(request_id)
        request = self.features.requests.get(request_id)  # a resource read, prompt or completion
        if request is not None:
            request.cancel()

    def _handler_failed(self, kind: str | None, envelope: pb.Envelope, exc: BaseException) -> None:
        print(
            f"protomcp tool process: handling a {kind!r} frame failed: {type(exc).__name__}: {exc}",
            file=sys.stderr,
            flush=True,
        )
        try:
            if kind == "call_tool":
                self.calls.failed(envelope.request_id, envelope.call_tool.name, exc)
            elif kind == "middleware_intercept":
                reason = f"{type(exc).__name__}: {exc}"
                self.middleware.reply(envelope.request_id, reject=True, failed=True, reject_reason=reason)
            else:
                self.features.fail(kind, envelope.request_id, f"{type(exc).__name__}: {exc}")
        except Exception:  # nothing more to be done; the host's timeout answers
            traceback.print_exc()


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
