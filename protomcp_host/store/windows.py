"""Sliding-window logs in this host's memory: the memory store's rate limits. Each key keeps the
times of the calls it admitted in its window (at most `limit` of them), so a call is admitted
exactly when fewer than `limit` were admitted in the `window` seconds before it. Keys whose
window has passed are dropped when the map grows, so it stays bounded by the keys in use."""

from __future__ import annotations

import time
from collections import deque

SWEEP_AT = 10_000  # keys before the idle ones are swept (then again at twice those still in use)


class SlidingLogs:
    __slots__ = ("_logs", "_sweep_at")

    def __init__(self) -> None:
        self._logs: dict[str, tuple[float, deque[float]]] = {}  # key -> (window, admitted times)
        self._sweep_at = SWEEP_AT

    def take(self, key: str, limit: int, window: float) -> float:
        """0.0: admitted (and counted); otherwise the seconds until a call would be."""
        now = time.monotonic()
        entry = self._logs.get(key)
        if entry is None or entry[0] != window:
            if len(self._logs) >= self._sweep_at:
                self._sweep(now)
            entry = self._logs[key] = (window, deque())
        log = entry[1]
        edge = now - window
        while log and log[0] <= edge:
            log.popleft()
        while len(log) > limit:  # (the limit was lowered: a reload, another --rate-limit)
            log.popleft()
        if len(log) < limit:
            log.append(now)
            return 0.0
        return log[0] - edge

    def _sweep(self, now: float) -> None:
        for key in [k for k, (window, log) in self._logs.items() if not log or log[-1] <= now - window]:
            del self._logs[key]
        self._sweep_at = max(SWEEP_AT, 2 * len(self._logs))
