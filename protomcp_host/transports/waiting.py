"""Waiting on anyio events: stop a scope when an event is set, or wait for the first of several."""

from __future__ import annotations

import anyio


async def cancel_when_set(event: anyio.Event, scope: anyio.CancelScope) -> None:
    """Cancel `scope` once `event` is set (run it as a task beside the work `scope` bounds)."""
    await event.wait()
    scope.cancel()


async def first_set(*events: anyio.Event) -> None:
    """Return once any of `events` is set."""
    async with anyio.create_task_group() as tg:
        for event in events:
            tg.start_soon(cancel_when_set, event, tg.cancel_scope)
