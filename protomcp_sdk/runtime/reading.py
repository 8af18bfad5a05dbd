"""The tool process's input: frames from the host's pipe, read by the loop or by call threads.

The loop reads it while the file loads, and for good when some tool is async or the file has
middleware. When every tool is sync, the call threads read it in turn instead
(CallThreads.read_with): the thread whose read brings a call runs it itself while the next
thread takes over the reading, so a call costs no hand-off to a sleeping thread; other frames
go on to the loop, in order (which costs them one). PROTOMCP_READER=threads|loop overrides the
choice.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Iterator
from typing import cast

from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.runtime.threads import CallThreads
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire import framing as wire
from protomcp_sdk.wire import readsize
from protomcp_sdk.wire.env import READER_ENV

READ_CEILING = 1 << 20  # bytes per read at most, reached only while a large frame streams in

READERS = ("auto", "threads", "loop")
READER = os.environ.get(READER_ENV, "") or "auto"
"""Who reads the input once the file is loaded (see the module's docstring)."""


class InputReader:
    """Reads Envelopes from `read_fd` and hands them on: calls to sync tools read by a call
    thread to `queue_call` (False: not taken), every other frame to `dispatch` on the loop."""

    def __init__(
        self,
        read_fd: int,
        loop: asyncio.AbstractEventLoop,
        call_threads: CallThreads,
        dispatch: Callable[[pb.Envelope], None],
        queue_call: Callable[[pb.Envelope], bool],
        finish: Callable[[int], None],
        exit_code: asyncio.Future[int],
    ) -> None:
        self.read_fd = read_fd
        self.loop = loop
        self.call_threads = call_threads
        self.dispatch = dispatch
        self.queue_call = queue_call
        self.finish = finish  # ends the process with an exit status
        self.exit_code = exit_code
        self.decoder = wire.FrameDecoder()
        self.input: asyncio.ReadTransport | None = None  # the loop's (paused once threads read)
        self.threads_read = False
        self.read_size = readsize.SMALL  # the threads' next read, once they read the input

    async def connect(self) -> None:
        """Start reading on the loop."""
        self.input, _ = await self.loop.connect_read_pipe(
            lambda: _Frames(self), os.fdopen(self.read_fd, "rb", buffering=0)
        )

    def close(self) -> None:
        """Stop reading (a reading thread's fd stays open while it may read)."""
        if not self.threads_read and self.input is not None:
            self.input.close()

    def _envelopes(self, data: bytes) -> Iterator[pb.Envelope]:
        """The Envelopes completed by `data`. Raw payloads travel to the host only."""
        for item in self.decoder.feed(data):
            if isinstance(item, wire.Raw):
                raise wire.FrameError("the host sent a raw payload: a tool process takes none")
            yield item

    def received(self, data: bytes) -> None:
        """Bytes the loop read."""
        try:
            for envelope in self._envelopes(data):
                self.dispatch(envelope)
        except wire.FrameError as exc:
            self.bad_frame(exc)

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
            self._to_loop(self.closed)
            return False
        self.read_size = readsize.next_size(self.read_size, len(data), READ_CEILING)
        forward: list[pb.Envelope] = []
        error: Exception | None = None
        try:
            for envelope in self._envelopes(data):
                if envelope.WhichOneof("msg") != "call_tool" or not self.queue_call(envelope):
                    forward.append(envelope)
        except Exception as exc:  # a bad frame (or a bug): the process ends, as the loop's reading would
            error = exc
        if forward and not self._to_loop(self._dispatch_all, forward):
            return False
        if error is not None:
            self._to_loop(self.bad_frame, error)
            return False
        return True

    def _to_loop(self, callback: Callable[..., None], *args: object) -> bool:
        """Run callback(*args) on the loop; False if the loop is closed (the process is ending)."""
        try:
            self.loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:
            return False
        return True

    def _dispatch_all(self, envelopes: list[pb.Envelope]) -> None:
        for envelope in envelopes:
            self.dispatch(envelope)

    def closed(self) -> None:
        """The host closed our input: it is stopping us."""
        try:
            self.decoder.close()
        except wire.FrameError as error:
            print(f"protomcp tool process: {error}", file=sys.stderr)
        self.finish(0)

    def bad_frame(self, exc: Exception) -> None:
        print(f"protomcp tool process: bad frame from host: {exc}", file=sys.stderr)
        self.finish(2)


def threads_should_read() -> bool:
    """Whether the call threads read the input of the file just loaded."""
    if READER != "auto":
        return READER == "threads"
    tools = REGISTRY.tools.values()
    return bool(tools) and not REGISTRY.middleware and not any(spec.is_async for spec in tools)


class _Frames(asyncio.Protocol):
    transport: readsize.ResizableRead  # set by connection_made, before any data

    def __init__(self, reader: InputReader) -> None:
        self.reader = reader

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(readsize.ResizableRead, transport)  # a read pipe (connect_read_pipe)
        self.transport.max_size = readsize.SMALL

    def data_received(self, data: bytes) -> None:
        readsize.adapt(self.transport, len(data), READ_CEILING)
        self.reader.received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.reader.closed()
