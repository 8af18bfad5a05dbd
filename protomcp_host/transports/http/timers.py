"""A cheap deadline for the HTTP transport's waits that need a cancel scope (a call waiting for
its turn, an SSE stream's write).

anyio.move_on_after / fail_after cost 9-14 µs each (backend lookups on every call), a fifth of
the time a request spends in protomcp's own HTTP code; a plain CancelScope with one loop timer
does the same job for about a third of that. The waits every request makes need no scope and
cost less still: a future and a timer (event_stream.EventStream.wait), asyncio.timeout
(asgi.read_body). The host always runs on asyncio."""

from __future__ import annotations

from types import TracebackType

import anyio

from protomcp_host.processes.loop import running_loop


class Deadline:
    """Like anyio.move_on_after(seconds): leaves the block when the time is up;
    `expired` tells whether it did."""

    __slots__ = ("_handle", "scope", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.scope = anyio.CancelScope()

    def __enter__(self) -> Deadline:
        self._handle = running_loop().call_later(self.seconds, self.scope.cancel)
        self.scope.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        self._handle.cancel()
        return bool(self.scope.__exit__(kind, exc, tb))

    @property
    def expired(self) -> bool:
        return self.scope.cancelled_caught
