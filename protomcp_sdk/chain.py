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

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

import orjson

from protomcp_sdk import protomcp_pb2 as pb
from protomcp_sdk.registry import REGISTRY
from protomcp_sdk.results import ToolError, ToolResult, mcp_result_json, tool_result_from_mcp

if TYPE_CHECKING:
    from protomcp_sdk.runtime import ToolProcess

CallNext = Callable[["ToolCall"], Awaitable[ToolResult]]
Middleware = Callable[["ToolCall", CallNext], Awaitable[Any]]
M = TypeVar("M", bound=Middleware)


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


@overload
def middleware(fn: M, /) -> M: ...
@overload
def middleware(*, priority: int = 0, name: str | None = None) -> Callable[[M], M]: ...


def middleware(fn: M | None = None, /, *, priority: int = 0, name: str | None = None) -> M | Callable[[M], M]:
    """Register ``async def fn(call, call_next)`` as middleware for every tool call."""

    def register(func: M) -> M:
        label = name or getattr(func, "__name__", "")
        if not inspect.iscoroutinefunction(func):
            raise TypeError(
                f"middleware {label!r} must be an async function: async def {label}(call, call_next)"
            )
        if len(inspect.signature(func).parameters) != 2:
            raise TypeError(f"middleware {label!r} must take two parameters: (call, call_next)")
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise TypeError(f"middleware {label!r}: priority must be an integer")
        REGISTRY.add_middleware(MiddlewareSpec(label, priority, func))
        return func

    return register(fn) if fn is not None else register


class MiddlewareRunner:
    """Runs this process's middleware for the host: one suspended invocation per call."""

    def __init__(self, process: ToolProcess) -> None:
        self.process = process
        self.running: dict[tuple[str, str], _Invocation] = {}  # (call id, middleware name)

    def registrations(self) -> list[pb.RegisterMiddlewareRequest]:
        return [
            pb.RegisterMiddlewareRequest(name=spec.name, priority=spec.priority, methods=["tools/call"])
            for spec in REGISTRY.middleware.values()
        ]

    def intercept(self, envelope: pb.Envelope) -> None:
        request = envelope.middleware_intercept
        key = (envelope.call_id, request.middleware_name)
        if request.phase == "before":
            spec = REGISTRY.middleware.get(request.middleware_name)
            if spec is None:
                self.reply(
                    envelope.request_id, reject=True, reject_reason="no such middleware in this process"
                )
                return
            invocation = _Invocation(self, spec, key, envelope.request_id)
            self.running[key] = invocation
            params = orjson.loads(request.params_json or "{}")
            call = ToolCall(str(params.get("name", "")), dict(params.get("arguments") or {}))
            invocation.task = self.process.loop.create_task(invocation.run(call))
        else:
            invocation = self.running.get(key)
            if invocation is None:  # it answered the call itself, or it is gone: leave the result
                self.reply(envelope.request_id)
            else:
                invocation.resume(envelope.request_id, request.params_json)

    def reply(self, request_id: str, **fields: Any) -> None:
        response = pb.MiddlewareInterceptResponse(**fields)
        self.process.send(pb.Envelope(request_id=request_id, middleware_intercept_response=response))


class _Invocation:
    """One middleware wrapped around one call, from phase "before" to phase "after"."""

    def __init__(self, runner: MiddlewareRunner, spec: MiddlewareSpec, key: tuple[str, str], request_id: str):
        self.runner = runner
        self.spec = spec
        self.key = key
        self.request_id = request_id  # the host request our next reply answers
        self.after: asyncio.Future[str] = runner.process.loop.create_future()
        self.passed_on = False  # call_next was called
        self.received: ToolResult | None = None  # what call_next returned
        self.task: asyncio.Task[None] | None = None
        self.original_arguments = b""

    async def run(self, call: ToolCall) -> None:
        self.original_arguments = orjson.dumps(call.arguments)
        reply: dict[str, Any]
        try:
            result = await self.spec.fn(call, self.call_next)
            if not self.passed_on:  # it answered the call itself
                reply = {"result_json": mcp_result_json(_as_tool_result(result, self.spec.name))}
            elif result is self.received:
                reply = {}
            else:
                reply = {"params_json": mcp_result_json(_as_tool_result(result, self.spec.name))}
        except ToolError as exc:
            reply = {"reject": True, "reject_reason": exc.message}
        except Exception as exc:  # the host names the middleware: "middleware 'x' failed: ..."
            reply = {"reject": True, "failed": True, "reject_reason": f"{type(exc).__name__}: {exc}"}
        finally:
            self.runner.running.pop(self.key, None)
        self._reply(**reply)

    async def call_next(self, call: ToolCall) -> ToolResult:
        if self.passed_on:
            raise RuntimeError(f"middleware {self.spec.name!r} called call_next twice")
        self.passed_on = True
        changed = orjson.dumps(call.arguments) != self.original_arguments
        params = orjson.dumps({"name": call.name, "arguments": call.arguments}).decode() if changed else ""
        self._reply(params_json=params)
        result_json = await self.after
        self.received = tool_result_from_mcp(orjson.loads(result_json))
        return self.received

    def resume(self, request_id: str, result_json: str) -> None:
        self.request_id = request_id
        if not self.after.done():
            self.after.set_result(result_json)

    def _reply(self, **fields: Any) -> None:
        self.runner.reply(self.request_id, **fields)


def _as_tool_result(value: Any, name: str) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(content=[value])
    raise TypeError(f"middleware {name!r} must return a ToolResult (or a str), not {type(value).__name__}")
