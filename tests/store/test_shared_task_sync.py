"""After a break of the store's bus, copies of other hosts' tasks settle before tasks/* answers
from them (issue 37 item 10(b)): the settle state machine (shared/task_sync.py) given the time,
and SharedTasks on two "hosts" whose links to one in-memory "Redis" go down and come back, the
one before the other, without processes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from protomcp_host.calls.tasks import TaskRunner
from protomcp_host.protocol.session import ToolAnswer
from protomcp_host.protocol.tasks import Task, TaskStore
from protomcp_host.shared import tasks as shared_tasks
from protomcp_host.shared.task_sync import TaskSync
from protomcp_host.store.base import DISCONNECTED, RECONNECTED, Handler, StoreError
from protomcp_host.store.memory import MemoryStore
from tests.calls.test_task_runner import FakeDispatcher, FakeRouter
from tests.protocol.test_modern_tasks import create, make

pytestmark = pytest.mark.fast  # starts no process


# -- the state machine -------------------------------------------------------------------
def test_a_sync_ends_when_every_expected_host_sent_its_marker_since_the_bus_came_back() -> None:
    sync = TaskSync(within=5)
    assert not sync.unsettled
    sync.broke(["a", "b"])
    sync.broke(["a"])  # (one break, told twice)
    assert sync.expected == {"a", "b"}
    assert sync.unsettled and sync.deadline() is None and not sync.due(100)
    sync.marker("a")  # (heard while broken: nothing comes through a broken bus)
    sync.back(10)
    assert sync.unsettled and sync.deadline() == 15
    sync.marker("a")
    assert not sync.due(11)
    sync.expect(["c"])  # a liveness record in the store
    sync.marker("b")
    assert not sync.due(11)
    sync.marker("c")
    assert sync.due(11)
    sync.settled()
    assert not sync.unsettled and not sync.due(12)
    sync.expect(["d"])  # (settled: nothing to wait for)
    assert sync.expected == set()


def test_a_sync_ends_in_time_without_a_host_gone_meanwhile() -> None:
    sync = TaskSync(within=5)
    sync.broke(["gone"])
    sync.back(10)
    assert not sync.due(14.9) and sync.due(15)


def test_a_sync_waits_longer_for_a_host_alive_since_the_bus_came_back() -> None:
    """Its heartbeat came since: its marker is late (its store writes, under load), not lost.
    Settling without it read the store before it wrote there, and served its tasks' old state."""
    sync = TaskSync(within=5)
    sync.broke(["slow", "gone"])
    sync.heartbeat("slow")  # (heard while broken: says nothing of now)
    sync.back(10)
    assert sync.alive == set() and sync.deadline() == 15
    sync.heartbeat("slow")
    assert sync.deadline() == 20 and not sync.due(15) and not sync.due(19.9)
    sync.marker("slow")  # its marker came: only the gone host is left, for the first bound
    assert sync.deadline() == 15 and sync.due(15)
    sync.settled()
    sync.broke(["slow"])
    sync.back(30)
    sync.heartbeat("slow")
    assert sync.due(40)  # (alive or not, a sync ends twice `within` after the bus came back)


def test_a_break_during_a_sync_starts_it_again_and_keeps_whom_it_waits_for() -> None:
    sync = TaskSync(within=5)
    sync.broke(["a", "b"])
    sync.back(10)
    sync.marker("a")
    sync.broke(["c"])
    assert sync.expected == {"a", "b", "c"} and sync.heard == set() and sync.deadline() is None
    sync.back(20)
    for host in ("a", "b"):
        sync.marker(host)
    assert not sync.due(21)  # (c too)
    sync.marker("c")
    assert sync.due(21)


def test_a_new_break_waits_only_for_the_hosts_heard_before_it() -> None:
    sync = TaskSync(within=5)
    sync.broke(["a"])
    sync.back(0)
    sync.marker("a")
    sync.settled()
    sync.broke(["b"])
    sync.back(10)
    sync.marker("b")
    assert sync.due(10)


# -- SharedTasks on two hosts ------------------------------------------------------------
class Redis:
    """One store for every link: its records; it can restart empty."""

    def __init__(self) -> None:
        self.memory = MemoryStore()
        self.links: list[Link] = []

    def restart_empty(self) -> None:
        self.memory = MemoryStore()


class Link:
    """One host's connection to Redis (a Store): while down its commands fail, what it publishes
    is lost, and it hears nothing; it tells its host DISCONNECTED and RECONNECTED."""

    url = "redis://test"

    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self.down = False
        self.deaf = False  # its bus hears nothing, and nothing says so (a silent break)
        self.handlers: list[Handler] = []
        redis.links.append(self)

    def subscribe(self, handler: Handler) -> None:
        self.handlers.append(handler)

    def publish(self, topic: str, payload: bytes) -> None:
        if not self.down:
            for link in self.redis.links:
                link.deliver(topic, payload)

    def deliver(self, topic: str, payload: bytes) -> None:
        if not self.down and not self.deaf:
            for handler in self.handlers:
                handler(topic, payload)

    def go_down(self) -> None:
        self.down = True
        for handler in self.handlers:
            handler(DISCONNECTED, b"")

    def come_back(self) -> None:
        self.down = False
        for handler in self.handlers:
            handler(RECONNECTED, b"")

    def _store(self) -> MemoryStore:
        if self.down:
            raise StoreError("down")
        return self.redis.memory

    async def put(self, key: str, value: bytes, ttl: float, *, final: bool = False) -> bytes | None:
        return await self._store().put(key, value, ttl, final=final)

    async def get(self, key: str) -> bytes | None:
        return await self._store().get(key)

    async def delete(self, key: str) -> None:
        await self._store().delete(key)

    async def scan(self, prefix: str) -> list[tuple[str, bytes]]:
        return await self._store().scan(prefix)


class Host:
    def __init__(self, redis: Redis, name: str) -> None:
        self.link = Link(redis)
        self.store = TaskStore()
        self.dispatcher = FakeDispatcher()
        self.runner = TaskRunner(self.store, self.dispatcher, lambda: [])  # type: ignore[arg-type]
        self.reports: list[str] = []
        self.shared = shared_tasks.SharedTasks(self.link, self.store, self.runner, self.reports.append, name)  # type: ignore[arg-type]
        self.link.subscribe(self.shared.on_bus)

    def start_task(self) -> tuple[Task, Any]:
        """A task whose call runs here (as a tools/call of alice's makes it)."""
        session = make(self.store)
        session.tasks.now = time.time()  # (its record is written for the task's ttl from now)
        _, call = create(session)
        self.runner.start(call, FakeRouter(session))  # type: ignore[arg-type]
        assert call.task is not None
        return call.task, self.dispatcher.sinks[-1]


@pytest.fixture
def hosts() -> Iterator[tuple[Redis, Host, Host]]:
    redis = Redis()
    yield redis, Host(redis, "a"), Host(redis, "b")


async def until(check: Any, timeout: float = 5) -> None:
    """Until check() holds; the hosts' own loops run meanwhile (they are driven by the clock)."""
    with anyio.fail_after(timeout):
        while not check():
            await anyio.sleep(0.01)


async def test_a_request_waiting_on_a_copy_gets_the_completion_missed_in_an_outage(
    hosts: tuple[Redis, Host, Host],
) -> None:
    redis, a, b = hosts
    async with anyio.create_task_group() as tg:
        await tg.start(a.shared.run)
        await tg.start(b.shared.run)
        task, sink = a.start_task()
        await until(lambda: task.id in b.store.tasks and "a" in b.shared.seen and "b" in a.shared.seen)
        copy = b.store.tasks[task.id]
        for host in (a, b):
            host.link.go_down()
        redis.restart_empty()
        assert b.store.unsettled and a.store.unsettled
        sink.call_answered(sink.call, ToolAnswer([b"[]"], trusted=True))  # completes on A meanwhile
        answered: list[str] = []
        b.shared.when_settled(lambda: answered.append(copy.status))
        a.link.come_back()  # A first: what it re-publishes now is lost to B
        await until(lambda: not a.link.down and a.shared.sync.back_at is not None)
        await anyio.sleep(0.1)
        assert answered == [] and copy.status == "working" and a.store.unsettled  # (A waits for B)
        b.link.come_back()  # B asks; A answers with its tasks, then its marker
        await until(lambda: answered != [])
        assert answered == ["completed"]
        await until(lambda: not a.store.unsettled and not b.store.unsettled)
        assert await redis.memory.get(f"task:{task.id}") is not None  # (written again)
        tg.cancel_scope.cancel()


async def test_a_task_made_in_an_outage_is_found_once_settled_not_missing_before(
    hosts: tuple[Redis, Host, Host],
) -> None:
    _, a, b = hosts
    async with anyio.create_task_group() as tg:
        await tg.start(a.shared.run)
        await tg.start(b.shared.run)
        await until(lambda: "a" in b.shared.seen and "b" in a.shared.seen)
        for host in (a, b):
            host.link.go_down()
        task, _ = a.start_task()
        found: list[bool] = []
        b.shared.when_settled(lambda: found.append(task.id in b.store.tasks))
        b.link.come_back()  # B first this time: A answers B's ask once A is back
        await anyio.sleep(0.1)
        assert found == []
        a.link.come_back()
        await until(lambda: found != [])
        assert found == [True]
        tg.cancel_scope.cancel()


async def test_without_a_host_gone_in_the_outage_a_sync_ends_in_time(
    hosts: tuple[Redis, Host, Host],
) -> None:
    _, a, b = hosts
    b.shared.sync.within = 0.3
    async with anyio.create_task_group() as tg:
        await tg.start(a.shared.run)
        await tg.start(b.shared.run)
        await until(lambda: "a" in b.shared.seen)
        b.link.go_down()
        a.link.go_down()  # (and never comes back)
        answered = anyio.Event()
        b.shared.when_settled(answered.set)
        b.link.come_back()
        with anyio.fail_after(5):
            await answered.wait()
        assert not b.store.unsettled
        tg.cancel_scope.cancel()


async def test_a_request_waits_at_most_its_bound_during_a_long_outage(
    hosts: tuple[Redis, Host, Host], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, b = hosts
    monkeypatch.setattr(shared_tasks, "WAIT_AT_MOST", 0.3)
    async with anyio.create_task_group() as tg:
        await tg.start(b.shared.run)
        b.link.go_down()
        answered = anyio.Event()
        b.shared.when_settled(answered.set)
        with anyio.fail_after(5):
            await answered.wait()  # answered with what it knows, the outage going on
        assert b.store.unsettled
        tg.cancel_scope.cancel()
    later: list[int] = []
    b.shared.when_settled(lambda: later.append(1))  # (stopped: nothing waits any more)
    assert later == [1]


async def test_a_silent_break_is_found_by_the_hosts_own_heartbeats(
    hosts: tuple[Redis, Host, Host], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No DISCONNECTED, no RECONNECTED: B's bus hears nothing for a while. B's own heartbeats
    not coming back make its copies unsettled; when they come back, it syncs as after a break."""
    _, a, b = hosts
    monkeypatch.setattr(shared_tasks, "HEARTBEAT", 0.05)
    monkeypatch.setattr(shared_tasks, "BROKEN_AFTER", 0.15)
    async with anyio.create_task_group() as tg:
        await tg.start(a.shared.run)
        await tg.start(b.shared.run)
        task, sink = a.start_task()
        await until(lambda: task.id in b.store.tasks and "a" in b.shared.seen)
        copy = b.store.tasks[task.id]
        b.link.deaf = True
        await until(lambda: b.store.unsettled)
        sink.call_answered(sink.call, ToolAnswer([b"[]"], trusted=True))  # B misses it
        answered: list[str] = []
        b.shared.when_settled(lambda: answered.append(copy.status))
        await anyio.sleep(0.1)
        assert answered == [] and copy.status == "working"
        b.link.deaf = False
        await until(lambda: answered != [])
        assert answered == ["completed"] and not b.store.unsettled
        tg.cancel_scope.cancel()
