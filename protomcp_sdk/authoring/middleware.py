"""``@middleware``: code that wraps every tool call of every tool file behind one host.

```python
@middleware(priority=10)          # lower priority = outermost
async def audit(call, call_next):
    call.arguments["user"] = "me"  # rewrite arguments (validated again by the host)
    result = await call_next(call) # the ToolResult of the call (or of inner middleware)
    return result                  # or another ToolResult; raise ToolError to reject
```

A middleware runs in the tool process of the file that defines it, whichever file's tool
is called: the host asks it twice per call over the Envelope (``MiddlewareInterceptRequest``
phase "before", then phase "after" with the result), and between the two phases the
middleware's coroutine waits inside ``call_next``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from protomcp_sdk.authoring.results import ToolResult

CallNext = Callable[["ToolCall"], Awaitable[ToolResult]]
Middleware = Callable[["ToolCall", CallNext], Awaitable[Any]]


@dataclass
class ToolCall:
    """The call a middleware sees: the tool's name and its arguments (a dict it may change)."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class MiddlewareSpec:
    name: str
    priority: int
    fn: Middleware


def middleware_spec(fn: Middleware, priority: int, name: str | None) -> MiddlewareSpec:
    """Check ``async def fn(call, call_next)``; raises TypeError on misuse."""
    label = name or getattr(fn, "__name__", "")
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"middleware {label!r} must be an async function: async def {label}(call, call_next)")
    if len(inspect.signature(fn).parameters) != 2:
        raise TypeError(f"middleware {label!r} must take two parameters: (call, call_next)")
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise TypeError(f"middleware {label!r}: priority must be an integer")
    return MiddlewareSpec(label, priority, fn)
