"""`--store URL` → a Store."""

from __future__ import annotations

from collections.abc import Callable

from protomcp_host.store.base import Store, StoreError
from protomcp_host.store.memory import MemoryStore


def open_store(url: str | None, report: Callable[[str], None]) -> Store:
    """The store `url` names: None or "memory" for this host's memory, redis://HOST:PORT/DB
    (or rediss://, unix://) for Redis, with `?prefix=NAME` to keep deployments that share one
    database apart. Raises StoreError for anything else."""
    if url is None or url == "memory":
        return MemoryStore()
    if url.startswith(("redis://", "rediss://", "unix://")):
        try:
            from protomcp_host.store.redis_store import RedisStore
        except ImportError:
            raise StoreError(
                "--store redis://... needs the redis client: pip install 'protomcp-tools[redis]'"
            ) from None
        return RedisStore(url, report)
    raise StoreError(f"--store {url}: expected redis://HOST:PORT/DB (or memory)")
