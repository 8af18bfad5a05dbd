"""Which peer request runs next when a host is at its in-flight limit (sans-IO).

Requests beyond the limit wait in a queue ordered by priority (urgent, high, normal, low) and,
within one priority, by arrival (FIFO)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Generic, TypeVar

from protomcp_host.peers.messages import PRIORITY_RANK, MessagePriority

T = TypeVar("T")


class PriorityGate(Generic[T]):
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.running = 0
        self._queue: list[tuple[int, int, T]] = []
        self._arrival = itertools.count()

    def __len__(self) -> int:
        """Requests waiting."""
        return len(self._queue)

    def submit(self, priority: MessagePriority, item: T) -> T | None:
        """`item` when it may start now (it counts as running), else None (it waits)."""
        if self.running < self.limit and not self._queue:
            self.running += 1
            return item
        heapq.heappush(self._queue, (PRIORITY_RANK[priority], next(self._arrival), item))
        return None

    def finish(self) -> T | None:
        """One running request ended: the next to start (it counts as running), if any."""
        if self._queue:
            return heapq.heappop(self._queue)[2]
        self.running -= 1
        return None

    def discard(self, predicate: Callable[[T], bool]) -> list[T]:
        """Take the waiting requests for which predicate(item) is true out of the queue."""
        kept: list[tuple[int, int, T]] = []
        dropped: list[tuple[int, int, T]] = []
        for entry in self._queue:
            (dropped if predicate(entry[2]) else kept).append(entry)
        self._queue = kept
        heapq.heapify(self._queue)
        return [entry[2] for entry in dropped]
