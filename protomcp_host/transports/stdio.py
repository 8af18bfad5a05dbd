"""MCP over stdio: newline-delimited JSON-RPC on stdin/stdout, one session.

stdout carries only MCP messages: at start the real stdout is kept aside for the
session and fd 1 is pointed at stderr, so a stray print anywhere in the host goes
to stderr instead of corrupting the stream.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections import deque
from typing import TYPE_CHECKING

import anyio
import orjson

from protomcp_host.processes.pipes import BatchedWriter, read_into
from protomcp_host.protocol import jsonrpc as rpc

if TYPE_CHECKING:
    from protomcp_host.app import Host

MAX_LINE = 256 * 1024 * 1024


class LineSplitter:
    """Sans-IO newline framing with a size limit."""

    def __init__(self, max_line: int = MAX_LINE) -> None:
        self.max_line = max_line
        self._buffer = bytearray()
        self._discarding = False

    def feed(self, data: bytes) -> list[bytes | None]:
        """Complete lines (without newline); None stands for a line that was too long."""
        out: list[bytes | None] = []
        start = 0
        while (end := data.find(b"\n", start)) != -1:
            if self._discarding:
                self._discarding = False
            else:
                self._buffer += data[start:end]
                if len(self._buffer) > self.max_line:  # a long line completed within one chunk
                    out.append(None)
                elif line := bytes(self._buffer).strip():
                    out.append(line)
            self._buffer.clear()
            start = end + 1
        if not self._discarding:
            self._buffer += data[start:]
            if len(self._buffer) > self.max_line:
                self._buffer.clear()
                self._discarding = True
                out.append(None)
        return out

    def tail(self) -> bytes:
        """What is left at end of input (a last line without newline)."""
        return b"" if self._discarding else bytes(self._buffer).strip()


_LIFECYCLE = frozenset({"initialize", "ping", "logging/setLevel"})


def _method(line: bytes | None) -> str | None:
    """The method of a request line; "" for a batch; None for anything else."""
    if line is None:
        return None
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if isinstance(message, list):
        return ""
    method = message.get("method") if isinstance(message, dict) else None
    return method if isinstance(method, str) else None


def needs_tools(line: bytes | None) -> bool:
    """Whether a message must wait for the tool files to load: everything but the lifecycle
    (initialize, ping, notifications...) and lines that are no valid message at all."""
    method = _method(line)
    return method is not None and method not in _LIFECYCLE and not method.startswith("notifications/")


def starts_calls(line: bytes | None) -> bool:
    """Whether a message may start tool calls (a tools/call, or a batch)."""
    return _method(line) in ("tools/call", "")


def take_stdout() -> int:
    """Reserve the real stdout for MCP and send everything else written to fd 1 to stderr."""
    mcp_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return mcp_fd


async def serve_stdio(host: Host, shutdown: anyio.Event, drain_timeout: float) -> None:
    """Serve one session on stdin/stdout until end of input or `shutdown`."""
    inputs: list[asyncio.ReadTransport] = []
    waiting: deque[bytes | None] = deque()  # lines read but held back while the client does not read
    told = False

    def pressure(full: bool) -> None:
        """Stop taking requests while the client leaves its answers unread."""
        nonlocal told
        if full:
            for transport in inputs:
                transport.pause_reading()
            if not told:
                told = True
                host.stderr(
                    f"protomcp: the client is not reading its answers; input paused while "
                    f"{writer.high_water >> 20} MiB wait (reported once)"
                )
        else:
            unblock()

    def take_waiting() -> None:
        while waiting and not writer.pressed:
            if not host.ready.is_set() and needs_tools(waiting[0]):
                break  # held (with everything after it) until the tool files have loaded
            if len(session.in_flight) >= host.max_in_flight and starts_calls(waiting[0]):
                break  # held (with everything after it) until a running call ends
            handle(waiting.popleft())
        for transport in inputs:
            transport.pause_reading() if waiting or writer.pressed else transport.resume_reading()

    writer = BatchedWriter(take_stdout(), on_pressure=pressure)

    def write(data: bytes, related: bytes | None = None) -> None:
        writer.write(data)
        writer.write(b"\n")

    router = host.connect(write)
    session = router.session
    moved = [anyio.Event()]  # set when held lines may move on (a call ended, the client read)

    def unblock() -> None:
        if waiting:
            asyncio.get_running_loop().call_soon(take_waiting)
        moved[0].set()

    router.on_call_end = unblock
    splitter = LineSplitter()
    too_long = rpc.error(
        rpc.NULL_ID, rpc.INVALID_REQUEST, f"Invalid Request: message exceeds {MAX_LINE} bytes"
    )

    def handle(line: bytes | None) -> None:
        if line is None:
            write(too_long)
            return
        try:
            router.feed(line)
        except Exception as exc:  # a bug must not cost the other messages of this chunk
            host.stderr(f"protomcp: internal error handling a message: {exc!r}")
            write(rpc.error(rpc.NULL_ID, rpc.INTERNAL_ERROR, f"Internal error: {exc!r}"))

    def on_data(data: bytes) -> None:
        waiting.extend(splitter.feed(data))
        take_waiting()

    def on_transport(transport: asyncio.ReadTransport) -> None:
        inputs.append(transport)
        if waiting or writer.pressed:
            transport.pause_reading()

    async with anyio.create_task_group() as reading:

        async def stop_on_signal() -> None:
            await shutdown.wait()
            reading.cancel_scope.cancel()

        async def release_when_ready() -> None:
            await host.ready.wait()
            take_waiting()

        reading.start_soon(stop_on_signal)
        reading.start_soon(release_when_ready)
        await read_into(0, on_data, closefd=False, on_transport=on_transport)
        inputs.clear()
        if tail := splitter.tail():
            waiting.append(tail)
        await host.ready.wait()  # held requests are answered once the files have loaded
        with anyio.move_on_after(drain_timeout):  # the rest of the input, as the limits allow
            while waiting:
                moved[0] = anyio.Event()
                take_waiting()
                if waiting:
                    await moved[0].wait()
        while waiting:  # what is still held after that (at most one read's worth) is answered now
            handle(waiting.popleft())
        reading.cancel_scope.cancel()
    # Input is over: let in-flight calls finish (bounded); answer the rest, then stop.
    with anyio.move_on_after(drain_timeout):
        await router.wait_idle()
    router.fail_all(f"the host is shutting down and the call did not finish within {drain_timeout:g}s")
    host.disconnect(router)
    await writer.drain(drain_timeout)
