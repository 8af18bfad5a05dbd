"""Byte plumbing for pipes and inherited fds, shared by the stdio transport and workers.

- ``read_into(fd, on_data)`` feeds everything read from an fd to a callback until EOF.
- ``BatchedWriter`` coalesces the writes made in one event-loop iteration into one
  system call: under load many small messages leave together. Writes made while a chunk
  read by ``read_into`` is handled leave as soon as its handler returns, in the same loop
  turn (no extra turn, no extra epoll call per message); other writes leave on the next turn.

Pipes, sockets and terminals go through the event loop; regular files (``< file``,
``> file``) and devices the loop cannot poll (``< /dev/null``) fall back to blocking calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import selectors
import stat
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import anyio

from protomcp_sdk.wire import readsize

CHUNK = 1 << 20
BIG = 256 * 1024  # parts at least this large are written as they are, never joined
F_SETPIPE_SZ = 1031  # Linux; larger pipes mean fewer wake-ups for big messages


def enlarge_pipe(fd: int, size: int = 1 << 20) -> None:
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, F_SETPIPE_SZ, size)


def _pollable(fd: int) -> bool:
    """Whether the event loop can watch fd: not for regular files, nor for character devices
    such as /dev/null that epoll refuses (asyncio would accept them, then fail in a callback)."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode):
        return False
    if not stat.S_ISCHR(mode):
        return True
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
    except OSError:
        return False
    return True


class _Turn(threading.local):
    """Writers written to while a chunk of input is being handled (per thread: one loop each)."""

    feeding = False
    dirty: list[BatchedWriter]

    def __init__(self) -> None:
        self.dirty = []


_turn = _Turn()


def _handle_then_flush(on_data: Callable[[bytes], None], data: bytes) -> None:
    """Run on_data, then send what it wrote in this same loop turn."""
    turn = _turn
    if turn.feeding:  # nested (a handler feeding another reader): the outer call flushes
        on_data(data)
        return
    turn.feeding = True
    try:
        on_data(data)
    finally:
        turn.feeding = False
        dirty, turn.dirty = turn.dirty, []
        for writer in dirty:
            writer._flush()


class _Feed(asyncio.Protocol):
    def __init__(self, on_data: Callable[[bytes], None]) -> None:
        self.on_data = on_data
        self.closed = asyncio.get_running_loop().create_future()
        self.transport: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        readsize.adapt(self.transport, len(data), CHUNK)
        _handle_then_flush(self.on_data, data)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


async def read_into(
    fd: int,
    on_data: Callable[[bytes], None],
    *,
    closefd: bool = True,
    on_transport: Callable[[asyncio.ReadTransport], None] | None = None,
) -> None:
    """Call on_data with each chunk read from fd; return at end of input. `on_transport`
    receives the read transport (to pause and resume reading); regular files have none."""
    loop = asyncio.get_running_loop()
    enlarge_pipe(fd)
    feed = _Feed(on_data)
    try:
        if not _pollable(fd):
            raise ValueError("not pollable")
        transport, _ = await loop.connect_read_pipe(
            lambda: feed, os.fdopen(fd, "rb", buffering=0, closefd=closefd)
        )
    except ValueError:  # a regular file, or a device the loop cannot poll
        while data := await anyio.to_thread.run_sync(os.read, fd, CHUNK, abandon_on_cancel=True):
            _handle_then_flush(on_data, data)
        return
    transport.max_size = readsize.SMALL  # type: ignore[attr-defined]  # grows to CHUNK while reads fill
    if on_transport is not None:
        on_transport(transport)
    try:
        await feed.closed
    finally:
        transport.close()


class BatchedWriter:
    """A non-blocking writer for a pipe or inherited fd.

    Writes made in one loop iteration leave together; big ones are never copied: what the
    pipe does not take at once waits as a memoryview until the loop says it is writable.
    """

    def __init__(
        self,
        fd: int,
        *,
        on_pressure: Callable[[bool], None] | None = None,
        high_water: int = 16 << 20,
        low_water: int = 4 << 20,
    ) -> None:
        enlarge_pipe(fd)
        self.fd = fd
        # Backpressure: on_pressure(True) once more than high_water bytes wait for the reader,
        # on_pressure(False) once the backlog is under low_water again.
        self.on_pressure = on_pressure
        self.high_water, self.low_water = high_water, low_water
        self.backlog = 0
        self.pressed = False
        self._loop = asyncio.get_running_loop()
        self._parts: list[bytes] = []  # written this iteration, not yet flushed
        self._queue: deque[memoryview] = deque()  # flushed, waiting for the pipe
        self._waiting = False  # registered with the loop for writability
        self._closing = False
        self.closed = False
        self._empty = asyncio.Event()
        self._empty.set()
        self._pollable = not stat.S_ISREG(os.fstat(fd).st_mode)  # regular files: blocking writes
        if self._pollable:
            os.set_blocking(fd, False)

    def write(self, data: bytes) -> None:
        if self.closed or self._closing:
            return
        if not self._parts:
            turn = _turn
            if turn.feeding:
                turn.dirty.append(self)  # sent when the input handler returns
            else:
                self._loop.call_soon(self._flush)
        self._parts.append(data)
        self.backlog += len(data)
        if self.backlog > self.high_water and not self.pressed and self.on_pressure is not None:
            self.pressed = True
            self.on_pressure(True)

    def _flush(self) -> None:
        parts, self._parts = self._parts, []
        if not parts:  # flushed already (close, drain)
            return
        if len(parts) > 1 and max(map(len, parts)) < BIG:
            parts = [b"".join(parts)]  # many small messages: one system call
        for data in parts:
            self._queue.append(memoryview(data))
        self._empty.clear()
        self._send()

    def _send(self) -> None:
        try:
            while self._queue:
                head = self._queue[0]
                if self._pollable:
                    try:
                        written = os.write(self.fd, head)
                    except BlockingIOError:
                        written = 0
                else:
                    written = os.write(self.fd, head)
                self._wrote(written)
                if written < len(head):
                    self._queue[0] = head[written:]
                    if not self._waiting:
                        self._loop.add_writer(self.fd, self._send)
                        self._waiting = True
                    return
                self._queue.popleft()
        except OSError:  # the reader is gone (EPIPE...): nothing more can be delivered
            self._queue.clear()
            self._wrote(self.backlog)
            self._closing = True
        if self._waiting:
            self._loop.remove_writer(self.fd)
            self._waiting = False
        self._empty.set()
        if self._closing:
            self._close_now()

    def _wrote(self, count: int) -> None:
        self.backlog -= count
        if self.pressed and self.backlog < self.low_water:
            self.pressed = False
            if self.on_pressure is not None:
                self.on_pressure(False)

    def close(self) -> None:
        """Close once everything written so far has been handed to the pipe."""
        if self.closed or self._closing:
            return
        self._closing = True
        if self._parts:
            self._flush()
        elif not self._queue:
            self._close_now()

    def _close_now(self) -> None:
        if not self.closed:
            self.closed = True
            if self._waiting:
                self._loop.remove_writer(self.fd)
                self._waiting = False
            os.close(self.fd)

    async def drain(self, timeout: float) -> None:
        """Wait (bounded) until everything written has been handed to the pipe."""
        if self._parts:
            self._flush()
        with anyio.move_on_after(timeout):
            await self._empty.wait()
