"""What the playground page is told, in order: a bounded, numbered record of events that a
page replays after a reload and then follows live (server-sent events). Sans-IO apart from
the wake-up event; every record is encoded once, when it is added."""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import anyio
import orjson

MAX_RECORDS = 5000
MAX_BYTES = 32 * 1024 * 1024  # the oldest records go first past this


class Journal:
    def __init__(self, max_records: int = MAX_RECORDS, max_bytes: int = MAX_BYTES) -> None:
        self.max_records = max_records
        self.max_bytes = max_bytes
        self.seq = 0  # number of the last record added
        self.records: deque[tuple[int, bytes]] = deque()
        self.size = 0
        self.closed = False
        self._added = anyio.Event()

    def add(self, kind: str, **data: Any) -> int:
        """Record one event; `data` may hold orjson.Fragment values (already encoded JSON)."""
        self.seq += 1
        record = orjson.dumps({"seq": self.seq, "t": time.time() * 1000, "kind": kind, **data})
        self.records.append((self.seq, record))
        self.size += len(record)
        while self.records and (len(self.records) > self.max_records or self.size > self.max_bytes):
            self.size -= len(self.records.popleft()[1])
        self._added.set()
        self._added = anyio.Event()
        return self.seq

    def since(self, seq: int) -> list[tuple[int, bytes]]:
        """The records after `seq` still kept, oldest first (read from the newest end: a live
        stream asks for the few records just added)."""
        out = []
        for n, record in reversed(self.records):
            if n <= seq:
                break
            out.append((n, record))
        out.reverse()
        return out

    async def wait(self, seq: int) -> None:
        """Return once a record after `seq` exists or the journal is closed."""
        added = self._added
        if self.seq > seq or self.closed:
            return
        await added.wait()

    def close(self) -> None:
        """No more records: waiters return (their streams end)."""
        self.closed = True
        self._added.set()


def message(data: bytes, limit: int = 1 << 20) -> Any:
    """An MCP message for a record: as is (a Fragment) when it is JSON, else its text; a
    message over `limit` bytes is cut (the client's own messages can be anything)."""
    if len(data) > limit:
        return {"truncated": len(data), "head": data[:4096].decode("utf-8", "replace")}
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return data.decode("utf-8", "replace")
    return orjson.Fragment(data)
