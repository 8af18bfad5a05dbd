"""uvicorn's HTTP/1.1 protocols with writes batched per loop iteration.

uvicorn writes a response's head and its body separately, so each JSON answer cost two
send() calls, and on loopback a send is the most expensive step of a request (it runs the
receiver's TCP processing). As with the tool-process pipes (pipes.BatchedWriter), writes
made in one loop iteration are joined and leave in one send at the end of the iteration.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol


class BatchingTransport:
    """Stands in for an asyncio transport; everything but write/close goes to the real one."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))

    def flush(self) -> None:
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending = []
        if not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def batching(protocol_class: type[Any]) -> type[Any]:
    """`protocol_class` (one of uvicorn's HTTP/1.1 protocols) writing through a BatchingTransport."""

    class Batching(protocol_class):  # type: ignore[misc]  # a base class known only at run time
        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(BatchingTransport(transport, asyncio.get_running_loop()))

    Batching.__name__ = f"Batching{protocol_class.__name__}"
    return Batching


def http_protocol() -> type[Any]:
    """uvicorn's fastest HTTP/1.1 protocol available (httptools' C parser, else h11), batching."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return batching(H11Protocol)
    return batching(HttpToolsProtocol)
