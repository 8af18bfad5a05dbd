"""`--workers N` without `--store`: the workers of one parent tell each other small messages.

It is the bus part of a Store (publish/subscribe) for the input-required round trip
(bridge/rounds.py: a requestState was used, and what its first use answered), so the worker
holding a suspended call lets it go when its retry was served by another worker. Each worker
binds a Unix datagram socket in Linux's abstract namespace, named by its parent's pid and its
worker number (1..N; a replacement takes its number over), and sends each message to the other
N-1. Only datagrams from this user are read (the kernel's credentials, SO_PASSCRED). A message
that cannot be sent (a worker being replaced, a full queue) is lost: the price is a suspended
call held until its timeout, or a second use that runs again, as without this bus.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import struct
from collections.abc import Callable

from protomcp_host.transports.http.workers import WORKER_ENV

Handler = Callable[[str, bytes], None]
MAX_DATAGRAM = 200 * 1024  # bytes (a message carries at most 64 KiB of a first answer)
_CREDENTIALS = struct.Struct("3i")  # pid, uid, gid


def address(parent: int, number: int) -> str:
    return f"\0protomcp-workers-{parent}-{number}"


class SiblingBus:
    def __init__(self, number: int, count: int, parent: int) -> None:
        self.number = number
        self.count = count
        self.parent = parent
        self.handlers: list[Handler] = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, MAX_DATAGRAM * 2)
            self.sock.bind(address(parent, number))
        except OSError:
            self.sock.close()
            raise
        self.sock.setblocking(False)
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def for_worker(cls, count: int) -> SiblingBus | None:
        """This worker's bus (None outside a worker, or where abstract sockets do not exist)."""
        number = os.environ.get(WORKER_ENV, "")
        if not number.isdigit() or not hasattr(socket, "SO_PASSCRED"):
            return None
        return cls(int(number), count, os.getppid())

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self.sock.fileno(), self._read)

    def close(self) -> None:
        if self._loop is not None:
            self._loop.remove_reader(self.sock.fileno())
            self._loop = None
        self.sock.close()

    def subscribe(self, handler: Handler) -> None:
        self.handlers.append(handler)

    def publish(self, topic: str, payload: bytes) -> None:
        """To every other worker's subscribers, and this one's (as a Store's bus does)."""
        data = topic.encode() + b"\n" + payload
        if len(data) <= MAX_DATAGRAM:
            for number in range(1, self.count + 1):
                if number != self.number:
                    with contextlib.suppress(OSError):  # not there now (being replaced), or full
                        self.sock.sendto(data, address(self.parent, number))
        self._deliver(data)

    def _read(self) -> None:
        size = socket.CMSG_SPACE(_CREDENTIALS.size)
        while True:
            try:
                data, ancillary, _, _ = self.sock.recvmsg(MAX_DATAGRAM, size)
            except OSError:  # (BlockingIOError: nothing more to read now)
                return
            if _sender_uid(ancillary) == os.getuid():  # another user's datagram is not read
                self._deliver(data)

    def _deliver(self, data: bytes) -> None:
        topic, _, payload = data.partition(b"\n")
        for handler in self.handlers:
            handler(topic.decode(errors="replace"), payload)


def _sender_uid(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    for level, kind, value in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(value) >= _CREDENTIALS.size:
            return _CREDENTIALS.unpack(value[: _CREDENTIALS.size])[1]
    return None
