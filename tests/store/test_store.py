"""The store interface (protomcp_host/store): the same tests for the in-memory store and for
Redis (a real redis-server). Two handles on one store stand for two hosts sharing it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from protomcp_host.store.base import Store, StoreError
from protomcp_host.store.memory import MemoryStore
from protomcp_host.store.open import open_store

Pair = Callable[[], Any]


@pytest.fixture(params=["memory", "redis"])
def handles(request: pytest.FixtureRequest) -> Pair:
    """Opens two running handles on one store (the same object for memory)."""
    url = None if request.param == "memory" else request.getfixturevalue("redis_url")

    @asynccontextmanager
    async def opened() -> AsyncIterator[tuple[Store, Store]]:
        first = open_store(url, print)
        second = first if url is None else open_store(url, print)
        async with anyio.create_task_group() as tg:
            await tg.start(first.run)
            if second is not first:
                await tg.start(second.run)
            yield first, second
            tg.cancel_scope.cancel()

    return opened


async def test_the_bus_reaches_every_handle_in_order(handles: Pair) -> None:
    async with handles() as (a, b):
        got: dict[str, list[tuple[str, bytes]]] = {"a": [], "b": []}
        done = anyio.Event()

        def on(name: str) -> Callable[[str, bytes], None]:
            def handler(topic: str, payload: bytes) -> None:
                got[name].append((topic, payload))
                if all(len(v) == 3 for v in got.values()):
                    done.set()

            return handler

        a.subscribe(on("a"))
        if b is not a:
            b.subscribe(on("b"))
        else:
            got.pop("b")
        for i in range(3):  # (one publisher's messages keep their order)
            b.publish("resource_updated", f"uri{i}".encode())
        with anyio.fail_after(10):
            await done.wait()
        for seen in got.values():
            assert seen == [("resource_updated", f"uri{i}".encode()) for i in range(3)]


async def test_one_state_key_for_every_handle(handles: Pair) -> None:
    async with handles() as (a, b):
        key = await a.state_key()
        assert len(key) == 32 and await b.state_key() == key and await a.state_key() == key


async def test_records_expire_and_are_found_by_prefix(handles: Pair) -> None:
    async with handles() as (a, b):
        await a.put("task:1", b"one", ttl=60)
        await a.put("task:2", b"two", ttl=0.05)
        await a.put("other", b"x", ttl=60)
        await b.put("task:[*]", b"literal", ttl=60)  # a pattern character in a key is no pattern
        with anyio.fail_after(10):
            while ("task:2", b"two") in await b.scan("task:"):
                await anyio.sleep(0.02)
        assert sorted(await a.scan("task:")) == [("task:1", b"one"), ("task:[*]", b"literal")]
        assert await b.get("task:1") == b"one" and await b.get("task:2") is None
        assert await b.get("task:") is None  # (a key, not a prefix)
        assert await a.scan("task:[") == [("task:[*]", b"literal")]
        await a.put("task:1", b"uno", ttl=60)  # a record is replaced
        assert ("task:1", b"uno") in await b.scan("task:1")
        assert await a.ping()


async def test_an_unreachable_redis_is_a_clear_startup_error() -> None:
    from tests.support.cluster import free_port

    store = open_store(f"redis://127.0.0.1:{free_port()}/0", print)
    with pytest.raises(StoreError, match="cannot reach the store redis://"):
        await store.run()


def test_store_urls() -> None:
    assert isinstance(open_store(None, print), MemoryStore)
    assert isinstance(open_store("memory", print), MemoryStore)
    with pytest.raises(StoreError, match="expected redis://"):
        open_store("postgres://x", print)
    assert open_store("redis://:secret@127.0.0.1:1/0", print).url == "redis://:***@127.0.0.1:1/0"


def test_a_host_whose_store_is_unreachable_does_not_start() -> None:
    import subprocess
    import sys

    from tests.support.cluster import free_port
    from tests.support.hosts import TOOLS

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "protomcp_host",
            "run",
            str(TOOLS / "scale" / "cpu.py"),
            "--transport",
            "http",
            "--port",
            "0",
            "--store",
            f"redis://127.0.0.1:{free_port()}/0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1 and "cannot reach the store redis://127.0.0.1:" in done.stderr, done.stderr


async def test_a_final_record_is_never_replaced(handles: Pair) -> None:
    async with handles() as (a, b):
        assert await a.put("task:f", b"working", ttl=60) is None
        assert await b.put("task:f", b"failed", ttl=60, final=True) is None
        assert await a.put("task:f", b"completed", ttl=60, final=True) == b"failed"  # (two hosts' verdicts)
        assert await a.put("task:f", b"working", ttl=60) == b"failed"
        assert await b.scan("task:f") == [("task:f", b"failed")]
        await a.delete("task:f")
        await a.delete("task:f")  # (nothing there: nothing happens)
        assert await b.scan("task:f") == []


def _redis(url: str) -> Any:
    import redis.asyncio

    return redis.asyncio.Redis.from_url(url)


async def test_deployments_on_other_databases_or_prefixes_are_apart(redis_url: str) -> None:
    base = redis_url.rsplit("/", 1)[0]
    urls = [f"{base}/0", f"{base}/1", f"{base}/0?prefix=staging"]
    stores = [open_store(url, print) for url in urls]
    got: list[list[bytes]] = [[] for _ in stores]
    arrived = anyio.Event()
    async with anyio.create_task_group() as tg:
        for i, store in enumerate(stores):
            await tg.start(store.run)
            store.subscribe(lambda topic, payload, i=i: (got[i].append(payload), arrived.set()))
        for i, store in enumerate(stores):
            await store.put("task:1", f"record {i}".encode(), ttl=60)
            assert await store.state_key() != await stores[i - 1].state_key()
        for i, store in enumerate(stores):
            arrived = anyio.Event()
            store.publish("task_cancel", f"from {i}".encode())
            with anyio.fail_after(10):
                await arrived.wait()
        for i, store in enumerate(stores):
            store.publish("alive", b"end")  # (so a message that crossed over would have come by now)
            with anyio.fail_after(10):
                while got[i][-1:] != [b"end"]:
                    await anyio.sleep(0.01)
            assert got[i] == [f"from {i}".encode(), b"end"]
            assert await store.scan("task:") == [("task:1", f"record {i}".encode())]
        tg.cancel_scope.cancel()
    assert open_store(urls[2], print).url == urls[2]


async def test_a_dropped_connection_loses_no_write_and_the_bus_comes_back(redis_url: str) -> None:
    from protomcp_host.store.base import DISCONNECTED, RECONNECTED

    a, b = open_store(redis_url, print), open_store(redis_url, print)
    got: list[tuple[str, bytes]] = []
    changed = anyio.Event()

    def on(topic: str, payload: bytes) -> None:
        got.append((topic, payload))
        changed.set()

    async def kill(kind: str) -> None:
        admin = _redis(redis_url)
        assert await admin.client_kill_filter(_type=kind, skipme=True) >= 1
        await admin.aclose()

    async def until(want: tuple[str, bytes]) -> None:
        nonlocal changed
        with anyio.fail_after(10):
            while want not in got:
                await changed.wait()
                changed = anyio.Event()

    async with anyio.create_task_group() as tg:
        await tg.start(a.run)
        await tg.start(b.run)
        b.subscribe(on)
        await a.put("task:1", b"working", ttl=60)
        await kill("normal")  # the connections that write and publish
        await a.put("task:1", b"completed", ttl=60)  # sent again on a new connection
        assert await b.scan("task:") == [("task:1", b"completed")]
        a.publish("task", b"completed")
        await until(("task", b"completed"))
        await kill("pubsub")  # the connections that listen: b hears that it missed messages
        await until((RECONNECTED, b""))
        breaks = [topic for topic, _ in got if topic in (DISCONNECTED, RECONNECTED)]
        assert breaks == [DISCONNECTED, RECONNECTED]  # (once per break, before it is over)
        a.publish("task", b"after")
        await until(("task", b"after"))
        tg.cancel_scope.cancel()


async def test_the_state_key_comes_back_unchanged_when_it_vanishes(redis_url: str) -> None:
    a, b = open_store(redis_url, print), open_store(redis_url, print)
    key = await a.state_key()
    admin = _redis(redis_url)
    assert await admin.delete(*[k async for k in admin.scan_iter(match="*state-key")]) == 1
    await admin.aclose()
    assert await a.state_key() == key  # (created if absent: with the key read before)
    assert await b.state_key() == key


@pytest.mark.parametrize(
    "prefix", ["protomcp:task:staging", "a:b", "protomcp", "", "spaces here", "x" * 65, "staging&prefix=two"]
)
def test_a_prefix_that_could_overlap_another_deployments_keys_is_refused(prefix: str) -> None:
    from urllib.parse import quote

    with pytest.raises(StoreError, match="prefix"):
        open_store(f"redis://127.0.0.1:1/0?prefix={quote(prefix, safe='&=')}", print)
    for good in ("staging", "team-a.prod_2"):
        assert open_store(f"redis://127.0.0.1:1/0?prefix={good}", print).url.endswith(good)
