"""Running a coroutine by hand up to where it first waits, and a task only if it does.

Most middleware run start to finish without waiting for anything (a check, a rewrite, a
log line): then no task is made at all. A task, its first loop turn and its steps cost more
than such a middleware itself."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import Coroutine, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")
Coro = Coroutine[Any, Any, T]  # what an async def gives (what it waits on and is sent: asyncio's)


def start(
    loop: asyncio.AbstractEventLoop,
    coro: Coro[T],
    context: contextvars.Context | None = None,
) -> asyncio.Task[T] | None:
    """Run `coro` now, in `context`, until it ends (None: what it returned is dropped, what
    it raised propagates) or waits: then the rest of it runs as a task, returned."""
    try:
        suspended = context.run(coro.send, None) if context is not None else coro.send(None)
    except StopIteration:
        return None
    task = loop.create_task(_rest(coro, suspended), context=context)
    task.add_done_callback(lambda _: _end(coro))
    return task


def _end(coro: Coro[object]) -> None:
    """The task ended without resuming `coro`: it was cancelled before its first step (a
    cancel that came right after the start). `coro` ends cancelled too, so what it does on
    cancellation (clean-up, finally blocks) runs rather than being left to the GC."""
    if inspect.getcoroutinestate(coro) != inspect.CORO_SUSPENDED:
        return
    try:
        coro.throw(asyncio.CancelledError())
    except BaseException:  # (ended: cancelled, returned, or raised)
        return
    coro.close()  # it awaits again: nothing will resume it


async def _rest(coro: Coro[T], suspended: object) -> T:
    return await Resumed(coro, suspended)


class Resumed(Generic[T]):
    """Awaits a coroutine that was started by hand and waits on `suspended` (what it
    yielded): the rest of it runs in the awaiting task."""

    def __init__(self, coro: Coro[T], suspended: object) -> None:
        self.coro, self.suspended = coro, suspended

    def __await__(self) -> Generator[object, object, T]:
        coro, suspended = self.coro, self.suspended
        while True:
            try:
                sent = yield suspended
            except BaseException as exc:  # thrown in: cancellation
                try:
                    suspended = coro.throw(exc)
                except StopIteration as done:
                    result: T = done.value  # what the coroutine returned
                    return result
            else:
                try:
                    suspended = coro.send(sent)
                except StopIteration as done:
                    result = done.value
                    return result
