"""The authorization server's records in the --store: JSON under `oauth:<kind>:<id>`, each with
a lifetime, and the bounds on how fast each kind may be created (so that nothing grows without
limit under a flood: at most `limit` records per `window`, each living its TTL)."""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass
from typing import Any

import orjson

from protomcp_host.store.base import Store

PREFIX = "oauth:"

# Lifetimes (seconds)
PENDING_TTL = 600.0  # an authorization from the consent page through the provider's sign-in
CODE_TTL = 60.0  # an authorization code
FAMILY_TTL = 30 * 86400.0  # a refresh-token family (one sign-in), renewed by each refresh
CLIENT_TTL = 30 * 86400.0  # a dynamic registration, renewed by each token it gets
CIMD_MIN_TTL, CIMD_MAX_TTL = 60.0, 3600.0  # a fetched client metadata document, cached
USED_TTL = 300.0  # the mark that a code or refresh token was redeemed (races between hosts)


@dataclass(frozen=True)
class Rate:
    """At most `limit` new records per `window` seconds, over every host of the store."""

    kind: str
    limit: int
    window: float


AUTHORIZATIONS = Rate("authorizations", 1000, 60.0)  # consent pages shown (pending records)
REGISTRATIONS = Rate("registrations", 100, 3600.0)  # dynamic client registrations
CIMD_FETCHES = Rate("cimd-fetches", 300, 60.0)  # metadata documents fetched (not cached)
SLOT_TRIES = 8  # random slots tried before a rate counts as used up


def digest(secret: str) -> str:
    """How a secret (code, refresh token) is named in the store: never the secret itself."""
    return hashlib.sha256(secret.encode()).hexdigest()


class Records:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def put(self, kind: str, name: str, value: dict[str, Any], ttl: float) -> None:
        await self.store.put(f"{PREFIX}{kind}:{name}", orjson.dumps(value), ttl)

    async def put_first(self, kind: str, name: str, value: dict[str, Any], ttl: float) -> dict[str, Any]:
        """Store `value` unless a record is there already (from any host); the record that is
        kept, which is `value` when this call stored it."""
        kept = await self.store.put(f"{PREFIX}{kind}:{name}", orjson.dumps(value), ttl, final=True)
        return value if kept is None else orjson.loads(kept)

    async def claim(self, kind: str, name: str, ttl: float) -> bool:
        """True for the first caller on any host (a code or refresh token redeemed once)."""
        return await self.store.put(f"{PREFIX}{kind}:{name}", b"1", ttl, final=True) is None

    async def get(self, kind: str, name: str) -> dict[str, Any] | None:
        raw = await self.store.get(f"{PREFIX}{kind}:{name}")
        if raw is None:
            return None
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None

    async def delete(self, kind: str, name: str) -> None:
        await self.store.delete(f"{PREFIX}{kind}:{name}")

    async def take_slot(self, rate: Rate) -> bool:
        """One of the `rate.limit` creations of this window, claimed atomically in the store;
        False when none of a few random free ones could be had (the bound is never exceeded;
        near it, creations are refused a little early)."""
        window = int(time.time() // rate.window)
        for slot in random.sample(range(rate.limit), min(SLOT_TRIES, rate.limit)):
            if await self.claim(f"slot:{rate.kind}:{window}", str(slot), rate.window):
                return True
        return False
