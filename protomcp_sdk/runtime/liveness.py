"""Liveness of the tool process, for the host's heartbeat.

- ``reply(threads, stuck)`` answers the host's Heartbeat: call-thread use and the tools whose
  cancelled calls still hold threads (and whether that starves some tool of threads).
- ``Watchdog`` is a thread that notices when the event loop stops turning and names the
  tool blocking it (the one whose code is on the loop thread's stack), so the host can say
  which tool it was when it replaces the process.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
import threading
import time
from collections.abc import Callable

from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.runtime.threads import CallThreads
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire.env import BLOCK_REPORT_ENV

BLOCK_REPORT = float(os.environ.get(BLOCK_REPORT_ENV, "") or 2.0)
"""Seconds the event loop may be blocked before the watchdog reports the tool doing it."""


def reply(threads: CallThreads, stuck_calls: dict[str, str]) -> pb.HeartbeatReply:
    """`stuck_calls`: request id -> tool, for cancelled calls whose thread has not returned."""
    stuck = sorted(stuck_calls.values())
    per_tool: dict[str, int] = {}
    for name in stuck:
        per_tool[name] = per_tool.get(name, 0) + 1
    starving = len(stuck) >= threads.limit or any(n >= threads.share for n in per_tool.values())
    return pb.HeartbeatReply(
        threads_busy=threads.running_count(),
        threads_limit=threads.limit,
        stuck_tools=sorted(per_tool),
        starving=starving,
    )


class Watchdog:
    """Checks every `tick` seconds that the loop runs callbacks; reports a block once."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, loop_thread: int, send: Callable[[pb.Envelope], None]
    ) -> None:
        self.loop = loop
        self.loop_thread = loop_thread
        self.send = send
        self.tick = min(0.5, BLOCK_REPORT / 4)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="protomcp-watchdog", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        answered = threading.Event()
        while not self._stop.is_set():
            answered.clear()
            asked = time.monotonic()
            try:
                self.loop.call_soon_threadsafe(answered.set)
            except RuntimeError:  # the loop is closed
                return
            reported = False
            while not answered.wait(self.tick):
                if self._stop.is_set():
                    return
                blocked = time.monotonic() - asked
                if blocked >= BLOCK_REPORT and not reported:
                    reported = True
                    self._report(blocked)
            self._stop.wait(self.tick)

    def _report(self, seconds: float) -> None:
        tool = self.blocking_tool()
        if not tool:
            return  # e.g. a standby process importing the tool file: not a tool's doing
        print(
            f"protomcp: tool '{tool}' has blocked the tool process's event loop for {seconds:.1f}s "
            "(an async tool must not run long without awaiting; make it a plain def to run it in a thread)",
            file=sys.stderr,
            flush=True,
        )
        note = pb.HeartbeatReply(blocked_tool=tool, blocked_seconds=seconds)
        self.send(pb.Envelope(heartbeat_reply=note))

    def blocking_tool(self) -> str:
        """The innermost tool function on the loop thread's stack ("" if none)."""
        codes = {}
        for spec in list(REGISTRY.tools.values()):
            fn = inspect.unwrap(spec.fn)
            code = getattr(fn, "__code__", None)
            if code is not None:
                codes[code] = spec.name
        frame = sys._current_frames().get(self.loop_thread)
        while frame is not None:
            name = codes.get(frame.f_code)
            if name is not None:
                return name
            frame = frame.f_back
        return ""
