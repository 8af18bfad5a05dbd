"""The calls layer's requests open on one tool process's channel, and what belongs to each.

Each request (a leg) is kept by its Envelope request id until it ends, with what arrives for it
ahead of its answer (raw content handed over outside the frame) and the last stderr lines it
printed (to explain its failure if the process dies). Holds are middleware waiting in call_next
there: the process must keep its input open for them. `drained` says when nothing is open.
"""

from __future__ import annotations

import asyncio
from collections import deque

from protomcp_host.processes.events import Leg

PRINTED_TAIL = 20  # stderr lines of a request kept to explain its failure if the process dies


class OpenRequests:
    def __init__(self) -> None:
        self.legs: dict[str, Leg] = {}  # by Envelope request id
        # Raw content that came ahead of its answer frame; None: its spool file was unreadable.
        self.raw: dict[str, list[bytes] | None] = {}
        self.printed: dict[str, deque[str]] = {}  # per open request: the last stderr lines it printed
        self.holds: set[str] = set()  # middleware waiting in call_next here (no request open)
        self._drained: asyncio.Future[None] | None = None  # set when the last leg or hold ends

    def __len__(self) -> int:
        """Requests and holds open (how busy the process is)."""
        return len(self.legs) + len(self.holds)

    def add(self, request_id: str, leg: Leg) -> None:
        self.legs[request_id] = leg

    def end(self, request_id: str) -> Leg | None:
        """The request ended (answered, dropped or failed): its leg, if it was still open. Its
        raw content stays for the answer to take (take_raw), or for `forget`."""
        self.printed.pop(request_id, None)
        leg = self.legs.pop(request_id, None)
        if leg is not None:
            self._check_drained()
        return leg

    def forget(self, request_id: str) -> None:
        self.raw.pop(request_id, None)

    def take_raw(self, request_id: str) -> tuple[bool, list[bytes] | None]:
        """(whether raw content came ahead for the request, that content: None if unreadable)."""
        if request_id not in self.raw:
            return False, None
        return True, self.raw.pop(request_id)

    def printed_line(self, request_id: str, line: str) -> None:
        tail = self.printed.get(request_id)
        if tail is None:
            tail = self.printed[request_id] = deque(maxlen=PRINTED_TAIL)
        tail.append(line)

    def hold(self, key: str) -> None:
        self.holds.add(key)

    def release(self, key: str) -> None:
        self.holds.discard(key)
        self._check_drained()

    def running(self) -> list[str]:
        """What its open requests are doing, for a stuck process's obituary."""
        return sorted({str(leg) for leg in self.legs.values()})

    async def drained(self) -> None:
        """Return once no request is open (and nothing waits for one)."""
        if self.legs or self.holds:
            if self._drained is None:
                self._drained = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._drained)

    def _check_drained(self) -> None:
        if not self.legs and not self.holds and self._drained is not None:
            if not self._drained.done():
                self._drained.set_result(None)
            self._drained = None

    def fail_all(self, reason: str) -> None:
        """The process is gone: every open request fails with `reason` (and the stderr lines it
        printed: its own only, other callers' stay private)."""
        legs, self.legs = self.legs, {}
        printed, self.printed = self.printed, {}
        self.holds.clear()
        self._check_drained()
        for request_id, leg in legs.items():
            lines = printed.get(request_id)
            leg.failed(reason + ("; its last stderr lines:\n" + "\n".join(lines) if lines else ""))
        self.raw.clear()
