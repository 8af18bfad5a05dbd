"""Call timeouts on a shared tick: one loop timer per tick, however many calls run.

A deadline is rounded up to the next tick (never early, at most TICK late), and the calls
due on one tick share one TimerHandle. Adding and removing a call are dict operations,
where a TimerHandle per call costs a heap push, a cancel and the loop's sweep of the
cancelled handle on every call. A tick left empty is cancelled, except the newest one
(calls keep arriving in it), so an idle host keeps at most one pending wake-up.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Hashable

from protomcp_host.processes.loop import running_loop

TICK = 0.1  # seconds; timeouts are whole seconds in practice, so 100 ms late is nothing


class Deadlines:
    def __init__(self, tick: float = TICK) -> None:
        self.tick = tick
        self._loop: asyncio.AbstractEventLoop | None = None
        self._due: dict[int, dict[Hashable, Callable[[], None]]] = {}
        self._handles: dict[int, asyncio.TimerHandle] = {}
        self._newest = 0

    def add(self, key: Hashable, delay: float, fire: Callable[[], None]) -> int:
        """Call fire() once `delay` seconds have passed, unless `remove(key, tick)` comes
        first; returns the tick to remove it with."""
        loop = self._loop
        if loop is None or not loop.is_running():  # (its loop still runs: the one running here)
            loop = running_loop()
            if loop is not self._loop:  # a new loop: what the old one had scheduled is gone
                self._loop, self._due, self._handles = loop, {}, {}
        tick = math.ceil((loop.time() + delay) / self.tick)
        bucket = self._due.get(tick)
        if bucket is None:
            bucket = self._due[tick] = {}
            self._handles[tick] = loop.call_at(tick * self.tick, self._fire, tick)
            self._newest = max(self._newest, tick)
        bucket[key] = fire
        return tick

    def remove(self, key: Hashable, tick: int) -> None:
        bucket = self._due.get(tick)
        if bucket is None:
            return
        bucket.pop(key, None)
        if not bucket and tick != self._newest:
            del self._due[tick]
            self._handles.pop(tick).cancel()

    def _fire(self, tick: int) -> None:
        self._handles.pop(tick, None)
        for fire in list(self._due.pop(tick, {}).values()):
            fire()
