"""The tool process: imports a tool file and serves Envelope frames on dedicated pipes.

One asyncio loop: a reader feeds frames to handlers, each call runs as its own task
(sync functions in worker threads), and every outgoing frame goes through the single
pipe transport, which keeps frames whole and in order.
"""

from __future__ import annotations

import asyncio
import os
import runpy
import sys
import threading
import traceback
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from protomcp_sdk import __version__, wire
from protomcp_sdk import protomcp_pb2 as pb
from protomcp_sdk.context import Context
from protomcp_sdk.registry import REGISTRY, ArgumentError, ToolSpec
from protomcp_sdk.results import error_response, to_response

READ_CHUNK = 1 << 20
SYNC_WORKERS = 64


class ToolProcess:
    """Serves the tools in REGISTRY over a pair of pipe file descriptors."""

    def __init__(self, read_fd: int, write_fd: int, tool_file: str) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.tool_file = tool_file
        self.loop = asyncio.get_running_loop()
        self.decoder = wire.FrameDecoder()
        self.calls: dict[str, tuple[asyncio.Task[None], Context]] = {}
        self.transport: asyncio.WriteTransport | None = None
        self.loop_thread = threading.get_ident()

    # -- output --------------------------------------------------------------------
    def send(self, envelope: pb.Envelope) -> None:
        """Queue one frame; callable from the loop or from worker threads."""
        frame = wire.encode(envelope)
        if threading.get_ident() == self.loop_thread:
            self._write(frame)
        else:
            self.loop.call_soon_threadsafe(self._write, frame)

    def _write(self, frame: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(frame)

    # -- lifecycle -----------------------------------------------------------------
    async def serve(self, standby: bool) -> int:
        """Load the tool file (at once, or on the host's first frame when on standby), say
        Hello, then serve frames until the host closes our input."""
        self.transport, _ = await self.loop.connect_write_pipe(
            asyncio.Protocol, os.fdopen(self.write_fd, "wb", buffering=0)
        )
        reader = asyncio.StreamReader(limit=READ_CHUNK)
        await self.loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(self.read_fd, "rb", buffering=0)
        )
        frames = self._frames(reader)
        try:
            if standby and await anext(frames, None) is None:
                return 0  # the host stopped us before we were needed
            load_error = load_tool_file(self.tool_file)
            self.send(pb.Envelope(hello=self._hello(load_error)))
            if load_error:
                await self._flush()
                return 1
            async for envelope in frames:
                self.dispatch(envelope)
        except wire.FrameError as exc:
            print(f"protomcp tool process: bad frame from host: {exc}", file=sys.stderr)
            return 2
        # The host closed our input: it is stopping us. Let running calls finish.
        if self.calls:
            await asyncio.gather(*(task for task, _ in self.calls.values()), return_exceptions=True)
        await self._flush()
        return 0

    async def _frames(self, reader: asyncio.StreamReader) -> AsyncIterator[pb.Envelope]:
        while chunk := await reader.read(READ_CHUNK):
            for envelope in self.decoder.feed(chunk):
                yield envelope
        self.decoder.close()

    def _hello(self, load_error: str) -> pb.Hello:
        return pb.Hello(
            protocol_version=wire.PROTOCOL_VERSION,
            sdk_name="protomcp_sdk",
            sdk_version=__version__,
            tool_file=self.tool_file,
            pid=os.getpid(),
            python_version=sys.version.split()[0],
            error=load_error,
        )

    async def _flush(self) -> None:
        transport = self.transport
        if transport is None:
            return
        while transport.get_write_buffer_size() and not transport.is_closing():
            await asyncio.sleep(0.005)
        transport.close()

    # -- input ---------------------------------------------------------------------
    def dispatch(self, envelope: pb.Envelope) -> None:
        kind = envelope.WhichOneof("msg")
        if kind == "call_tool":
            self.start_call(envelope.request_id, envelope.call_tool)
        elif kind == "cancel":
            self.cancel_call(envelope.cancel.request_id)
        elif kind == "list_tools":
            tools = [spec.definition() for spec in REGISTRY.tools.values()]
            self.send(pb.Envelope(request_id=envelope.request_id, tool_list=pb.ToolListResponse(tools=tools)))
        else:
            print(f"protomcp tool process: ignoring unsupported frame {kind!r}", file=sys.stderr)

    def start_call(self, request_id: str, request: pb.CallToolRequest) -> None:
        spec = REGISTRY.tools.get(request.name)
        if spec is None:
            error = ArgumentError(f"Unknown tool: {request.name}")
            self.send(pb.Envelope(request_id=request_id, call_result=error_response(error, request.name)))
            return
        ctx = Context(request_id, request.progress_token, self.send, spec.name)
        task = self.loop.create_task(self.run_call(request_id, spec, request.arguments_json, ctx))
        self.calls[request_id] = (task, ctx)

    def cancel_call(self, request_id: str) -> None:
        entry = self.calls.get(request_id)
        if entry is not None:
            task, ctx = entry
            ctx._cancel()
            task.cancel()

    async def run_call(self, request_id: str, spec: ToolSpec, arguments_json: str, ctx: Context) -> None:
        try:
            arguments = orjson.loads(arguments_json) if arguments_json else {}
            if not isinstance(arguments, dict):
                raise ArgumentError(f"Arguments for tool '{spec.name}' must be a JSON object")
            kwargs = spec.convert(arguments)
            if spec.context_param:
                kwargs[spec.context_param] = ctx
            if spec.is_async:
                value: Any = await spec.fn(**kwargs)
            else:
                value = await self.loop.run_in_executor(None, _call_sync, spec.fn, kwargs)
            response = to_response(value, spec)
        except asyncio.CancelledError:
            return  # the host has already answered the client; nothing to send
        except Exception as exc:
            response = error_response(exc, spec.name)
        finally:
            self.calls.pop(request_id, None)
        self.send(pb.Envelope(request_id=request_id, call_result=response))


def _call_sync(fn: Any, kwargs: dict[str, Any]) -> Any:
    return fn(**kwargs)


def load_tool_file(path: str) -> str:
    """Import the user's tool file; return "" or the traceback text of the failure."""
    REGISTRY.clear()
    file = Path(path).resolve()
    sys.path.insert(0, str(file.parent))
    try:
        runpy.run_path(str(file), run_name="__protomcp_tools__")
    except BaseException as exc:  # SyntaxError, ImportError, SystemExit in a tool file...
        REGISTRY.clear()
        return _user_traceback(exc)
    return ""


def _user_traceback(exc: BaseException) -> str:
    """The traceback without the frames of runpy and this module."""
    report = traceback.TracebackException.from_exception(exc)
    report.stack = traceback.StackSummary.from_list(
        [frame for frame in report.stack if frame.filename != __file__ and "runpy" not in frame.filename]
    )
    return "".join(report.format())


USAGE = "usage: python -m protomcp_sdk [--standby] TOOL_FILE  (started by the protomcp host)"


def main(argv: list[str]) -> int:
    standby = argv[:1] == ["--standby"]  # imported the SDK; load the file when the host says so
    if standby:
        argv = argv[1:]
    if len(argv) != 1:
        print(USAGE, file=sys.stderr)
        return 2
    fds = os.environ.get(wire.FD_ENV, "")
    try:
        read_fd, write_fd = (int(part) for part in fds.split(","))
    except ValueError:
        print(
            f"protomcp tool process: {wire.FD_ENV} is not set; tool files are served by the host: "
            f"run `protomcp run {argv[0]}`",
            file=sys.stderr,
        )
        return 2
    for fd in (read_fd, write_fd):  # keep them out of processes the tools start
        os.set_inheritable(fd, False)
    tool_file = str(Path(argv[0]).resolve())

    async def run() -> int:
        asyncio.get_running_loop().set_default_executor(
            ThreadPoolExecutor(max_workers=SYNC_WORKERS, thread_name_prefix="protomcp-tool")
        )
        return await ToolProcess(read_fd, write_fd, tool_file).serve(standby)

    return asyncio.run(run())
