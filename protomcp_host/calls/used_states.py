"""Each requestState is used once (the 2026-07-28 round trip, calls/rounds.py).

A second use of a state (a client's network retry, a replay, two retries at once) gets what the
first use answered (the JSON after the request id), or waits for it, or is refused saying why
there is none; the call never runs a second time for it. Uses are kept by the state's
suspension id until the state expires (at most ``MAX_USED``; ``REPLAY_BYTES`` of answers).
Each use and each first outcome go on a bus (``publish``; what comes back: ``heard``), so every
host sharing it knows of the others' uses and a second use anywhere gets the first answer (up
to ``MAX_SHARED``). The bus is a few milliseconds late (more when it is busy): with hosts sharing
a store, a state's first use here is only a candidate until it is claimed in the store
(``claim``, an atomic write that one use of the state wins: shared_uses.py), which decides.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

MAX_USED = 50_000  # requestStates remembered as used; beyond it the oldest are forgotten
REPLAY_BYTES = 16 << 20  # bytes of first answers kept for second uses; beyond: "it was used"
MAX_SHARED = 64 * 1024  # bytes of a first answer other hosts are told (beyond: that it is not kept)
ROUND_USED = "round_used"  # bus topics: a requestState was used (the holder lets its call go),
ROUND_ANSWERED = "round_answered"  # and what its first use came to (for a second use elsewhere)

Waiter = Callable[[bytes | None, str], None]
"""A second use of a requestState waiting for the first one's answer (or why there is none)."""


class ClaimUnchecked(Exception):
    """The shared store could not tell whether a state's use is the first (the claim may be
    retried)."""


@dataclass(slots=True, eq=False)
class Use:
    """A requestState that was used: what its first use answered (the JSON after the id)."""

    expires: float  # the state's expiry (time.time())
    here: bool  # the first use is this host's (else: heard of on the bus, or not claimed yet)
    answer: bytes | None = None
    ended: str = ""  # why there is no answer to give (the request was cancelled, or it is not kept)
    waiters: list[Waiter] = field(default_factory=list)
    mark: bytes = b""  # what this host's claim wrote in the shared store (shared_uses.py)


class UsedStates:
    """The states used on this host, and those other hosts said they used."""

    def __init__(self) -> None:
        self.used: OrderedDict[str, Use] = OrderedDict()  # by suspension id, in order of use
        self.kept = 0  # bytes of answers in `used`
        self.publish: Callable[[str, bytes], None] | None = None  # the bus other hosts hear
        self.host_id = os.urandom(8).hex()  # (this host's own bus messages are not for it)
        # hosts sharing a store (shared_uses.py): claim(sid, expires) is True for the one use of
        # a state, among all hosts, that comes first (raises ClaimUnchecked when the store cannot
        # tell); outcome(sid, use) is told what this host's first uses came to; watch(sid, use)
        # looks in the store for what another host's first use came to (the bus may lose it)
        self.claim: Callable[[str, float], Awaitable[bool]] | None = None
        self.outcome: Callable[[str, Use], None] | None = None
        self.watch: Callable[[str, Use], None] | None = None

    def first_use(self, sid: str, expires: float) -> Use | None:
        """None when this is the state's first use on this host (now recorded: with a store, to
        be claimed, then `won` or `lost`; without, told to the other hosts at once, whose holder
        of the call lets it go); else the use that came first."""
        now = time.time()
        while self.used and next(iter(self.used.values())).expires < now:
            self._forget(next(iter(self.used)))
        use = self.used.get(sid)
        if use is not None:
            return use
        self._record(sid, Use(expires, self.claim is None))
        if self.claim is None:
            self._tell(ROUND_USED, {"s": sid, "e": expires})
        return None

    def won(self, sid: str) -> None:
        """This host's use of the state won its claim: it is the first use, for every host."""
        use = self.used.get(sid)
        if use is not None:
            use.here = True
            self._tell(ROUND_USED, {"s": sid, "e": use.expires})

    def abandon(self, sid: str, reason: str) -> None:
        """The use of a state could not be claimed (the store cannot tell): as if unused here,
        and the uses waiting for it are told why."""
        use = self.used.pop(sid, None)
        if use is None:
            return
        if use.answer is not None:
            self.kept -= len(use.answer)
        waiters, use.waiters = use.waiters, []
        for waiter in waiters:
            waiter(None, reason)

    def answered(self, sid: str, answer: bytes) -> None:
        """What the first use of a state answered (the JSON after the request id)."""
        use = self.used.get(sid)
        if use is None or use.answer is not None:
            return
        use.answer = answer
        self.kept += len(answer)
        for old in self.used.values():  # the oldest answers go beyond the budget
            if self.kept <= REPLAY_BYTES or old is use:
                break
            if old.answer is not None:
                self.kept -= len(old.answer)
                old.answer, old.ended = None, "its answer is no longer kept"
        waiters, use.waiters = use.waiters, []
        for waiter in waiters:
            waiter(answer, "")
        if use.here and self.outcome is not None:
            self.outcome(sid, use)
        if use.here and len(answer) <= MAX_SHARED:
            self._tell(ROUND_ANSWERED, {"s": sid, "e": use.expires, "a": answer.decode()})
        elif use.here:
            self._tell(
                ROUND_ANSWERED, {"s": sid, "e": use.expires, "why": "its answer is too large to share"}
            )

    def unanswered(self, sid: str, reason: str) -> None:
        """The first use of a state ended without an answer (its request was cancelled)."""
        use = self.used.get(sid)
        if use is None or use.answer is not None:
            return
        use.ended = reason
        waiters, use.waiters = use.waiters, []
        for waiter in waiters:
            waiter(None, reason)
        if use.here and self.outcome is not None:
            self.outcome(sid, use)
        if use.here:
            self._tell(ROUND_ANSWERED, {"s": sid, "e": use.expires, "why": reason})

    def _record(self, sid: str, use: Use) -> None:
        self.used[sid] = use
        while len(self.used) > MAX_USED:
            self._forget(next(iter(self.used)))

    def _forget(self, sid: str) -> None:
        use = self.used.pop(sid)
        if use.answer is not None:
            self.kept -= len(use.answer)
        for waiter in use.waiters:
            waiter(None, "its first use did not end in time")

    # -- the bus between hosts ------------------------------------------------------------
    def _tell(self, topic: str, message: dict[str, Any]) -> None:
        if self.publish is not None:
            self.publish(topic, orjson.dumps({**message, "h": self.host_id}))

    def heard(self, topic: str, payload: bytes) -> str | None:
        """A bus message: another host's use of a state, or what it came to. Returns the
        state's suspension id when it is another host's (None: not for this)."""
        if topic not in (ROUND_USED, ROUND_ANSWERED):
            return None
        try:
            message = orjson.loads(payload)
            if message["h"] == self.host_id:
                return None
            sid, expires = str(message["s"]), float(message["e"])
            answer = message["a"].encode() if "a" in message else None
            why = str(message.get("why", ""))
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
        if sid not in self.used:
            self._record(sid, Use(expires, False))
        if answer is not None:
            self.answered(sid, answer)
        elif topic == ROUND_ANSWERED:
            self.unanswered(sid, f"{why} (on another host)")
        return sid
