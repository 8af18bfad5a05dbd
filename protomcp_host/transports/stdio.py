"""MCP over stdio: newline-delimited JSON-RPC on stdin/stdout, one session.

stdout carries only MCP messages: at start the real stdout is kept aside for the
session and fd 1 is pointed at stderr, so a stray print anywhere in the host goes
to stderr instead of corrupting the stream.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any, BinaryIO

import anyio
import orjson

from protomcp_host.processes.pipes import CHUNK, BatchedWriter, read_into
from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.modern import is_modern, maybe_modern
from protomcp_host.transports.ports import Connection, Sessions

MAX_LINE = 256 * 1024 * 1024


def is_binary(first: int) -> bool:
    """The first byte of a connection: a proto-mcp frame (a 4-byte big-endian length: 0x00-0x1F,
    but not the tab, line feed or carriage return a JSON-RPC client may start with) rather
    than JSON-RPC ('{')."""
    return first < 0x20 and first not in (0x09, 0x0A, 0x0D)


NOTICE_LIMIT = 64 * 1024 * 1024  # bytes of unread messages past which notifications are dropped
NOTIFICATION = b'{"jsonrpc":"2.0","method":"notifications/'
JOIN_BELOW = 64 * 1024  # a message smaller than this leaves joined with its end (one write)


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


_LIFECYCLE = frozenset({"initialize", "ping", "logging/setLevel", "server/discover"})


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


SHUTTING_DOWN = -32000  # JSON-RPC's range for implementation-defined server errors


def refuse_held(line: bytes | None, *, ready: bool, startup_error: str | None = None) -> bytes | None:
    """At shutdown, the error answer for a held line that would start a tool call (or, before the
    tool files loaded, needs them); None for lines that are handled as usual."""
    if not (starts_calls(line) or (not ready and needs_tools(line))):
        return None
    assert line is not None
    message = orjson.loads(line)
    reason = "the host is shutting down; the request was not started"
    if startup_error is not None:
        reason = f"the tool files did not load, the host is shutting down: {startup_error}"
    if isinstance(message, dict):
        return rpc.error(orjson.dumps(message["id"]), SHUTTING_DOWN, reason) if "id" in message else b""
    answers = [
        orjson.loads(rpc.error(orjson.dumps(m["id"]), SHUTTING_DOWN, reason))
        for m in message
        if isinstance(m, dict) and "method" in m and "id" in m
    ]
    return orjson.dumps(answers) if answers else b""


def is_modern_line(line: bytes) -> bool:
    """Whether a line is a modern-era (2026-07-28) request: its params._meta names the protocol
    version. A cheap byte test first, so stateful-era lines are parsed only once (by their session)."""
    if not maybe_modern(line):
        return False
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(message, dict) and is_modern(message.get("params"))


def is_cancellation(line: bytes) -> bool:
    """Whether a line is a notifications/cancelled message (decoded: the bytes may as well sit
    inside a tool's argument). The byte test first, so other lines are not parsed twice."""
    if b"notifications/cancelled" not in line:
        return False
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(message, dict) and message.get("method") == "notifications/cancelled"


def take_stdout() -> int:
    """Reserve the real stdout for MCP and send everything else written to fd 1 to stderr."""
    mcp_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return mcp_fd


class Outbox:
    """stdout for MCP, with memory for unread answers bounded in bytes.

    Answers go to a BatchedWriter while the client reads them. Once more than its high-water mark
    waits (the client is not reading), further answers wait, in order, in an unlinked temporary
    file instead of memory; they move back a chunk at a time whenever the writer drains below its
    low-water mark. So memory holds at most the high-water mark, the one answer that crossed it,
    and one chunk, however many calls finish meanwhile (not --max-in-flight times their size).

    The file holds every answer, but notifications (progress, log lines: a tool printing in a
    loop) only up to `notice_limit` bytes of it; later ones are dropped (`on_drop` is told the
    first time), so a client that stops reading cannot make a chatty tool fill the disk.
    """

    def __init__(
        self,
        fd: int,
        on_pressure: Callable[[bool], None],
        chunk: int = CHUNK,
        notice_limit: int = NOTICE_LIMIT,
        on_drop: Callable[[], None] = lambda: None,
        **marks: int,
    ) -> None:
        self.writer = BatchedWriter(fd, on_pressure=self._pressure, **marks)
        self.on_pressure = on_pressure  # True: the client stopped reading; False: it caught up
        self.chunk = chunk
        self.notice_limit = notice_limit
        self.on_drop = on_drop
        self.dropped = 0  # notifications dropped while the client did not read
        self.spilled = 0  # bytes waiting in the file
        self.spilled_ever = 0  # bytes that ever went through the file (for the operator)
        self._file: BinaryIO | None = None
        self._read_at = 0
        self._empty = asyncio.Event()
        self._empty.set()

    @property
    def held(self) -> int:
        """Bytes held in memory for the client (not yet handed to the pipe)."""
        return self.writer.backlog

    @property
    def full(self) -> bool:
        """The client leaves answers unread: take no new requests."""
        return self.writer.pressed or self.spilled > 0

    def send(self, message: bytes, notice: bool | None = None, end: bytes = b"\n") -> None:
        """One message and its end (a notification past `notice_limit` is dropped; `notice`
        None: a JSON-RPC notification, told by its start)."""
        if self.spilled > self.notice_limit and (
            notice if notice is not None else message.startswith(NOTIFICATION)
        ):
            if not self.dropped:
                self.on_drop()
            self.dropped += 1
            return
        if end and len(message) < JOIN_BELOW:
            message, end = message + end, b""  # one write (a copy of a small message costs less)
        self.write(message)
        if end:
            self.write(end)

    def write(self, data: bytes) -> None:
        if self.spilled or self.writer.pressed:
            self._spill(data)
        else:
            self.writer.write(data)

    def _spill(self, data: bytes) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="protomcp-unread-")  # noqa: SIM115 - owned here
            self._read_at = 0
        self._file.seek(0, os.SEEK_END)
        self._file.write(data)
        self.spilled += len(data)
        self.spilled_ever += len(data)
        self._empty.clear()

    def _pressure(self, full: bool) -> None:
        if full:
            if not self.spilled:
                self.on_pressure(True)
            return
        self._refill()
        if not self.full:
            self.on_pressure(False)

    def _refill(self) -> None:
        """Move answers from the file to the writer until it is full again or the file is empty."""
        while self.spilled and not self.writer.pressed:
            assert self._file is not None
            self._file.flush()
            data = os.pread(self._file.fileno(), min(self.chunk, self.spilled), self._read_at)
            before = self.writer.backlog
            self.writer.write(data)
            if not data or self.writer.backlog == before:  # the reader is gone: nothing can be delivered
                self.spilled = 0
                break
            self._read_at += len(data)
            self.spilled -= len(data)
        if not self.spilled and self._file is not None:
            self._file.close()  # the space goes back at once
            self._file = None
            self._empty.set()

    async def drain(self, timeout: float) -> None:
        """Wait (bounded) until everything written has been handed to the pipe."""
        with anyio.move_on_after(timeout):
            await self._empty.wait()
            await self.writer.drain(timeout)
        if self._file is not None:
            self._file.close()
            self._file = None


async def serve_stdio(host: Sessions, shutdown: anyio.Event, drain_timeout: float) -> None:
    """Serve one client on stdin/stdout until end of input or `shutdown`.

    Each message finds its era: a request whose params._meta names the protocol version is
    served statelessly in the 2026-07-28 era (one connection, made at the first such request);
    everything else belongs to the process's stateful session (started by initialize). So a client
    may probe with server/discover and fall back to initialize on the same process."""
    inputs: list[asyncio.ReadTransport] = []
    waiting: deque[bytes | None] = deque()  # lines read but held back while the client does not read
    told = False
    closing = False  # the session is over: held lines are no longer taken
    loaded = False  # host.ready was seen set (it stays set)
    draining = False  # input is over: the drain below waits for `moved`

    def take_waiting() -> None:
        nonlocal loaded
        while waiting and not out.full and not closing:
            if not loaded and not (loaded := host.ready.is_set()) and needs_tools(waiting[0]):
                break  # held (with everything after it) until the tool files have loaded
            if running() >= host.max_in_flight and starts_calls(waiting[0]):
                break  # held (with everything after it) until a running call ends
            handle(waiting.popleft())
        for transport in inputs:
            transport.pause_reading() if waiting or out.full else transport.resume_reading()

    def pressure(full: bool) -> None:
        """Stop taking requests while the client leaves its answers unread; resume once it read."""
        nonlocal told
        if not full:  # resume reading whether or not lines were held (a lone large answer)
            asyncio.get_running_loop().call_soon(take_waiting)
            moved[0].set()
            return
        for transport in inputs:
            transport.pause_reading()
        if not told:
            told = True
            host.stderr(
                f"protomcp: the client is not reading its answers; input paused while "
                f"{out.writer.high_water >> 20} MiB wait (answers finished meanwhile wait in a "
                "temporary file; reported once)"
            )

    def call_ended() -> None:
        """Held lines may move on (a running call ended): take them."""
        if waiting:
            asyncio.get_running_loop().call_soon(take_waiting)
        if draining:  # (nobody waits for it before)
            moved[0].set()

    def dropping() -> None:
        host.stderr(
            f"protomcp: the client is not reading; over {out.notice_limit >> 20} MiB of answers wait, "
            "so further notifications (progress, log lines) are dropped until it reads (answers "
            "are kept; reported once)"
        )

    out = Outbox(take_stdout(), on_pressure=pressure, on_drop=dropping)
    binary: list[Any] = []  # proto-mcp (ProtoStdio), when the connection's first byte says so
    decided = False

    def write(data: bytes, related: bytes | None = None) -> None:
        if binary:
            binary[0].answer(data)
        else:
            out.send(data)

    router = host.connect(write)
    session = router.session
    modern: list[Connection] = []  # the modern era's connection, once a modern request came

    def running() -> int:
        return len(session.in_flight) + (len(modern[0].session.in_flight) if modern else 0)

    def modern_router() -> Connection:
        if not modern:
            connection = host.connect_modern(write)
            connection.on_call_end = call_ended
            modern.append(connection)
        return modern[0]

    moved = [anyio.Event()]  # set when held lines may move on (a call ended, the client read)
    router.on_call_end = call_ended
    splitter = LineSplitter()
    too_long = rpc.error(
        rpc.NULL_ID, rpc.INVALID_REQUEST, f"Invalid Request: message exceeds {MAX_LINE} bytes"
    )

    def handle(line: bytes | None) -> None:
        if line is None:
            write(too_long)
            return
        try:
            if maybe_modern(line) and is_modern_line(line):  # (the cheap test first: the hot path)
                modern_router().feed(line)
            else:
                if modern and is_cancellation(line):  # ids of either era
                    modern[0].feed(line)
                router.feed(line)
        except Exception as exc:  # a bug must not cost the other messages of this chunk
            host.stderr(f"protomcp: internal error handling a message: {exc!r}")
            write(rpc.error(rpc.NULL_ID, rpc.INTERNAL_ERROR, f"Internal error: {exc!r}"))

    def on_data(data: bytes) -> None:
        nonlocal decided
        if not decided and data:  # the first byte tells JSON-RPC from proto-mcp
            decided = True
            if is_binary(data[0]):
                from protomcp_host.transports.protomcp_stdio import ProtoStdio  # only when it is used

                binary.append(ProtoStdio(host.descriptors, partial(out.send, end=b""), host.stderr))
        waiting.extend(binary[0].feed(data) if binary else splitter.feed(data))
        take_waiting()

    def on_transport(transport: asyncio.ReadTransport) -> None:
        inputs.append(transport)
        if waiting or out.full:
            transport.pause_reading()

    signalled = False
    async with anyio.create_task_group() as reading:

        async def stop_on_signal() -> None:
            nonlocal signalled
            await shutdown.wait()
            signalled = True
            reading.cancel_scope.cancel()

        async def release_when_ready() -> None:
            await host.ready.wait()
            take_waiting()

        reading.start_soon(stop_on_signal)
        reading.start_soon(release_when_ready)
        await read_into(0, on_data, closefd=False, on_transport=on_transport)
        reading.cancel_scope.cancel()
    inputs.clear()
    if not signalled and (tail := splitter.tail()):
        waiting.append(tail)
    if binary:
        binary[0].ended()
    # Input is over (end of input, or a signal): what was read is answered, as the limits allow.
    # Held requests are answered once the files have loaded, and empty input (`run tools.py
    # < /dev/null`, a check) learns whether they load; a client that spoke, has no request held
    # and closed its input (a sibling copy that probed) does not wait for the load.
    if waiting or not decided:
        with anyio.move_on_after(drain_timeout if signalled else None):
            await _first(host.ready, shutdown)
    if not host.ready.is_set():  # they did not load (or a signal came first): the host is going away
        signalled = True
    draining = True
    with anyio.move_on_after(drain_timeout):
        while waiting:
            moved[0] = anyio.Event()
            take_waiting()
            if waiting:
                await moved[0].wait()
    while waiting:  # what is still held after that (at most one read's worth) is answered now
        line = waiting.popleft()
        refusal = None
        if signalled:
            refusal = refuse_held(line, ready=host.ready.is_set(), startup_error=host.startup_error)
        if refusal is not None:
            if refusal:
                write(refusal)  # not started: the host is going away
        else:
            handle(line)
    # Let in-flight calls finish (bounded); answer the rest with an error, then stop.
    connections = [router, *modern]
    for connection in modern:
        connection.end_streams()
    with anyio.move_on_after(drain_timeout):
        for connection in connections:
            await connection.wait_idle()
    closing = True
    for connection in connections:
        connection.fail_all(
            f"the host is shutting down and the call did not finish within {drain_timeout:g}s"
        )
        host.disconnect(connection)
    await out.drain(drain_timeout)


async def _first(*events: anyio.Event) -> None:
    """Return once any of `events` is set."""
    async with anyio.create_task_group() as tg:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for event in events:
            tg.start_soon(wait, event)
