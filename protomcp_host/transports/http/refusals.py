"""Refused access tokens, reported on the host's stderr: each with its reason, rate-limited.

A refused caller learns only that its token is not valid; the operator needs to know why (an
expired token, another server's audience, a rotated key, an unreachable introspection endpoint).
Within each window of `every` seconds the first `burst` refusals are each written in full; the
rest are counted by kind and written as one line when the window ends. So a flood of bad tokens
costs a few lines a minute, and no refusal goes unaccounted for. A token is named by a short
fingerprint of its hash, never by itself.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import Counter
from collections.abc import Callable

REPORT_EVERY = 60.0  # seconds: the window
REPORT_BURST = 10  # refusals written one by one per window; beyond, counted


class TokenRefused(Exception):
    """A token this server does not accept. `kind` is a short fixed label ("expired", "wrong
    audience", ...) that summaries count by; the message says the details."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind


def fingerprint(token: str) -> str:
    """Names a token in logs without revealing it: the start of its SHA-256."""
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()[:12]


class RefusalLog:
    def __init__(
        self,
        log: Callable[[str], None],
        every: float = REPORT_EVERY,
        burst: int = REPORT_BURST,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log = log
        self.every = every
        self.burst = burst
        self.clock = clock
        self._window_start = float("-inf")
        self._written = 0  # refusals written in full in this window
        self._held: Counter[str] = Counter()  # refusals by kind not written one by one
        self._timer: asyncio.TimerHandle | None = None

    def refused(self, token: str, kind: str, detail: str) -> None:
        now = self.clock()
        if now - self._window_start >= self.every:
            self.flush()
            self._window_start = now
        if self._written < self.burst:
            self._written += 1
            self.log(f"protomcp: refused an access token ({fingerprint(token)}): {detail[:300]}")
            return
        self._held[kind] += 1
        if self._timer is None:
            self._flush_when_the_window_ends(self._window_start + self.every - now)

    def flush(self) -> None:
        """Write what this window held back, if anything, and start counting anew."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._held:
            kinds = ", ".join(f"{count} {kind}" for kind, count in self._held.most_common())
            total = sum(self._held.values())
            self.log(
                f"protomcp: refused {total} more access token{'s' if total > 1 else ''} in "
                f"{self.every:g}s, beyond the {self.burst} reported one by one: {kinds}"
            )
        self._held.clear()
        self._written = 0
        self._window_start = float("-inf")

    def _flush_when_the_window_ends(self, delay: float) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a unit test): the next refusal after the window flushes
            return
        self._timer = loop.call_later(max(delay, 0.0), self.flush)
