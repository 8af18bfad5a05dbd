"""The sync worker threads (protomcp_sdk.runtime.threads): a call never waits while a thread
could be started, per-tool fairness, and the share that keeps a stuck tool from taking them all."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from protomcp_sdk.runtime.threads import SyncWorkers

WAIT = 10.0  # seconds: a bound on waiting for an event, never a measured time


class _WakeSpy:
    """Wraps the workers' condition: tells the test when a thread has gone idle (waits)."""

    def __init__(self, condition: threading.Condition) -> None:
        self.condition = condition
        self.waits = 0
        self.changed = threading.Condition()

    def wait(self, *args: Any) -> bool:
        with self.changed:
            self.waits += 1
            self.changed.notify_all()
        return self.condition.wait(*args)

    def notify(self, n: int = 1) -> None:
        self.condition.notify(n)

    def notify_all(self) -> None:
        self.condition.notify_all()

    def until_waits(self, count: int) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.waits >= count, WAIT)


@pytest.fixture
def workers() -> Iterator[SyncWorkers]:
    pool = SyncWorkers(limit=8, share=4)
    yield pool
    pool.close()


def test_a_call_next_to_a_woken_thread_gets_its_own_thread(workers: SyncWorkers) -> None:
    spy = _WakeSpy(workers._wake)
    workers._wake = spy  # type: ignore[assignment]
    warm = threading.Event()
    workers.submit("quick", warm.set)
    assert warm.wait(WAIT)
    assert spy.until_waits(1)  # one idle thread
    release, quick_done = threading.Event(), threading.Event()
    # Back to back: the idle thread is woken for the first; it has not run yet when the second
    # arrives, and must count as busy, so the second starts a thread of its own.
    workers.submit("slow", release.wait, WAIT)
    workers.submit("quick", quick_done.set)
    try:
        assert quick_done.wait(WAIT), "the quick call waited behind the slow one"
    finally:
        release.set()
    assert len(workers.threads) == 2


def test_many_back_to_back_calls_each_get_a_thread(workers: SyncWorkers) -> None:
    release = threading.Event()
    started = threading.Semaphore(0)

    def hold() -> None:
        started.release()
        release.wait(WAIT)

    try:
        for i in range(8):
            workers.submit(f"tool{i}", hold)  # 8 tools, 8 threads: none waits
        for _ in range(8):
            assert started.acquire(timeout=WAIT)
    finally:
        release.set()


def test_a_stuck_tool_keeps_to_its_share(workers: SyncWorkers) -> None:
    release = threading.Event()
    stuck = threading.Semaphore(0)
    other = threading.Event()

    def hang() -> None:
        stuck.release()
        release.wait(WAIT)

    try:
        for _ in range(10):  # more than its share (4): the rest queue
            workers.submit("stuck", hang)
        for _ in range(4):
            assert stuck.acquire(timeout=WAIT)
        workers.submit("other", other.set)
        assert other.wait(WAIT)  # another tool still gets a thread
        assert workers.running_count() == 4
        assert not stuck.acquire(timeout=0)  # the fifth stuck call has not started
    finally:
        release.set()
    for _ in range(6):  # the held-back calls run as their share frees up
        assert stuck.acquire(timeout=WAIT)


def test_round_robin_across_tools_when_all_threads_are_busy() -> None:
    pool = SyncWorkers(limit=1, share=1)
    order: list[str] = []
    gate = threading.Event()
    done = threading.Event()
    try:
        pool.submit("a", gate.wait, WAIT)
        for name in ("a1", "a2", "a3"):
            pool.submit("a", order.append, name)
        pool.submit("b", order.append, "b1")
        pool.submit("b", lambda: (order.append("b2"), done.set()))
        gate.set()
        assert done.wait(WAIT)
        # b's first call did not wait for all of a's backlog
        assert order.index("b1") < order.index("a3")
    finally:
        gate.set()
        pool.close()
