"""The host's stderr, written so that a reader who never reads cannot stall the host.

Messages go into a bounded buffer that a thread of its own writes out with ordinary
blocking writes (the descriptor is shared with the client, so it is not made
non-blocking). When the buffer is full, messages are dropped and counted; the count is
reported as soon as there is room again."""

from __future__ import annotations

import os
import threading
from collections import deque

LIMIT = 1 << 20  # bytes of messages waiting for the reader


class ErrOut:
    def __init__(self, fd: int = 2, limit: int = LIMIT) -> None:
        self.fd = fd
        self.limit = limit
        self.queued = 0
        self.dropped = 0
        self._lines: deque[bytes] = deque()
        self._cond = threading.Condition()
        self._closing = False
        self._thread: threading.Thread | None = None

    def __call__(self, text: str) -> None:
        """Queue one message (a newline is added); never blocks."""
        data = text.encode(errors="replace") + b"\n"
        with self._cond:
            if self._closing:
                return
            if self.queued + len(data) > self.limit:
                self.dropped += 1
                return
            self._lines.append(data)
            self.queued += len(data)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="protomcp-stderr", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._lines or self.dropped or self._closing)
                if not self._lines and not self.dropped:
                    return
                chunk = b"".join(self._lines)
                taken = len(chunk)
                self._lines.clear()
                dropped, self.dropped = self.dropped, 0
            if dropped:
                note = f"protomcp: {dropped} messages to stderr were dropped (stderr not read)\n"
                chunk = note.encode() + chunk
            try:
                view = memoryview(chunk)
                while view:
                    view = view[os.write(self.fd, view) :]
            except OSError:
                pass  # stderr is gone: nothing to tell anyone
            with self._cond:
                self.queued -= taken

    def close(self, timeout: float) -> None:
        """Write what is queued (bounded: a reader that never reads does not hold us), then stop."""
        with self._cond:
            self._closing = True
            if self.dropped:
                self._lines.append(f"protomcp: {self.dropped} messages to stderr were dropped\n".encode())
                self.dropped = 0
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
