"""A router's tool-list changes, gathered into at most one notifications/tools/list_changed.

A tool may toggle its tools thousands of times in a burst; the session compares the list
only when flushed (protocol/tool_list.py), and this decides when: LIST_CHANGED_DELAY after
the first change, or before the session's next call result, whichever comes first.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from protomcp_host.protocol.records import Event
from protomcp_host.protocol.tool_list import SessionToolList
from protomcp_sdk.wire.toollist import ToolListChange

LIST_CHANGED_DELAY = 0.02  # seconds tool-list changes gather before one list_changed (or a result)


class ListSession(Protocol):
    @property
    def tool_list(self) -> SessionToolList: ...


class ListRouter(Protocol):
    """What the flush reads of its router (calls.router.Router)."""

    @property
    def session(self) -> ListSession: ...

    def carry_out(self, events: list[Event]) -> None: ...


class ListChanges:
    """One router's pending flush. Each method is given the router: this keeps no reference
    to it, so that a router made per request is freed by reference counting (the timer,
    while due, holds it)."""

    __slots__ = ("timer",)

    def __init__(self) -> None:
        self.timer: asyncio.TimerHandle | None = None  # a flush is due

    def apply(self, router: ListRouter, change: ToolListChange) -> None:
        """Apply a tool-list change to the router's session; its list_changed, if the list
        changed, follows with the next flush."""
        router.session.tool_list.update(change)
        self.soon(router)

    def soon(self, router: ListRouter) -> None:
        """A flush LIST_CHANGED_DELAY from now (unless one is due already)."""
        if self.timer is None:
            loop = asyncio.get_running_loop()
            self.timer = loop.call_later(LIST_CHANGED_DELAY, self.flush, router)

    def flush(self, router: ListRouter) -> None:
        """Send the one tools/list_changed the changes since the last flush call for, if any."""
        self.cancel()
        tool_list = router.session.tool_list
        if tool_list.pending:
            router.carry_out(tool_list.flush())

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
