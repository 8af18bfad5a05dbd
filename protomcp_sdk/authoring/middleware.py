"""``@middleware``: code that wraps every tool call of every tool file behind one host.

```python
@middleware(priority=10)          # lower priority = outermost
async def audit(call, call_next):
    call.arguments["user"] = "me"  # rewrite arguments (validated again by the host)
    result = await call_next(call) # the ToolResult of the call (or of inner middleware)
    return result                  # or another ToolResult; raise ToolError to reject
```

A middleware runs in the tool process of the file that defines it, whichever file's tool
is called. Around a tool of its own file, that process runs it with the call, in the same
frame. For another file's tool the host asks it over the Envelope (``MiddlewareInterceptRequest``
phase "before", then phase "after" with the result: once, when ``before_only``), and between
the two phases the middleware's coroutine waits inside ``call_next``.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from protomcp_sdk.authoring.results import ToolResult
from protomcp_sdk.wire.jsontypes import JSONObject

CallNext = Callable[["ToolCall"], Awaitable[ToolResult]]
Middleware = Callable[["ToolCall", CallNext], Awaitable[object]]


@dataclass
class ToolCall:
    """The call a middleware sees: the tool's name and its arguments (a dict it may change)."""

    name: str
    arguments: JSONObject


@dataclass(frozen=True)
class MiddlewareSpec:
    name: str
    priority: int
    fn: Middleware
    # it ends with `return await call_next(call)` and nothing runs after it (see before_only):
    # the host skips its phase "after"
    before_only: bool = False


def middleware_spec(fn: Middleware, priority: int, name: str | None) -> MiddlewareSpec:
    """Check ``async def fn(call, call_next)``; raises TypeError on misuse."""
    label = name or str(getattr(fn, "__name__", ""))
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"middleware {label!r} must be an async function: async def {label}(call, call_next)")
    if len(inspect.signature(fn).parameters) != 2:
        raise TypeError(f"middleware {label!r} must take two parameters: (call, call_next)")
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise TypeError(f"middleware {label!r}: priority must be an integer")
    return MiddlewareSpec(label, priority, fn, before_only(fn))


def before_only(fn: Middleware) -> bool:
    """Whether ``fn`` only works before the call: its source passes ``call_next`` nowhere but
    to one ``return await call_next(...)`` among its top-level statements (not inside a
    ``try``, ``with`` or loop, where code could run after it). Then the result it returns is
    exactly what ``call_next`` gave, so nothing needs to run once the call is done."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return False
    function = next((n for n in ast.walk(tree) if isinstance(n, ast.AsyncFunctionDef)), None)
    if function is None or len(function.args.args) != 2:
        return False
    call_next = function.args.args[1].arg
    uses = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == call_next]
    last = function.body[-1]
    passes_on = (
        isinstance(last, ast.Return)
        and isinstance(last.value, ast.Await)
        and isinstance(last.value.value, ast.Call)
        and isinstance(last.value.value.func, ast.Name)
        and last.value.value.func.id == call_next
    )
    return passes_on and len(uses) == 1 and not _nested_functions(function)


def _nested_functions(function: ast.AsyncFunctionDef) -> bool:
    """Inner functions or lambdas could capture call_next or run later: not analysed."""
    return any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for n in ast.walk(function)
        if n is not function
    )
