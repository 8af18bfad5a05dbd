"""The default store: this host's memory. The bus delivers at once, the state key is made here
(or taken from PROTOMCP_STATE_KEY by the caller), records and user-state values expire by their
deadline."""

from __future__ import annotations

import math
import os
import time

import anyio
import anyio.abc

from protomcp_host.store.base import Handler, StoreError
from protomcp_host.store.windows import SlidingLogs

USER_BYTES = 256 * 1024 * 1024  # user-state values (and names) this host's memory keeps, all users together


def _full() -> str:
    return (
        f"this host keeps at most {USER_BYTES // (1024 * 1024)} MiB of user state in its memory, and "
        "that is held: the operator can give it a shared store (--store redis://...)"
    )


class MemoryStore:
    url = "memory"

    def __init__(self) -> None:
        self._handlers: list[Handler] = []
        self._key: bytes | None = None
        self._records: dict[str, tuple[bytes, float, bool]] = {}  # key -> (value, deadline, final)
        self._user: dict[str, dict[str, tuple[bytes, float]]] = {}  # space -> name -> (value, deadline)
        self._user_sets = 0
        self._user_bytes = 0  # of the values and names in _user (at most USER_BYTES)
        self._rates = SlidingLogs()
        # rate limits (calls/limits.py), counted at once: the logs' own method (every limited
        # call asks; a method of this class around it would be one more frame each time)
        self.take_now = self._rates.take

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()

    async def ping(self) -> bool:
        return True

    def subscribe(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def publish(self, topic: str, payload: bytes) -> None:
        for handler in self._handlers:
            handler(topic, payload)

    async def state_key(self) -> bytes:
        if self._key is None:
            self._key = os.urandom(32)
        return self._key

    async def put(self, key: str, value: bytes, ttl: float, *, final: bool = False) -> bytes | None:
        self._sweep()
        now = time.monotonic()
        current = self._records.get(key)
        if current is not None and current[2] and current[1] > now:
            return current[0]
        self._records[key] = (value, now + ttl, final)
        return None

    async def get(self, key: str) -> bytes | None:
        record = self._records.get(key)
        return record[0] if record is not None and record[1] > time.monotonic() else None

    async def delete(self, key: str) -> None:
        self._records.pop(key, None)

    async def scan(self, prefix: str) -> list[tuple[str, bytes]]:
        now = time.monotonic()
        records = self._records.items()
        return [(k, v) for k, (v, deadline, _) in records if k.startswith(prefix) and deadline > now]

    def _sweep(self) -> None:
        now = time.monotonic()
        if len(self._records) > 1000:  # (amortised: expired records go when the map grows)
            for key in [k for k, (_, deadline, _) in self._records.items() if deadline <= now]:
                del self._records[key]

    # -- per-principal user state (ctx.user_state) ----------------------------------------------
    async def user_get(self, space: str, name: str) -> bytes | None:
        entry = self._user.get(space, {}).get(name)
        if entry is None or entry[1] <= time.monotonic():
            return None
        return entry[0]

    async def user_set(self, space: str, name: str, value: bytes, ttl: float | None, max_keys: int) -> bool:
        now = time.monotonic()
        names = self._user.setdefault(space, {})
        current = names.get(name)
        if (current is None or current[1] <= now) and len(names) >= max_keys:
            for expired in [key for key, (_, deadline) in names.items() if deadline <= now]:
                self._drop(names, expired)
            if len(names) >= max_keys:
                return False
        # Each signed-in user may hold MAX_KEYS values: many users would fill the host's memory.
        grows = len(value) - (len(current[0]) if current is not None else -len(name))
        if self._user_bytes + grows > USER_BYTES:
            self._user_sweep(now)  # (what expired unread makes room first)
            current = names.get(name)
            grows = len(value) - (len(current[0]) if current is not None else -len(name))
            if self._user_bytes + grows > USER_BYTES:
                if not names:
                    self._user.pop(space, None)
                raise StoreError(_full())
            self._user[space] = names  # (the sweep drops a space it left empty)
        names[name] = (value, now + ttl if ttl else math.inf)
        self._user_bytes += grows
        self._user_sets += 1
        if self._user_sets % 1000 == 0:  # (amortised: what expired unread goes, empty spaces too)
            self._user_sweep(now)
        return True

    async def user_delete(self, space: str, name: str) -> bool:
        names = self._user.get(space)
        if names is None or name not in names:
            return False
        entry = names[name]
        self._drop(names, name)
        if not names:
            del self._user[space]
        return entry[1] > time.monotonic()

    def _drop(self, names: dict[str, tuple[bytes, float]], name: str) -> None:
        self._user_bytes -= len(names.pop(name)[0]) + len(name)

    def _user_sweep(self, now: float) -> None:
        for space in list(self._user):
            names = self._user[space]
            for expired in [key for key, (_, deadline) in names.items() if deadline <= now]:
                self._drop(names, expired)
            if not names:
                del self._user[space]

    # -- rate limits (calls/limits.py) ---------------------------------------------------------
    async def take(self, key: str, limit: int, window: float) -> float:
        return self._rates.take(key, limit, window)
