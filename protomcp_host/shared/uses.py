"""Each requestState used once by every host sharing a store (`--store redis://...`).

The bus tells the other hosts of a state's use and of what it came to, but late (a busy bus) or
not at all (messages of an outage are lost). The store decides instead: a first use runs only
once it is claimed there (`round_used:SID`, a final record until the state expires), and its
outcome is written there too (`round_answer:SID`: the answer, at most MAX_SHARED bytes, or why
there is none). A second use on another host that waits for the first use's answer looks in the
store each POLL seconds, so it gets the answer even when the bus lost it; when neither record
is there any more (Redis restarted empty, and no host wrote them back), it is told so at once
(after LOST_AFTER looks) instead of waiting the call timeout. After a break of the bus (the
store may have restarted empty), a host writes its own uses' records again.
"""

from __future__ import annotations

import os
import time
from collections import deque

import anyio
import anyio.abc
import orjson

from protomcp_host.calls.used_states import MAX_SHARED, ClaimUnchecked, Use, UsedStates
from protomcp_host.store.base import RECONNECTED, Store, StoreError

CLAIM_PREFIX = "round_used:"  # store records: a requestState's use, claimed by the first one
ANSWER_PREFIX = "round_answer:"  # and what that first use came to
POLL = 1.0  # seconds between looks in the store for another host's first answer
LOST_AFTER = 3  # looks that find no record of the first use (store reachable): it was lost
RETRY = 1.0  # seconds between attempts to write what the store could not take
MAX_UNSURE = 10_000  # claims remembered whose outcome the store did not tell


class SharedUses:
    def __init__(self, store: Store, uses: UsedStates) -> None:
        self.store = store
        self.uses = uses
        self._unsaved: deque[str] = deque()  # this host's uses whose outcome is not written yet
        self._wake = anyio.Event()
        self._rewrite = False  # the bus had a break: write this host's uses again
        self._tg: anyio.abc.TaskGroup | None = None
        self._watched: set[str] = set()
        self._unsure: dict[str, bytes] = {}  # claims whose answer did not come: what they wrote
        uses.claim = self.claim
        uses.outcome = self._outcome
        uses.watch = self._watch

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            await self._write()

    def on_bus(self, topic: str, payload: bytes) -> None:
        if topic == RECONNECTED:
            self._rewrite = True
            self._wake.set()

    async def claim(self, sid: str, expires: float) -> bool:
        """Each claim writes a value of its own: one sent again after a dropped connection
        (whose first try went through) still knows it won, and no other use wins after it. A
        claim whose answer did not come (StoreError) may have been written: the next claim of
        that state here writes the same value, so it wins if that one did; this one is
        ClaimUnchecked."""
        mark = self._unsure.pop(sid, None) or os.urandom(12)
        use = self.uses.used.get(sid)
        if use is not None:
            use.mark = mark
        try:
            kept = await self.store.put(CLAIM_PREFIX + sid, mark, max(1.0, expires - time.time()), final=True)
        except StoreError as exc:
            self._unsure[sid] = mark
            while len(self._unsure) > MAX_UNSURE:
                del self._unsure[next(iter(self._unsure))]
            raise ClaimUnchecked(str(exc)) from exc
        return kept is None or kept == mark

    # -- this host's first uses -> the store ----------------------------------------------
    def _outcome(self, sid: str, use: Use) -> None:
        self._unsaved.append(sid)
        self._wake.set()

    async def _write(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            if self._rewrite:
                self._rewrite = False
                self._unsaved.extend(sid for sid, use in self.uses.used.items() if use.here)
            while self._unsaved:
                sid = self._unsaved[0]
                try:
                    await self._save(sid)
                except StoreError:
                    await anyio.sleep(RETRY)  # (the store reports its outage)
                    continue
                self._unsaved.popleft()

    async def _save(self, sid: str) -> None:
        use = self.uses.used.get(sid)
        ttl = (use.expires - time.time()) if use is not None else 0.0
        if use is None or not use.here or ttl <= 0:
            return
        await self.store.put(CLAIM_PREFIX + sid, use.mark or b"-", ttl, final=True)
        if use.answer is not None and len(use.answer) <= MAX_SHARED:
            record = {"a": use.answer.decode()}
        elif use.answer is not None:
            record = {"why": "its answer is too large to share"}
        elif use.ended:
            record = {"why": use.ended}
        else:
            return  # (still running: its outcome is written when it comes)
        await self.store.put(ANSWER_PREFIX + sid, orjson.dumps(record), ttl, final=True)

    # -- another host's first use: its outcome from the store --------------------------------
    def _watch(self, sid: str, use: Use) -> None:
        if sid in self._watched or self._tg is None:
            return
        self._watched.add(sid)
        self._tg.start_soon(self._look, sid, use)

    async def _look(self, sid: str, use: Use) -> None:
        """Until the use has its outcome (from the bus, or found here), or is forgotten."""
        misses = 0
        try:
            while self.uses.used.get(sid) is use and use.answer is None and not use.ended and not use.here:
                await anyio.sleep(POLL)
                try:
                    answer = await self.store.get(ANSWER_PREFIX + sid)
                    claimed = answer is not None or await self.store.get(CLAIM_PREFIX + sid) is not None
                except StoreError:
                    misses = 0  # (an outage says nothing of the records)
                    continue
                if use.answer is not None or use.ended or self.uses.used.get(sid) is not use:
                    return  # (the bus brought it meanwhile)
                if answer is not None:
                    record = orjson.loads(answer)
                    if "a" in record:
                        self.uses.answered(sid, str(record["a"]).encode())
                    else:
                        self.uses.unanswered(sid, f"{record.get('why', '')} (on another host)")
                    return
                misses = 0 if claimed else misses + 1
                if misses >= LOST_AFTER:
                    self.uses.unanswered(
                        sid,
                        "the record of its first use, on another host, is gone from the store "
                        "(it restarted empty) and that host did not write it back",
                    )
                    return
        finally:
            self._watched.discard(sid)
