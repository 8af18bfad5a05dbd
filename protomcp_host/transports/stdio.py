"""MCP over stdio: newline-delimited JSON-RPC (or proto-mcp frames) on stdin/stdout, one client.

stdout carries only MCP messages: at start the real stdout is kept aside for the
session and fd 1 is pointed at stderr, so a stray print anywhere in the host goes
to stderr instead of corrupting the stream.

`StdioConnection` holds the whole state of the one connection, explicitly: its phase (reading,
draining, closing: `Phase`, which only moves forward), the lines it holds back, its outbox, and
which era serves each message. `serve_stdio` is the entry point.
"""

from __future__ import annotations

import asyncio
import enum
import os
import select
import sys
from collections import deque
from functools import partial
from typing import TYPE_CHECKING

import anyio

from protomcp_host.processes.pipes import read_into
from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.transports.lines import (
    MAX_LINE,
    LineSplitter,
    is_cancellation,
    modern_message,
    needs_tools,
    refuse_held,
    starts_calls,
)
from protomcp_host.transports.outbox import Outbox
from protomcp_host.transports.ports import Connection, Sessions
from protomcp_host.transports.waiting import first_set

if TYPE_CHECKING:
    from protomcp_host.transports.protomcp_stdio import ProtoStdio


# After a signal, what the client had already written is still read (without waiting), so those
# requests get their answer too: at most this many bytes of it.
WRITTEN_BEFORE_SIGNAL = 1 << 20


def is_binary(first: int) -> bool:
    """The first byte of a connection: a proto-mcp frame (a 4-byte big-endian length: 0x00-0x1F,
    but not the tab, line feed or carriage return a JSON-RPC client may start with) rather
    than JSON-RPC ('{')."""
    return first < 0x20 and first not in (0x09, 0x0A, 0x0D)


def take_stdout() -> int:
    """Reserve the real stdout for MCP and send everything else written to fd 1 to stderr."""
    mcp_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return mcp_fd


class Phase(enum.Enum):
    """Where the connection is in its life. Whatever the phase, lines are taken in order and only
    as the limits allow (the tool files loaded, --max-in-flight, a client that reads)."""

    READING = "reading"  # input is open: what is read is taken, or held back
    DRAINING = "draining"  # input is over: the held lines are taken, bounded by the drain timeout
    CLOSING = "closing"  # running calls had their time: they fail, and nothing more is taken


# Module names for the members: on the hot path, looking a member up on its Enum class is slow.
READING, DRAINING, CLOSING = Phase.READING, Phase.DRAINING, Phase.CLOSING

# The transitions allowed: a connection only moves forward, one phase at a time.
NEXT_PHASE: dict[Phase, frozenset[Phase]] = {
    READING: frozenset({DRAINING}),
    DRAINING: frozenset({CLOSING}),
    CLOSING: frozenset(),
}


class StdioConnection:
    """One client on stdin/stdout, from its first byte to the last answer handed to the pipe.

    Each message finds its era: a request whose params._meta names the protocol version is
    served statelessly in the 2026-07-28 era (one connection, made at the first such request);
    everything else belongs to the process's stateful session (started by initialize). So a client
    may probe with server/discover and fall back to initialize on the same process. A connection
    whose first byte is 0x00-0x1F speaks proto-mcp: its frames become lines for the same session.
    """

    def __init__(self, host: Sessions, drain_timeout: float, mcp_fd: int) -> None:
        """`mcp_fd`: where MCP messages go (the real stdout: `take_stdout`); input is fd 0."""
        self.host = host
        self.drain_timeout = drain_timeout
        self.phase = READING
        self.held: deque[bytes | None] = deque()  # lines read, held back while the limits say so
        self.inputs: list[asyncio.ReadTransport] = []  # stdin's transport, to pause and resume it
        self.loaded = False  # host.ready was seen set (it stays set)
        self.signalled = False  # a signal (or a failed load) ended the input: held calls are refused
        self.pressure_told = False  # the operator heard that the client does not read
        self.moved = anyio.Event()  # set when held lines may move on (a call ended, the client read)
        self.out = Outbox(mcp_fd, on_pressure=self._pressure, on_drop=self._dropping)
        self.splitter = LineSplitter()
        self.framing_known = False  # the first byte has told JSON-RPC from proto-mcp
        self.proto: ProtoStdio | None = None  # proto-mcp, when the first byte says so
        self.stateful: Connection = host.connect(self.write)
        self.stateful.on_call_end = self._call_ended
        self.session = self.stateful.session  # (its sans-IO state: the calls it runs)
        self.modern: Connection | None = None  # the 2026-07-28 era's, from its first request
        self.too_long = rpc.error(
            rpc.NULL_ID, rpc.INVALID_REQUEST, f"Invalid Request: message exceeds {MAX_LINE} bytes"
        )

    def enter(self, phase: Phase) -> None:
        """Move on to `phase`; only the transitions NEXT_PHASE lists are allowed."""
        if phase not in NEXT_PHASE[self.phase]:
            raise RuntimeError(f"stdio connection: no transition from {self.phase.value} to {phase.value}")
        self.phase = phase

    # -- Serving: read, drain what is held, let calls finish -----------------------------------

    async def serve(self, shutdown: anyio.Event) -> None:
        """Serve until end of input or `shutdown`, then answer what was read (as the limits and
        the drain timeout allow) and stop."""
        await self._read(shutdown)
        self.enter(DRAINING)
        await self._drain_held()
        await self._finish_calls()
        await self.out.drain(self.drain_timeout)

    async def _read(self, shutdown: anyio.Event) -> None:
        async with anyio.create_task_group() as reading:
            reading.start_soon(self._stop_on_signal, shutdown, reading.cancel_scope)
            reading.start_soon(self._release_when_ready)
            await read_into(0, self._on_data, closefd=False, on_transport=self._on_transport)
            reading.cancel_scope.cancel()
        self.inputs.clear()
        if self.signalled:
            self._read_what_was_written()
        if not self.signalled and (tail := self.splitter.tail()):
            self.held.append(tail)
        if self.proto is not None:
            self.proto.ended()
        # Input is over (end of input, or a signal): what was read is answered, as the limits allow.
        # Held requests are answered once the files have loaded, and empty input (`run tools.py
        # < /dev/null`, a check) learns whether they load; a client that spoke, has no request held
        # and closed its input (a sibling copy that probed) does not wait for the load.
        if self.held or not self.framing_known:
            with anyio.move_on_after(self.drain_timeout if self.signalled else None):
                await first_set(self.host.ready, shutdown)
        if not self.host.ready.is_set():  # they did not load (or a signal came first): the host is going away
            self.signalled = True

    def _read_what_was_written(self) -> None:
        """Requests the client wrote before the signal (reading paused while lines were held, so
        they may still sit in the pipe): read them without waiting, bounded, to answer each."""
        budget = WRITTEN_BEFORE_SIGNAL
        try:
            while budget > 0 and select.select([0], [], [], 0)[0]:
                data = os.read(0, min(budget, 65536))
                if not data:
                    break
                budget -= len(data)
                self._split(data)
        except (OSError, ValueError):  # stdin closed or not selectable: nothing more to read
            pass

    async def _stop_on_signal(self, shutdown: anyio.Event, reading: anyio.CancelScope) -> None:
        await shutdown.wait()
        self.signalled = True
        reading.cancel()

    async def _release_when_ready(self) -> None:
        await self.host.ready.wait()
        self.take_held()

    async def _drain_held(self) -> None:
        """Take the held lines as the limits allow, within the drain timeout; then answer the rest
        at once (at most one read's worth): refused if the host is going away, else handled."""
        with anyio.move_on_after(self.drain_timeout):
            while self.held:
                self.moved = anyio.Event()
                self.take_held()
                if self.held:
                    await self.moved.wait()
        while self.held:
            line = self.held.popleft()
            refusal = None
            if self.signalled:
                host = self.host
                refusal = refuse_held(line, ready=host.ready.is_set(), startup_error=host.startup_error)
            if refusal is None:
                self.handle(line)
            elif refusal:
                self.write(refusal)  # not started: the host is going away

    async def _finish_calls(self) -> None:
        """Let in-flight calls finish (bounded); answer the rest with an error; forget the session."""
        connections = [self.stateful] if self.modern is None else [self.stateful, self.modern]
        if self.modern is not None:
            self.modern.end_streams()
        with anyio.move_on_after(self.drain_timeout):
            for connection in connections:
                await connection.wait_idle()
        self.enter(CLOSING)
        for connection in connections:
            connection.fail_all(
                f"the host is shutting down and the call did not finish within {self.drain_timeout:g}s"
            )
            self.host.disconnect(connection)

    # -- Input: bytes -> lines -> held or handled ------------------------------------------------

    def _on_transport(self, transport: asyncio.ReadTransport) -> None:
        self.inputs.append(transport)
        if self.held or self.out.full:
            transport.pause_reading()

    def _on_data(self, data: bytes) -> None:
        self._split(data)
        self.take_held()

    def _split(self, data: bytes) -> None:
        """Input bytes -> held lines (JSON-RPC lines, or proto-mcp frames made lines)."""
        if not self.framing_known and data:  # the first byte tells JSON-RPC from proto-mcp
            self.framing_known = True
            if is_binary(data[0]):
                from protomcp_host.transports.protomcp_stdio import ProtoStdio  # only when it is used

                host = self.host
                self.proto = ProtoStdio(host.descriptors, partial(self.out.send, end=b""), host.stderr)
        self.held.extend(self.splitter.feed(data) if self.proto is None else self.proto.feed(data))

    def take_held(self) -> None:
        """Handle held lines, in order, while the limits allow; pause reading while any stay held
        (or the client leaves its answers unread), resume once none do."""
        held, out = self.held, self.out
        while held and not out.full and self.phase is not CLOSING:
            if not self.loaded:
                self.loaded = self.host.ready.is_set()
                if not self.loaded and needs_tools(held[0]):
                    break  # held (with everything after it) until the tool files have loaded
            if self.running() >= self.host.max_in_flight and starts_calls(held[0]):
                break  # held (with everything after it) until a running call ends
            self.handle(held.popleft())
        for transport in self.inputs:
            transport.pause_reading() if held or out.full else transport.resume_reading()

    def running(self) -> int:
        """Calls running in either era."""
        modern = self.modern
        return len(self.session.in_flight) + (0 if modern is None else len(modern.session.in_flight))

    # -- Eras: which connection serves a line ----------------------------------------------------

    def handle(self, line: bytes | None) -> None:
        """One line (None: one over the size limit) to the era that serves it."""
        if line is None:
            self.write(self.too_long)
            return
        try:
            modern = modern_message(line)  # (a cheap byte test first: most lines are not parsed)
            if modern is not None:
                self.modern_connection().feed_loaded(line, modern)
            else:
                if self.modern is not None and is_cancellation(line):  # ids of either era
                    self.modern.feed(line)
                self.stateful.feed(line)
        except Exception as exc:  # a bug must not cost the other messages of this chunk
            self.host.stderr(f"protomcp: internal error handling a message: {exc!r}")
            self.write(rpc.error(rpc.NULL_ID, rpc.INTERNAL_ERROR, f"Internal error: {exc!r}"))

    def modern_connection(self) -> Connection:
        """The 2026-07-28 era's connection, made at its first request."""
        if self.modern is None:
            self.modern = self.host.connect_modern(self.write)
            self.modern.on_call_end = self._call_ended
        return self.modern

    # -- Output and flow -------------------------------------------------------------------------

    def write(self, data: bytes, related: bytes | None = None) -> None:
        """A message of either era's session to the client (as a frame, for proto-mcp)."""
        if self.proto is None:
            self.out.send(data)
        else:
            self.proto.answer(data)

    def _call_ended(self) -> None:
        """Held lines may move on (a running call ended): take them."""
        if self.held:
            asyncio.get_running_loop().call_soon(self.take_held)
        if self.phase is not READING:  # (nobody waits for it before)
            self.moved.set()

    def _pressure(self, full: bool) -> None:
        """Stop taking requests while the client leaves its answers unread; resume once it read."""
        if not full:  # resume reading whether or not lines were held (a lone large answer)
            asyncio.get_running_loop().call_soon(self.take_held)
            self.moved.set()
            return
        for transport in self.inputs:
            transport.pause_reading()
        if not self.pressure_told:
            self.pressure_told = True
            self.host.stderr(
                f"protomcp: the client is not reading its answers; input paused while "
                f"{self.out.writer.high_water >> 20} MiB wait (answers finished meanwhile wait in a "
                "temporary file; reported once)"
            )

    def _dropping(self) -> None:
        self.host.stderr(
            f"protomcp: the client is not reading; over {self.out.notice_limit >> 20} MiB of answers wait, "
            "so further notifications (progress, log lines) are dropped until it reads (answers "
            "are kept; reported once)"
        )


async def serve_stdio(host: Sessions, shutdown: anyio.Event, drain_timeout: float) -> None:
    """Serve one client on stdin/stdout until end of input or `shutdown` (see StdioConnection)."""
    await StdioConnection(host, drain_timeout, take_stdout()).serve(shutdown)
