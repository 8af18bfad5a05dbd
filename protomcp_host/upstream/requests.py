"""The requests of the calls layer an upstream works on, and those their owners dropped that it
may still be finishing (the spec lets an upstream finish what it started after a cancel)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import anyio
import orjson

from protomcp_host.processes.events import Leg
from protomcp_sdk.wire import envelope_pb2 as pb

_ANSWERED = ("call_tool", "read_resource_request", "get_prompt_request")  # carry input_answers_json


class Forwarded:
    """A request of the calls layer the upstream works on."""

    __slots__ = ("answered", "asked", "carried", "kind", "leg", "on", "scope")

    def __init__(self, leg: Leg, kind: str, carried: dict[str, Any]) -> None:
        self.leg, self.kind = leg, kind
        self.scope = anyio.CancelScope()
        self.on: Any = None  # the session it was sent on (None: waiting for a connection)
        self.carried = carried  # 2026-07-28: answers a retry run again here brings, by key
        self.asked = 0  # the upstream's requests for the client so far
        self.answered = False  # by the upstream, even after it was dropped (stdio: see answered.py)

    @property
    def sent(self) -> bool:
        return self.on is not None


def carried(envelope: pb.Envelope, kind: str) -> dict[str, Any]:
    """The answers a retried request brings (a re-run: the call was suspended elsewhere)."""
    request = getattr(envelope, kind) if kind in _ANSWERED else None
    answers = orjson.loads(request.input_answers_json) if request and request.input_answers_json else {}
    return answers if isinstance(answers, dict) else {}


class InFlight:
    """Requests by id while the upstream has them; the dropped ones as (the session they were
    sent on, when, the request): over stdio a question the upstream asks may be theirs until it
    answers them or that connection ends."""

    def __init__(self, over_http: bool) -> None:
        self.over_http = over_http  # its stream says whose a question is: dropped ones are not kept
        self.running: dict[str, Forwarded] = {}
        self.dropped: list[tuple[Any, float, Forwarded]] = []
        self._moved = asyncio.Event()  # a request left its session (answered, failed, to be resent)

    def moved(self) -> None:
        self._moved.set()

    def drop(self, request_id: str, session: Any) -> None:
        """Its owner is done with it (`session`: the connection the upstream has now)."""
        request = self.running.pop(request_id, None)
        if request is None:
            return
        if request.on is not None and not self.over_http:
            self.still_dropped(session)  # those of ended connections leave first: the list stays short
            self.dropped.append((request.on, time.monotonic(), request))
        request.scope.cancel()

    def still_dropped(self, session: Any) -> int:
        """Dropped requests the upstream may still be finishing: those sent on the connection
        it has now (`session`) and not answered. No time limit: a question is never handed to
        another request because the one it may belong to is slow."""
        self.dropped = [d for d in self.dropped if d[0] is session and not d[2].answered]
        return len(self.dropped)

    def fail_sent(self, reason: str, session: Any = None) -> None:
        """Fail the requests sent on the lost connection `session` (None: on any), not those
        waiting for the next one."""
        for request_id, request in list(self.running.items()):
            if request.sent and (session is None or request.on is session):
                del self.running[request_id]
                request.scope.cancel()
                request.leg.failed(reason)

    async def settle(self, session: Any, wait: float) -> None:
        """Until no request is on `session` any more (bounded by `wait` seconds)."""
        with anyio.move_on_after(wait):
            while any(request.on is session for request in self.running.values()):
                self._moved = asyncio.Event()
                await self._moved.wait()
