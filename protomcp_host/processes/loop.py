"""The running event loop, without asking asyncio for it on every use.

asyncio.get_running_loop() (and what calls it: current_task(), create_task(), a Future
made without a loop, anyio's clock) makes a getpid() system call each time, to notice a
fork. On the hot path that is a system call per tool call (or HTTP request) for nothing: this
keeps the loop a thread last found, for as long as it runs. (Here in `processes` because both
the calls layer and the transports may import this layer.)
"""

from __future__ import annotations

import asyncio
import threading

_this_thread = threading.local()


def running_loop() -> asyncio.AbstractEventLoop:
    """The loop running in this thread (RuntimeError if none), as get_running_loop()."""
    loop: asyncio.AbstractEventLoop | None = getattr(_this_thread, "loop", None)
    if loop is None or not loop.is_running():  # (one thread runs one loop at a time)
        loop = _this_thread.loop = asyncio.get_running_loop()
    return loop
