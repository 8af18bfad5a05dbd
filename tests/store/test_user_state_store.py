"""The store's user-state operations (ctx.user_state's storage): the same tests for the memory
store and Redis (a real redis-server); two handles on one store stand for two hosts."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
import redis.asyncio

from tests.store import test_store
from tests.store.test_store import Pair

handles = test_store.handles  # the fixture: memory, and two handles on a real redis-server


async def test_a_value_set_through_one_handle_is_read_and_deleted_through_the_other(handles: Pair) -> None:
    async with handles() as (a, b):
        assert await b.user_get("s1", "k") is None
        assert await a.user_set("s1", "k", b'{"n":1}', None, 10)
        assert await b.user_get("s1", "k") == b'{"n":1}'
        assert await b.user_set("s1", "k", b"2", None, 10)  # replaced
        assert await a.user_get("s1", "k") == b"2"
        assert await b.user_delete("s1", "k") is True
        assert await a.user_get("s1", "k") is None
        assert await a.user_delete("s1", "k") is False


async def test_spaces_are_apart(handles: Pair) -> None:
    async with handles() as (a, b):
        await a.user_set("s1", "k", b"1", None, 1)
        await a.user_set("s2", "k", b"2", None, 1)  # s1 is full; s2 is not s1
        assert await b.user_get("s1", "k") == b"1" and await b.user_get("s2", "k") == b"2"
        await b.user_delete("s2", "k")
        assert await a.user_get("s1", "k") == b"1"


async def test_values_expire(handles: Pair) -> None:
    async with handles() as (a, b):
        await a.user_set("s", "brief", b"1", 0.1, 10)
        await a.user_set("s", "kept", b"2", None, 10)
        with anyio.fail_after(10):
            while await b.user_get("s", "brief") is not None:
                await anyio.sleep(0.02)
        assert await b.user_get("s", "kept") == b"2"
        assert await b.user_delete("s", "brief") is False


async def test_the_key_bound_counts_live_keys_only(handles: Pair) -> None:
    async with handles() as (a, b):
        assert await a.user_set("s", "one", b"1", None, 2)
        assert await b.user_set("s", "two", b"2", 0.1, 2)
        assert not await a.user_set("s", "three", b"3", None, 2)  # full: nothing stored
        assert await b.user_get("s", "three") is None
        assert await a.user_set("s", "one", b"11", None, 2)  # a key it holds may be replaced
        with anyio.fail_after(10):  # "two" expires, and its place is free again
            while not await b.user_set("s", "three", b"3", None, 2):
                await anyio.sleep(0.02)
        assert await a.user_delete("s", "one")
        assert await a.user_set("s", "four", b"4", None, 2)  # a deleted key's place is free too
        assert await b.user_get("s", "four") == b"4"


async def test_the_key_bound_holds_under_concurrent_sets_from_two_handles(handles: Pair) -> None:
    async with handles() as (a, b):
        results: list[bool] = []

        async def put(store: object, name: str) -> None:
            results.append(await store.user_set("s", name, b"1", None, 5))  # type: ignore[attr-defined]

        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(put, a if i % 2 else b, f"k{i}")
        assert results.count(True) == 5
        assert sum([await a.user_get("s", f"k{i}") is not None for i in range(20)]) == 5


async def test_redis_keeps_the_index_as_long_as_its_longest_lived_value(redis_url: str) -> None:
    from protomcp_host.store.redis_store import RedisStore

    store = RedisStore(redis_url, print)
    raw = redis.asyncio.Redis.from_url(redis_url)
    try:
        values, index = store._user_keys("s")
        await store.user_set("s", "a", b"1", 30, 10)
        await store.user_set("s", "b", b"1", 60, 10)
        assert 30_000 < await raw.pttl(index) <= 60_000  # the longest ttl
        assert 0 < await raw.pttl(values + "a") <= 30_000
        await store.user_set("s", "c", b"1", None, 10)
        assert await raw.pttl(index) == -1 and await raw.pttl(values + "c") == -1  # kept until deleted
        await raw.delete(values + "a")  # a value gone without its index entry (evicted)
        assert await store.user_set("s", "d", b"1", None, 3)  # 3 names listed, 2 of them live
        assert await store.user_get("s", "d") == b"1"
    finally:
        await raw.aclose()
        await store._client.aclose()


async def test_more_requests_at_once_than_connections_wait_their_turn(handles: Pair) -> None:
    """A tool that asks for thousands of values at once (or as many limited calls at once) once
    met "Too many connections" past the client's 100: every request beyond failed, everyone
    else's user state failed with them, and rate limits went uncounted."""
    import asyncio

    async with handles() as (a, b):
        await a.user_set("s", "k", b"1", None, 10)
        got = await asyncio.gather(*(b.user_get("s", "k") for _ in range(500)))
        assert got == [b"1"] * 500
        waits = await asyncio.gather(*(a.take(f"rate:{i % 7}", 1000, 60.0) for i in range(500)))
        assert waits == [0.0] * 500


async def test_the_longest_ttl_is_kept(handles: Pair) -> None:
    """Every store holds a value for the longest ttl the host lets through."""
    from protomcp_sdk.wire.user_state import MAX_TTL

    async with handles() as (a, b):
        assert await a.user_set("s", "k", b"1", MAX_TTL, 10)
        assert await b.user_get("s", "k") == b"1"


async def test_the_memory_store_keeps_a_bounded_total_of_user_state(monkeypatch: Any) -> None:
    """Each signed-in user may hold 1,000 values of 64 KiB: with the memory store, enough users
    (an open GitHub sign-in) once filled the host's memory without end."""
    from protomcp_host.store import memory
    from protomcp_host.store.base import StoreError

    monkeypatch.setattr(memory, "USER_BYTES", 1000, raising=False)
    store = memory.MemoryStore()
    value = b"x" * 99  # (99 bytes and a one-character name: 100 a value)
    for user in range(10):
        assert await store.user_set(f"user{user}", "k", value, None, 1000)
    with pytest.raises(StoreError, match="at most 0 MiB of user state"):
        await store.user_set("user10", "k", value, None, 1000)
    assert await store.user_set("user3", "k", b"y" * 99, None, 1000)  # replacing grows nothing
    assert await store.user_delete("user3", "k")
    assert await store.user_set("user10", "k", value, 0.05, 1000)  # a deleted value's room is free
    with anyio.fail_after(10):  # and an expired one's
        while await store.user_get("user10", "k") is not None:
            await anyio.sleep(0.02)
    assert await store.user_set("user11", "k", value, None, 1000)
