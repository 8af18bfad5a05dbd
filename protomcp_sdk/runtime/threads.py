"""Worker threads for sync tools."""

from __future__ import annotations

import sys
import threading
import traceback
from collections import deque
from collections.abc import Callable

SYNC_WORKERS = 64
"""Threads for sync calls at most, across all tools of the process."""

TOOL_SHARE = 48
"""Threads one tool may occupy at most: the rest stay free for the other tools, so a slow
(or stuck) tool never starves a fast one."""

Job = tuple[Callable[..., None], tuple[object, ...]]


class CallThreads:
    """Threads for sync tools: started on demand, reused, at most `limit` at once.

    Calls queue per tool and threads take them round-robin across tools, so a backlog of
    slow calls to one tool does not delay a call to another. Leaner than concurrent.futures
    (no Future per call): sync calls report their own result.

    A call never waits while a thread could be started. A job is "runnable" when its tool is
    under its share. `idle` counts the threads waiting and not yet woken; `searching` the threads
    woken or started that have not taken a job yet (busy: about to run work, never counted as
    idle). While a runnable job is queued, a thread is searching (or all `limit` threads are
    busy): a call that finds none wakes or starts one; a searching thread that takes a job
    wakes or starts the next if runnable jobs remain (so a quick call queued right after a slow
    one gets a thread of its own, not the one that took the slow call). One searcher at a time,
    as Go's scheduler does: a burst of quick calls is mostly taken by threads finishing their
    previous call, without a wake-up (or a new thread) per call.

    Once `read_with` is called the threads also read the input, one at a time (leader and
    followers): the reader blocks for input and queues the calls it brings; if it brought one
    runnable call and another thread can read next, it hands the reading on and runs the call
    itself. A quick call then costs no hand-off to a sleeping thread: the thread that woke for
    the input answers it, while the next reader wakes beside it."""

    def __init__(self, limit: int = SYNC_WORKERS, share: int = TOOL_SHARE) -> None:
        self.limit = limit
        self.share = min(share, limit)
        self.lock = threading.Lock()
        self._wake = threading.Condition(self.lock)
        self.pending: dict[str, deque[Job]] = {}  # per tool; dict order is the round-robin order
        self.running: dict[str, int] = {}
        self.threads: list[threading.Thread] = []
        self.idle = 0
        self.searching = 0
        self.closing = False
        self.read: Callable[[], bool] | None = None  # the input, once the threads read it
        self.reader_free = False  # nobody reads: the next thread to look takes the reading

    def read_with(self, read: Callable[[], bool]) -> None:
        """From now on the threads read the input with `read`: it blocks until input comes,
        queues the calls it brought (`queue`) and returns False once the input has ended."""
        with self.lock:
            self.read = read
            self.reader_free = True
            if not self.searching:
                self._add_searcher()

    def queue(self, key: str, fn: Callable[..., None], *args: object) -> None:
        """Queue fn(*args) from the reading thread, which decides after its read who runs it."""
        with self.lock:
            self._queue(key, (fn, args))

    def submit(self, key: str, fn: Callable[..., None], *args: object) -> None:
        """Run fn(*args) in a call thread; `key` (the tool name) is the unit of fairness."""
        with self.lock:
            queued = self._queue(key, (fn, args))
            if self.searching or self.running.get(key, 0) + queued > self.share:
                return  # a searching thread takes it (and wakes the next), or its share is full
            self._add_searcher()

    def _queue(self, key: str, job: Job) -> int:
        """Queue a job (lock held); how many of its tool's jobs are queued."""
        queue = self.pending.get(key)
        if queue is None:
            queue = self.pending[key] = deque()
        queue.append(job)
        return len(queue)

    def _add_searcher(self) -> None:
        """Wake an idle thread, or start one, to take a runnable job (lock held)."""
        if self.idle:
            self.idle -= 1
            self.searching += 1
            self._wake.notify()
        elif len(self.threads) < self.limit:
            self.searching += 1
            thread = threading.Thread(target=self._work, name="protomcp-tool", daemon=True)
            self.threads.append(thread)
            thread.start()

    def _runnable(self) -> bool:
        """Some queued job's tool is under its share (lock held)."""
        return any(self.running.get(key, 0) < self.share for key in self.pending)

    def running_count(self) -> int:
        with self.lock:
            return sum(self.running.values())

    def _take(self) -> tuple[str, Job] | None:
        """The next job, round-robin over the tools under their share (lock held)."""
        for key, queue in self.pending.items():
            if self.running.get(key, 0) < self.share:
                job = queue.popleft()
                del self.pending[key]
                if queue:
                    self.pending[key] = queue  # to the back of the line
                self.running[key] = self.running.get(key, 0) + 1
                return key, job
        return None

    def _work(self) -> None:
        with self.lock:
            searching = True  # started (or woken) to take the reading or a job
            while True:
                if self.reader_free and self.read is not None:
                    self.reader_free = False
                    if searching:
                        searching = False
                        self.searching -= 1
                        if not self.searching and self._runnable():
                            self._add_searcher()  # the jobs still queued get a thread of their own
                    if not self._read():
                        continue  # read again, or the input ended
                taken = self._take()
                if searching:
                    searching = False
                    self.searching -= 1
                    if taken is not None and self.pending and not self.searching and self._runnable():
                        self._add_searcher()  # the next runnable job gets a thread of its own
                if taken is None:
                    if self.closing:
                        return
                    self.idle += 1
                    self._wake.wait()
                    searching = True  # whoever woke us moved us from `idle` to `searching`
                    continue
                key, (fn, args) = taken
                self.lock.release()
                try:
                    fn(*args)
                except BaseException:  # fn answers its own errors; this is a bug, not the tool's
                    traceback.print_exc(file=sys.stderr)
                finally:
                    self.lock.acquire()
                self.running[key] -= 1
                if not self.running[key]:
                    del self.running[key]
                # Loop: take the next runnable job (one held back by the share may now be one).

    def _read(self) -> bool:
        """Read once, as the reader (lock held; released while reading). True when this thread
        is to run the one job its read queued: the reading is free again and a thread is on its
        way to take it. False when it reads again itself (no runnable job, a burst of them, or
        no thread to read next) or the input has ended."""
        read = self.read
        assert read is not None
        self.lock.release()
        try:
            more = read()
        except BaseException:  # read reports its own errors; this is a bug: stop reading
            traceback.print_exc(file=sys.stderr)
            more = False
        finally:
            self.lock.acquire()
        if not more or self.closing:
            self.read = None
            return False
        self.reader_free = True
        if not self._runnable():
            return False
        if not self.searching:
            if not self.idle and len(self.threads) >= self.limit:
                return False  # every thread is busy: keep reading; they take the jobs as they finish
            self._add_searcher()
        # One call: run it here. A burst (pipelined calls): the threads take it, as they would
        # from the loop, while this one keeps reading (measured: a few % more calls/s).
        return sum(map(len, self.pending.values())) == 1

    def close(self) -> None:
        """Let the threads end once the queue is empty (they are daemons: stuck ones do not
        keep the process alive)."""
        with self.lock:
            self.closing = True
            self.searching += self.idle
            self.idle = 0
            self._wake.notify_all()
