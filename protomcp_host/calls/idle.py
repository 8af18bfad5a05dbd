"""Whether a router has something running, for a drain that waits until nothing does.

Kept apart from the router's event handling: the drain (shutdown, an HTTP session's end)
is the only reader, and a call's end is the only writer.
"""

from __future__ import annotations

import asyncio


class IdleWatch:
    """A router's busy flag and the event its drain waits on (made only while someone waits)."""

    __slots__ = ("_event", "busy")

    def __init__(self) -> None:
        self.busy = False  # a call runs (or a request waits for its answer)
        self._event: asyncio.Event | None = None  # made for wait() while busy; set once idle

    def mark_busy(self) -> None:
        """Something runs now: wait() waits for it."""
        self.busy = True

    def now_idle(self) -> None:
        self.busy = False
        if self._event is not None:
            self._event.set()  # (the waiters wake)
            self._event = None

    async def wait(self) -> None:
        """Return once nothing runs."""
        if self.busy:
            if self._event is None:
                self._event = asyncio.Event()
            await self._event.wait()
