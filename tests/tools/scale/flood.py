"""A tool that floods the store's bus with resource updates (a busy bus beside running tasks)."""

from __future__ import annotations

import time

from protomcp_sdk import Context, tool


@tool
def flood(seconds: float, ctx: Context) -> int:
    """ctx.resource_updated in a tight loop for `seconds`; how many updates it sent."""
    sent = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ctx.resource_updated(f"flood://{sent % 100}")
        sent += 1
    return sent
