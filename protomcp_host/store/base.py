"""The store interface every host part uses: small on purpose, so that the in-memory and the
Redis implementation pass the same tests (tests/store/test_store.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import anyio
import anyio.abc

Handler = Callable[[str, bytes], None]
"""Receives one bus message: (topic, payload). Called on the event loop; must not block."""

DISCONNECTED = "store:disconnected"
"""A topic no host publishes: the store tells its own subscribers (payload b"") that its bus
broke (once per break): what the others publish from now on is lost to this host until
RECONNECTED."""

RECONNECTED = "store:reconnected"
"""A topic no host publishes: the store tells its own subscribers (payload b"") that its bus
works again after a break, so they re-read what they may have missed and re-share their own."""


class StoreError(Exception):
    """The store cannot be reached or refused an operation; the message says which."""


class Store(Protocol):
    url: str  # what --store named (secrets removed), for messages

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Connect, then deliver bus messages to subscribers until cancelled. Raises StoreError
        before `task_status.started()` when the store cannot be reached."""

    async def ping(self) -> bool:
        """Reachable now (readiness)."""

    def subscribe(self, handler: Handler) -> None:
        """`handler` gets every message published from now on, by any host (this one too),
        DISCONNECTED when the bus breaks, and RECONNECTED when it works again after a break
        (messages of the break are lost). The memory store never breaks."""

    def publish(self, topic: str, payload: bytes) -> None:
        """Send a message to every host's subscribers; never blocks (sent in order, in the
        background; while the store is unreachable messages wait, up to a bound, and are sent
        once it is back; beyond the bound they are dropped and reported)."""

    async def state_key(self) -> bytes:
        """The 32-byte key that seals requestState, the same on every host of this store: read
        on every call, and created if absent (with the key this handle read before, if any, so
        a key that vanished comes back unchanged)."""

    async def put(self, key: str, value: bytes, ttl: float, *, final: bool = False) -> bytes | None:
        """Store `value` under `key` for `ttl` seconds (> 0); None once stored. A final record
        is never replaced: a later put of its key (final or not) stores nothing and returns it."""

    async def get(self, key: str) -> bytes | None:
        """The live record under `key` (None: none)."""

    async def delete(self, key: str) -> None:
        """Drop the record under `key` (none there: nothing happens)."""

    async def scan(self, prefix: str) -> list[tuple[str, bytes]]:
        """Every live record whose key starts with `prefix` (a host that starts loads them)."""

    # -- per-principal user state (ctx.user_state) ----------------------------------------------
    # A principal's keys live in its own space (`space`: a name without ':' the caller derives
    # from the principal), apart from every other space and from the records above.

    async def user_get(self, space: str, name: str) -> bytes | None:
        """The live value of `name` in `space` (None: none, or it expired)."""

    async def user_set(self, space: str, name: str, value: bytes, ttl: float | None, max_keys: int) -> bool:
        """Keep `value` under `name` in `space`, for `ttl` seconds (None: until deleted). False,
        and nothing stored, when `space` holds `max_keys` live names and `name` is not one of
        them. Atomic: concurrent sets from several hosts never take a space beyond `max_keys`.
        Raises StoreError when the store cannot keep it (unreachable; the memory store full)."""

    async def user_delete(self, space: str, name: str) -> bool:
        """Drop `name` from `space`; True if it held a live value."""

    # -- rate limits (calls/limits.py): a sliding-window log per key ---------------------------
    def take_now(self, key: str, limit: int, window: float) -> float | None:
        """`take` answered at once when this store can (its memory): 0.0 or the seconds to
        wait; None when it needs a round trip (then await `take`)."""

    async def take(self, key: str, limit: int, window: float) -> float:
        """One call under `key`, admitted (0.0, and counted) when fewer than `limit` were
        admitted in the `window` seconds before it, by any host of the store; otherwise the
        seconds until one would be (nothing counted). Exact under concurrency; the key lapses
        once its window passes. Raises StoreError when the store cannot answer."""
