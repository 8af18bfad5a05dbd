"""stdout for MCP over stdio: answers the client has not read yet, bounded in memory by bytes
(the rest waits in an unlinked temporary file)."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable
from typing import BinaryIO

import anyio

from protomcp_host.processes.pipes import CHUNK, BatchedWriter

NOTICE_LIMIT = 64 * 1024 * 1024  # bytes of unread messages past which notifications are dropped
NOTIFICATION = b'{"jsonrpc":"2.0","method":"notifications/'
JOIN_BELOW = 64 * 1024  # a message smaller than this leaves joined with its end (one write)


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
