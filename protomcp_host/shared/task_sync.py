"""Whether this host's copies of the other hosts' tasks can be trusted (shared/tasks.py), sans-IO:
the caller gives it the time and what the bus brings.

While the store's bus works, a copy is as new as the bus (milliseconds behind). When it breaks,
what the others publish meanwhile is lost to this host, so a copy may be behind: the view is
*unsettled* from the break until every host this one expects (those it heard shortly before the
break, and those with a liveness record in the store) has sent a sync marker since this host's
bus came back. A host sends its marker right after re-publishing its own tasks (and writing the
final records it knows to the store), and the bus keeps one host's messages in order: its marker
means its tasks are here. A host gone meanwhile never sends one, so a sync also ends
`within` seconds after the bus came back; but a host whose heartbeat came since is alive, and
busy (its writes to a store just back may take a while), so for its marker the sync waits twice
as long. The caller then reads the store once more and calls `settled()`.
"""

from __future__ import annotations

from collections.abc import Iterable

SETTLE_WITHIN = 5.0  # seconds after the bus came back by which a sync ends, every marker or not


class TaskSync:
    def __init__(self, within: float = SETTLE_WITHIN) -> None:
        self.within = within
        self.broken = False  # the bus is broken now
        self.back_at: float | None = None  # (monotonic) when the bus came back; None: no sync under way
        self.expected: set[str] = set()  # hosts whose marker this sync waits for
        self.heard: set[str] = set()  # hosts whose marker came since the bus came back
        self.alive: set[str] = set()  # hosts whose heartbeat came since the bus came back

    @property
    def unsettled(self) -> bool:
        return self.broken or self.back_at is not None

    def broke(self, recent: Iterable[str]) -> None:
        """The bus broke (or is still broken); `recent`: the other hosts heard shortly before."""
        if not self.unsettled:
            self.expected = set()
        self.expected.update(recent)  # (a break during a sync: those not heard yet still count)
        self.heard = set()
        self.back_at = None
        self.broken = True

    def back(self, now: float) -> None:
        """The bus works again (subscribed again): markers heard from now on count."""
        self.broken = False
        self.back_at = now
        self.heard = set()
        self.alive = set()

    def expect(self, hosts: Iterable[str]) -> None:
        """More hosts this sync waits for (liveness records found in the store)."""
        if self.unsettled:
            self.expected.update(hosts)

    def marker(self, host: str) -> None:
        """`host`'s sync marker came: its tasks (published before it) are here."""
        if self.back_at is not None:
            self.heard.add(host)

    def heartbeat(self, host: str) -> None:
        """`host`'s heartbeat came: it is alive, its marker will come."""
        if self.back_at is not None:
            self.alive.add(host)

    def deadline(self) -> float | None:
        """When the sync under way ends anyway (None: none under way, or the bus is broken):
        `within` after the bus came back, twice that while a host it waits for is alive."""
        if self.back_at is None:
            return None
        waiting_alive = (self.expected - self.heard) & self.alive
        return self.back_at + (2 * self.within if waiting_alive else self.within)

    def due(self, now: float) -> bool:
        """The sync under way may end: every expected host was heard, or its time is up."""
        if self.back_at is None:
            return False
        ends = self.deadline()
        return self.expected <= self.heard or (ends is not None and now >= ends)

    def settled(self) -> None:
        """The caller read the store after `due`: the copies are as new as the bus again."""
        self.back_at = None
        self.expected = set()
        self.heard = set()
