"""Rate limits for what tool processes say: printed output (stdout → info, stderr → warning)
and log messages reach a session's client through that session's own limiter."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

LEVELS = {"stdout": "info", "stderr": "warning"}


class TokenBucket:
    """Allows `burst` events at once and `rate` per second after that."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens = float(burst)
        self.stamp = clock()

    def take(self) -> bool:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


class LogLimiter:
    """Rate-limits the log messages a tool process sends (ctx.log), as printed output is:
    a tool logging in a tight loop cannot flood the client."""

    def __init__(self, label: str, bucket: TokenBucket | None = None) -> None:
        self.label = label
        self.bucket = bucket or TokenBucket(rate=50, burst=200)
        self.dropped = 0

    def allow(self, sink: Callable[[str, str, Any], None]) -> bool:
        """True when this message may go to `sink`; reports drops through `sink` itself."""
        if not self.bucket.take():
            if not self.dropped:
                sink("warning", self.label, "(too many log messages: dropping some for a while)")
            self.dropped += 1
            return False
        if self.dropped:
            sink("warning", self.label, f"({self.dropped} log messages not forwarded: too many)")
            self.dropped = 0
        return True
