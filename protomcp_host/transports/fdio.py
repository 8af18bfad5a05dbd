"""Non-blocking reads and writes on inherited file descriptors (stdin, stdout).

Pipes, sockets and terminals go through the event loop; regular files (``< file``,
``> file``) fall back to plain blocking calls in a worker thread, as the loop cannot
poll them.
"""

from __future__ import annotations

import asyncio
import os

import anyio

CHUNK = 1 << 20


class FdReader:
    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._stream: asyncio.StreamReader | None = None

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader(limit=CHUNK)
        try:
            await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(stream),
                os.fdopen(self.fd, "rb", buffering=0, closefd=False),
            )
        except ValueError:  # a regular file
            return
        self._stream = stream

    async def read(self) -> bytes:
        """Up to CHUNK bytes; b"" at end of input."""
        if self._stream is not None:
            return await self._stream.read(CHUNK)
        return await anyio.to_thread.run_sync(os.read, self.fd, CHUNK, abandon_on_cancel=True)


class FdWriter:
    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._transport: asyncio.WriteTransport | None = None

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            self._transport, _ = await loop.connect_write_pipe(
                asyncio.Protocol, os.fdopen(self.fd, "wb", buffering=0, closefd=False)
            )
        except ValueError:  # a regular file
            self._transport = None

    def write(self, data: bytes) -> None:
        if self._transport is not None:
            if not self._transport.is_closing():
                self._transport.write(data)
            return
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    async def flush(self, timeout: float) -> None:
        transport = self._transport
        if transport is None:
            return
        with anyio.move_on_after(timeout):
            while transport.get_write_buffer_size() and not transport.is_closing():
                await anyio.sleep(0.005)  # asyncio offers no event for "buffer empty"
