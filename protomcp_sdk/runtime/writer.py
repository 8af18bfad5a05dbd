"""The tool process's output: whole frames on the host's pipe, from the loop and from call threads.

Frames are written whole under a lock, by whichever thread has some ready; large answers go
ahead of their frame outside the Envelope (a spool file, or raw bytes on the pipe).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import deque
from collections.abc import Callable

from protomcp_sdk.runtime.spool import Spool
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire import framing as wire


class FrameWriter:
    """Writes frames to `write_fd`; callable from the loop and from call threads."""

    def __init__(self, write_fd: int, loop: asyncio.AbstractEventLoop, loop_thread: int) -> None:
        self.write_fd = write_fd
        self.loop = loop
        self.loop_thread = loop_thread
        self.lock = threading.Lock()
        os.register_at_fork(after_in_child=self._forked)
        self.outbox: deque[list[bytes]] = deque()
        self._write_soon = False  # a write of the loop's queued frames is scheduled
        self.spool = Spool()
        self.broken = False  # the host is gone: nothing more is written

    def send(self, envelope: pb.Envelope) -> None:
        """Write one frame, whole."""
        self.send_pieces([wire.encode(envelope)])

    def send_now(self, envelope: pb.Envelope) -> None:
        """Write one frame before returning (after any write under way): what a call prints or
        logs reaches the host even when the process dies right after (os._exit, a crash in C),
        where a frame left to another thread's write would be lost with it."""
        self.outbox.append([wire.encode(envelope)])
        self.flush()

    def _forked(self) -> None:
        """In a child the tool forked: another thread may have held the lock at the fork."""
        self.lock = threading.Lock()
        self.outbox.clear()

    def send_payload(
        self, request_id: str, content: bytes, content_type: str, answer: Callable[[str], pb.Envelope]
    ) -> None:
        """An answer carrying JSON `content`. Large content goes ahead of it outside the
        Envelope: as a spool file the host maps (no pipe crossing), or as raw bytes on the
        pipe; `answer("")` is then the frame that follows. Small content goes inside it."""
        if len(content) > wire.RAW_THRESHOLD:
            result = wire.encode(answer(""))
            path = self.spool.put(request_id, content)
            if path:
                self.send_pieces([wire.raw_header(request_id, len(content), content_type, path), result])
            else:
                self.send_pieces([*wire.encode_raw(request_id, content, content_type), result])
        else:
            self.send_pieces([wire.encode(answer(content.decode()))])

    def send_pieces(self, pieces: list[bytes]) -> None:
        """Queue pieces that must stay together and write what is queued.

        Whoever holds the write lock also writes what others queued meanwhile, so no
        thread ever waits for the lock and busy periods need fewer system calls. Frames sent
        on the event loop (async tools, middleware, lists) leave together once per loop turn;
        a call thread writes at once, and takes along whatever the loop queued."""
        self.outbox.append(pieces)
        if threading.get_ident() == self.loop_thread:
            if not self._write_soon:
                self._write_soon = True
                self.loop.call_soon(self._write_queued)
            return
        self._write_queued()

    def _write_queued(self) -> None:
        self._write_soon = False
        while self.outbox and self.lock.acquire(blocking=False):
            try:
                small: list[bytes] = []
                while self.outbox:
                    for piece in self.outbox.popleft():
                        if len(piece) > wire.RAW_THRESHOLD:  # write big pieces as they are
                            self._write(b"".join(small))
                            small.clear()
                            self._write(piece)
                        else:
                            small.append(piece)
                self._write(small[0] if len(small) == 1 else b"".join(small))
            finally:
                self.lock.release()
            # Pieces queued after our last look are ours to write unless someone took the lock.

    def flush(self) -> None:
        """Write what is still queued, after any write under way in another thread."""
        with self.lock:
            while self.outbox:
                for piece in self.outbox.popleft():
                    self._write(piece)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view and not self.broken:
                view = view[os.write(self.write_fd, view) :]
        except OSError:  # the host is gone; the read side will see EOF and end us
            self.broken = True
