"""The store's rate-limit counts (Store.take, take_now): a sliding-window log per key, the same
for the in-memory store and Redis (a real redis-server; two handles stand for two hosts)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
import redis.asyncio

from protomcp_host.store.base import Store, StoreError
from protomcp_host.store.memory import MemoryStore
from protomcp_host.store.open import open_store
from protomcp_host.store.windows import SWEEP_AT, SlidingLogs


@pytest.fixture(params=["memory", "redis"])
def store_url(request: pytest.FixtureRequest) -> str | None:
    return None if request.param == "memory" else str(request.getfixturevalue("redis_url"))


@asynccontextmanager
async def two_handles(url: str | None) -> AsyncIterator[tuple[Store, Store]]:
    first = open_store(url, print)
    second = first if url is None else open_store(url, print)
    async with anyio.create_task_group() as tg:
        await tg.start(first.run)
        if second is not first:
            await tg.start(second.run)
        yield first, second
        tg.cancel_scope.cancel()


async def test_exactly_the_limit_is_admitted_under_concurrency_through_both_handles(
    store_url: str | None,
) -> None:
    async with two_handles(store_url) as (a, b):
        waits: list[float] = []

        async def take(store: Store) -> None:
            waits.append(await store.take("rate:60:t:alice", 7, 60.0))

        async with anyio.create_task_group() as tg:
            for i in range(60):
                tg.start_soon(take, a if i % 2 else b)
        assert len(waits) == 60 and waits.count(0.0) == 7
        assert all(0 < wait <= 60.0 for wait in waits if wait)
        assert await a.take("rate:60:t:bob", 7, 60.0) == 0.0  # another key: its own count


async def test_the_window_slides(store_url: str | None) -> None:
    async with two_handles(store_url) as (a, b):
        assert [await a.take("k", 2, 0.3) for _ in range(3)][:2] == [0.0, 0.0]
        wait = await b.take("k", 2, 0.3)
        assert 0 < wait <= 0.3
        with anyio.fail_after(10):  # admitted again once the window has passed
            while await b.take("k", 2, 0.3) != 0.0:
                await anyio.sleep(0.02)


async def test_a_redis_log_lapses_with_its_window(redis_url: str) -> None:
    async with two_handles(redis_url) as (a, _):
        assert await a.take("rate:1:t:carol", 3, 0.5) == 0.0
        raw = redis.asyncio.Redis.from_url(redis_url)
        try:
            key = "protomcp:rate:1:t:carol"
            assert 0 < await raw.pttl(key) <= 500
            with anyio.fail_after(10):
                while await raw.exists(key):
                    await anyio.sleep(0.05)
            await raw.script_flush()  # a Redis that lost its scripts: loaded again (EVALSHA fallback)
            assert await a.take("rate:1:t:carol", 3, 0.5) == 0.0
        finally:
            await raw.aclose()


async def test_a_store_that_cannot_answer_says_so() -> None:
    store = open_store("redis://127.0.0.1:1/0", print)  # (nothing listens on port 1)
    with pytest.raises(StoreError, match="cannot count a rate limit"):
        await store.take("k", 1, 1.0)


def test_the_memory_store_answers_at_once() -> None:
    store = MemoryStore()
    assert store.take_now("k", 1, 60.0) == 0.0
    wait = store.take_now("k", 1, 60.0)
    assert wait is not None and 59 < wait <= 60.0


def test_the_memory_logs_stay_bounded() -> None:
    logs = SlidingLogs()
    for i in range(SWEEP_AT + 5):  # keys whose window has passed go when the map grows
        logs.take(f"k{i}", 1, 1e-9)
    assert len(logs._logs) < SWEEP_AT
    logs.take("lowered", 10, 60.0)
    for _ in range(9):
        logs.take("lowered", 10, 60.0)
    assert logs.take("lowered", 3, 60.0) > 0 and len(logs._logs["lowered"][1]) == 3
