"""The sync call threads (protomcp_sdk.runtime.threads): a call never waits while a thread
could be started, per-tool fairness, and the share that keeps a stuck tool from taking them all."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from protomcp_sdk.runtime.threads import CallThreads

pytestmark = pytest.mark.fast  # starts no process

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
def workers() -> Iterator[CallThreads]:
    pool = CallThreads(limit=8, share=4)
    yield pool
    pool.close()


def test_a_call_next_to_a_woken_thread_gets_its_own_thread(workers: CallThreads) -> None:
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


def test_many_back_to_back_calls_each_get_a_thread(workers: CallThreads) -> None:
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


def test_a_stuck_tool_keeps_to_its_share(workers: CallThreads) -> None:
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
    pool = CallThreads(limit=1, share=1)
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


# -- the threads read the input in turn (read_with) -------------------------------------


class _Input:
    """A fake input for read_with: each put() is what one read brings (jobs to queue), None
    ends the input. Records which thread made each read."""

    def __init__(self, pool: CallThreads) -> None:
        self.pool = pool
        self.reads: queue.Queue[list[tuple[str, Any]] | None] = queue.Queue()
        self.readers: list[int] = []
        self.waiting = threading.Semaphore(0)  # released each time a thread starts a read

    def put(self, *jobs: tuple[str, Any]) -> None:
        self.reads.put(list(jobs))

    def read(self) -> bool:
        self.readers.append(threading.get_ident())
        self.waiting.release()
        jobs = self.reads.get(timeout=WAIT)
        if jobs is None:
            return False
        for key, fn in jobs:
            self.pool.queue(key, fn)
        return True


def test_the_thread_that_reads_a_call_runs_it() -> None:
    pool = CallThreads(limit=4, share=4)
    feed = _Input(pool)
    ran_on: list[int] = []
    done = threading.Event()
    try:
        pool.read_with(feed.read)
        assert feed.waiting.acquire(timeout=WAIT)
        feed.put(("echo", lambda: (ran_on.append(threading.get_ident()), done.set())))
        assert done.wait(WAIT)
        assert ran_on == [feed.readers[0]]  # no hand-off: the reader ran it
        assert feed.waiting.acquire(timeout=WAIT)  # and the reading goes on (by whichever thread
        # looks first: the one it woke, or this one if its call was over by then)
    finally:
        feed.reads.put(None)
        pool.close()


def test_a_burst_goes_to_the_threads_while_the_reader_reads_on() -> None:
    pool = CallThreads(limit=4, share=4)
    feed = _Input(pool)
    ran_on: list[int] = []
    done = threading.Semaphore(0)

    def record() -> None:
        ran_on.append(threading.get_ident())
        done.release()

    try:
        pool.read_with(feed.read)
        feed.put(("echo", record), ("echo", record))
        for _ in range(2):
            assert done.acquire(timeout=WAIT)
        assert feed.waiting.acquire(timeout=WAIT) and feed.waiting.acquire(timeout=WAIT)
        assert feed.readers[1] == feed.readers[0]  # the reader read on
        assert feed.readers[0] not in ran_on
    finally:
        feed.reads.put(None)
        pool.close()


def test_a_slow_call_brought_by_a_read_does_not_stop_the_reading() -> None:
    pool = CallThreads(limit=4, share=4)
    feed = _Input(pool)
    release, quick = threading.Event(), threading.Event()
    try:
        pool.read_with(feed.read)
        feed.put(("slow", lambda: release.wait(WAIT)))
        feed.put(("quick", quick.set))
        assert quick.wait(WAIT), "the quick call waited behind the slow one"
        assert not release.is_set()
    finally:
        release.set()
        feed.reads.put(None)
        pool.close()


def test_with_every_thread_busy_the_reader_keeps_reading_and_queues() -> None:
    pool = CallThreads(limit=2, share=2)
    feed = _Input(pool)
    release = threading.Event()
    started = threading.Semaphore(0)
    second = threading.Event()

    def hold() -> None:
        started.release()
        release.wait(WAIT)

    try:
        pool.read_with(feed.read)
        feed.put(("a", hold))  # runs on the reader; the other thread reads next
        assert started.acquire(timeout=WAIT)
        feed.put(("b", second.set))  # no third thread may start: it is queued, not run here
        for _ in range(3):  # the reads so far, and the one after: nobody stopped reading
            assert feed.waiting.acquire(timeout=WAIT)
        assert len(feed.readers) == 3 and feed.readers[1] == feed.readers[2]
        assert not second.is_set()
        release.set()  # the busy thread takes the queued call once free
        assert second.wait(WAIT)
    finally:
        release.set()
        feed.reads.put(None)
        pool.close()


def test_the_end_of_input_ends_the_reading() -> None:
    pool = CallThreads(limit=4, share=4)
    spy = _WakeSpy(pool._wake)
    pool._wake = spy  # type: ignore[assignment]
    feed = _Input(pool)
    try:
        pool.read_with(feed.read)
        assert feed.waiting.acquire(timeout=WAIT)
        feed.reads.put(None)
        assert spy.until_waits(1)  # the reader went idle
        assert pool.read is None and len(feed.readers) == 1
        done = threading.Event()
        pool.submit("after", done.set)  # the threads still run calls
        assert done.wait(WAIT)
        assert len(feed.readers) == 1  # and nobody reads any more
    finally:
        pool.close()
