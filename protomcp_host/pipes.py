"""Byte plumbing for pipes and inherited fds, shared by the stdio transport and workers.

- ``read_into(fd, on_data)`` feeds everything read from an fd to a callback until EOF.
- ``BatchedWriter`` coalesces the writes made in one event-loop iteration into one
  system call: under load many small messages leave together, and alone a message
  leaves on the next loop iteration.

Pipes, sockets and terminals go through the event loop; regular files (``< file``,
``> file``) fall back to blocking calls, as the loop cannot poll them.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import Callable

import anyio

CHUNK = 1 << 20
BIG = 256 * 1024  # parts at least this large are written as they are, never joined
F_SETPIPE_SZ = 1031  # Linux; larger pipes mean fewer wake-ups for big messages


def enlarge_pipe(fd: int, size: int = 1 << 20) -> None:
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, F_SETPIPE_SZ, size)


class _Feed(asyncio.Protocol):
    def __init__(self, on_data: Callable[[bytes], None]) -> None:
        self.on_data = on_data
        self.closed = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        self.on_data(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


async def read_into(fd: int, on_data: Callable[[bytes], None], *, closefd: bool = True) -> None:
    """Call on_data with each chunk read from fd; return at end of input."""
    loop = asyncio.get_running_loop()
    enlarge_pipe(fd)
    feed = _Feed(on_data)
    try:
        transport, _ = await loop.connect_read_pipe(
            lambda: feed, os.fdopen(fd, "rb", buffering=0, closefd=closefd)
        )
    except ValueError:  # a regular file
        while data := await anyio.to_thread.run_sync(os.read, fd, CHUNK, abandon_on_cancel=True):
            on_data(data)
        return
    transport.max_size = CHUNK  # type: ignore[attr-defined]  # asyncio reads 256 KiB per wake-up by default
    try:
        await feed.closed
    finally:
        transport.close()


class BatchedWriter:
    def __init__(self, fd: int, transport: asyncio.WriteTransport | None) -> None:
        self.fd = fd
        self._transport = transport
        self._parts: list[bytes] = []
        self._loop = asyncio.get_running_loop()

    @classmethod
    async def open(cls, fd: int, *, closefd: bool = True) -> BatchedWriter:
        enlarge_pipe(fd)
        loop = asyncio.get_running_loop()
        try:
            transport, _ = await loop.connect_write_pipe(
                asyncio.Protocol, os.fdopen(fd, "wb", buffering=0, closefd=closefd)
            )
        except ValueError:  # a regular file: plain blocking writes
            return cls(fd, None)
        return cls(fd, transport)

    def write(self, data: bytes) -> None:
        if not self._parts:
            self._loop.call_soon(self._flush)
        self._parts.append(data)

    def _flush(self) -> None:
        parts, self._parts = self._parts, []
        if len(parts) > 1 and max(map(len, parts)) < BIG:
            parts = [b"".join(parts)]  # many small messages: one system call
        for data in parts:  # a big one is not copied into a joined buffer
            if self._transport is None:
                view = memoryview(data)
                while view:
                    view = view[os.write(self.fd, view) :]
            elif not self._transport.is_closing():
                self._transport.write(data)

    @property
    def closed(self) -> bool:
        return self._transport is not None and self._transport.is_closing()

    def close(self) -> None:
        """Close after what was written so far has been handed to the pipe."""
        if self._parts:
            self._flush()
        if self._transport is not None:
            self._transport.close()

    async def drain(self, timeout: float) -> None:
        """Wait (bounded) until everything written has left the process."""
        if self._parts:
            self._flush()
        transport = self._transport
        if transport is None:
            return
        with anyio.move_on_after(timeout):
            while transport.get_write_buffer_size() and not transport.is_closing():
                await anyio.sleep(0.005)  # asyncio offers no event for "buffer empty"
