"""One SSE stream of a Streamable HTTP session, kept apart from the connection that carries it.

Messages are numbered and kept (bounded) until the stream is over, so a client whose connection
dropped can reconnect with ``Last-Event-ID`` and get every message it missed. Sans-IO apart
from the futures that wake the connections waiting on it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from protomcp_host.processes.loop import running_loop

KEEP = 10_000  # messages kept for resumption per stream; the oldest go first
# What a kept message costs beyond its bytes: the bytes object's header (33 bytes, rounded up by
# the allocator) and its slot in a deque.
MESSAGE_OVERHEAD = 64


def compact(data: bytes) -> bytes:
    """`data` in a block of its own size, for keeping. orjson's output keeps the buffer it was
    written in (4 KiB for a 100-byte notification, about 8 times the length of a large one):
    counted by len(), a few MiB of kept messages held hundreds."""
    return bytes(memoryview(data))


def cost(data: bytes) -> int:
    """The memory a kept (compacted) message takes."""
    return len(data) + MESSAGE_OVERHEAD


class ReplayBudget:
    """The memory stream messages one session keeps (unread, or kept for a resumption) take
    (`cost`), bounded: past `limit`, the oldest messages go, whatever their stream (never the
    newest one)."""

    def __init__(self, limit: int, on_first_drop: Callable[[], None] | None = None) -> None:
        self.limit = limit
        self.on_first_drop = on_first_drop  # called once, the first time messages go (to tell)
        self.held = 0  # bytes of messages kept
        self.count = 0  # messages kept
        self.dropped = 0  # messages dropped for the bound, ever
        self._order: deque[tuple[EventStream, int]] = deque()  # (stream, seq) in push order

    def add(self, stream: EventStream, seq: int, size: int) -> None:
        self.held += size
        self.count += 1
        self._order.append((stream, seq))
        if self.held > self.limit:
            self._trim()
        elif len(self._order) > 2 * self.count + 1024:  # entries of forgotten messages: compact
            self._order = deque(e for e in self._order if e[0].events and e[0].events[0][0] <= e[1])

    def removed(self, sizes: list[int]) -> None:
        """Messages a stream let go of by itself (its count bound, or it is over)."""
        self.held -= sum(sizes)
        self.count -= len(sizes)

    def _trim(self) -> None:
        dropped = 0
        while self.held > self.limit and len(self._order) > 1:
            stream, seq = self._order.popleft()
            if not stream.events or stream.events[0][0] != seq:
                continue  # already gone (forgotten stream, count bound)
            _, data = stream.events.popleft()
            self.held -= cost(data)
            self.count -= 1
            dropped += 1
        if dropped:
            first = not self.dropped
            self.dropped += dropped
            if first and self.on_first_drop is not None:
                self.on_first_drop()


def dropped_line(session_id: str, limit: int) -> str:
    """What the host's stderr says the first time a session drops stream messages."""
    return (
        f"protomcp: session {session_id[:8]}… dropped its oldest stream messages: more than "
        f"{limit >> 20} MiB waited for its client (reported once per session)"
    )


class EventStream:
    def __init__(self, key: str, *, keep: int = KEEP, budget: ReplayBudget | None = None) -> None:
        self.key = key  # unique within its session; event ids are "<key>-<seq>"
        self.keep = keep
        self.budget = budget  # the session's bound in bytes, shared by its streams
        self.events: deque[tuple[int, bytes]] = deque()
        self.seq = 0  # number of the last message pushed
        self.sent = 0  # highest number written to some connection
        self.done = False  # the answer that ends the stream is in
        self.closed = False  # the session ended: nothing more will come
        self.attached = 0  # generation of the connection writing it (0 = none)
        self._generation = 0
        self._waiters: list[asyncio.Future[bool]] = []  # connections waiting for a change

    def push(self, data: bytes, *, last: bool = False) -> None:
        self.seq += 1
        data = compact(data)  # (kept until written, or for a resumption)
        self.events.append((self.seq, data))
        if len(self.events) > self.keep:
            _, old = self.events.popleft()
            if self.budget is not None:
                self.budget.removed([cost(old)])
        if self.budget is not None:
            self.budget.add(self, self.seq, cost(data))
        if last:
            self.done = True
        self.wake()

    def close(self) -> None:
        self.closed = True
        self.wake()

    def release(self) -> None:
        """Nothing can be resumed here any more: let go of the messages (and their bytes)."""
        if self.budget is not None and self.events:
            self.budget.removed([cost(data) for _, data in self.events])
        self.events.clear()

    def after(self, seq: int) -> list[tuple[int, bytes]]:
        """Messages numbered above `seq`, oldest first."""
        if seq >= self.seq:
            return []
        return [event for event in self.events if event[0] > seq]

    def finished(self, cursor: int) -> bool:
        """Nothing more will be written after `cursor`."""
        # (done, and nothing after the cursor is left: sent, or dropped for the session's bound)
        return self.closed or (self.done and (cursor >= self.seq or not self.events))

    def attach(self) -> int:
        """A connection takes the stream over (a resumed connection replaces an old one)."""
        self._generation += 1
        self.attached = self._generation
        self.wake()
        return self._generation

    def detach(self, generation: int) -> None:
        if self.attached == generation:
            self.attached = 0

    def event_id(self, seq: int) -> str:
        return f"{self.key}-{seq}"

    async def wait(self, timeout: float) -> bool:
        """Until something changes (a message, the end, a takeover, `wake`) or `timeout`
        passes; False when nothing changed. (A future and a loop timer: every POST of a session
        waits here for its answer, and a cancel scope and an Event cost several times more.)"""
        loop = running_loop()
        waiter: asyncio.Future[bool] = loop.create_future()
        self._waiters.append(waiter)
        timer = loop.call_later(timeout, _settle, waiter, False)
        try:
            return await waiter
        finally:
            timer.cancel()
            if waiter in self._waiters:  # (its time passed, or its task was cancelled)
                self._waiters.remove(waiter)

    def wake(self) -> None:
        """Wake whoever waits: the stream changed, or something outside it (the client left)."""
        waiters = self._waiters
        if waiters:
            self._waiters = []
            for waiter in waiters:
                _settle(waiter, True)


def _settle(waiter: asyncio.Future[bool], changed: bool) -> None:
    if not waiter.done():
        waiter.set_result(changed)


def parse_event_id(value: str) -> tuple[str, int] | None:
    key, _, seq = value.rpartition("-")
    if not key or not seq.isdigit():
        return None
    return key, int(seq)


def sse_event(event_id: str, data: bytes) -> bytes:
    """One SSE event; our messages are one line of JSON each, so one data field is enough."""
    return b"event: message\nid: " + event_id.encode() + b"\ndata: " + data + b"\n\n"


def sse_priming(event_id: str, retry_ms: int) -> bytes:
    """An event with an id and no data: the client has an id to resume from at once."""
    return b"id: " + event_id.encode() + b"\nretry: " + str(retry_ms).encode() + b"\ndata: \n\n"


KEEP_ALIVE = b": keep-alive\n\n"
