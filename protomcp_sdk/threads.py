"""Worker threads for sync tools."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

SYNC_WORKERS = 32


class SyncWorkers:
    """Threads for sync tools: started on demand, reused, at most `limit` at once.

    Leaner than concurrent.futures (no Future per call): sync calls report their own
    result, so all a call needs is a queue slot and an idle thread."""

    def __init__(self, limit: int = SYNC_WORKERS) -> None:
        self.limit = limit
        self.queue: queue.SimpleQueue[tuple[Callable[..., None], tuple[Any, ...]] | None] = (
            queue.SimpleQueue()
        )
        self.threads: list[threading.Thread] = []
        self.idle = 0
        self.lock = threading.Lock()

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        with self.lock:
            if self.idle:
                self.idle -= 1
            elif len(self.threads) < self.limit:
                thread = threading.Thread(target=self._work, name="protomcp-tool", daemon=True)
                self.threads.append(thread)
                thread.start()
        self.queue.put((fn, args))

    def _work(self) -> None:
        while (item := self.queue.get()) is not None:
            fn, args = item
            fn(*args)
            with self.lock:
                self.idle += 1

    def shutdown(self) -> None:
        """Wait for queued and running calls, then end the threads."""
        for _ in self.threads:
            self.queue.put(None)
        for thread in self.threads:
            thread.join()
