"""Running this process's ``@middleware`` for the host: one suspended invocation per call,
from phase "before" (up to ``call_next``) to phase "after" (with the call's result).

Middleware of this process that follow each other in the host's chain run in one invocation
(one frame per phase for the lot), and those right around a tool of this process run with it
here (``compose``), without asking the host at all.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable

import orjson

from protomcp_sdk.authoring.encoding import mcp_result_json, tool_result_from_mcp
from protomcp_sdk.authoring.middleware import CallNext, MiddlewareSpec, ToolCall
from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.authoring.results import ToolError, ToolResult
from protomcp_sdk.runtime import eager
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire.jsontypes import JSONObject


class MiddlewareRunner:
    """Runs this process's middleware for the host: one suspended invocation per call."""

    def __init__(self, loop: asyncio.AbstractEventLoop, send: Callable[[pb.Envelope], None]) -> None:
        self.loop = loop
        self.send = send  # a frame to the host
        self.running: dict[tuple[str, str], _Invocation] = {}  # (call id, middleware name)
        self.serials = itertools.count(1)  # invocation ids: never reused in this process

    def registrations(self) -> list[pb.RegisterMiddlewareRequest]:
        return [
            pb.RegisterMiddlewareRequest(
                name=spec.name,
                priority=spec.priority,
                methods=["tools/call"],
                before_only=spec.before_only,
                composes=True,
            )
            for spec in REGISTRY.middleware.values()
        ]

    def intercept(self, envelope: pb.Envelope) -> None:
        request = envelope.middleware_intercept
        key = (envelope.call_id, request.middleware_name)
        if request.phase == "before":
            specs = specs_of([request.middleware_name, *request.chain])
            if isinstance(specs, str):
                self.reply(envelope.request_id, reject=True, reject_reason=specs)
                return
            stale = self.running.get(key)
            if stale is not None:  # the host started this call again: the old one has ended
                stale.abandon()
            invocation = _Invocation(self, specs, request.owner, key, envelope.request_id, next(self.serials))
            self.running[key] = invocation
            params = orjson.loads(request.params_json or "{}")
            call = ToolCall(str(params.get("name", "")), dict(params.get("arguments") or {}))
            invocation.task = eager.start(self.loop, invocation.run(call))
        else:
            running = self.running.get(key)
            if running is None:  # it answered the call itself, or it is gone: leave the result
                self.reply(envelope.request_id)
            else:
                running.resume(envelope.request_id, request.params_json)

    def reply(self, request_id: str, **fields: str | bool) -> None:
        envelope = pb.Envelope(request_id=request_id)
        response = envelope.middleware_intercept_response  # filled in place, no copy
        response.SetInParent()  # (an empty reply is a reply: "unchanged")
        for name, value in fields.items():
            setattr(response, name, value)
        self.send(envelope)


def specs_of(names: list[str]) -> list[MiddlewareSpec] | str:
    """The middleware of these names, or why not."""
    known = REGISTRY.middleware
    try:
        return [known[name] for name in names]
    except KeyError:
        missing = [name for name in names if name not in known]
        return f"no such middleware in this process: {', '.join(missing)}"


def compose(
    specs: list[MiddlewareSpec], owner: str, innermost: CallNext
) -> Callable[[ToolCall], Awaitable[object]]:
    """The middleware as one, outermost first, around `innermost`. What an inner one raises
    becomes an error result its outer one sees, as between processes; what the outermost
    raises, its caller handles (each call_next may be called once)."""
    call_next = _once(specs[-1], innermost)
    for spec, outer in zip(reversed(specs[1:]), reversed(specs[:-1]), strict=True):
        call_next = _once(outer, _guarded(spec, owner, call_next))
    head, first = specs[0], call_next
    return lambda call: head.fn(call, first)


def named(spec: MiddlewareSpec, owner: str) -> str:
    """As the host names it: "middleware 'audit' (mw.py)"."""
    return f"middleware '{spec.name}' ({owner})" if owner else f"middleware '{spec.name}'"


def rejection(spec: MiddlewareSpec, owner: str, exc: BaseException) -> ToolResult:
    """What the call's outer middleware (or the client) get when `spec` raised `exc`."""
    if isinstance(exc, ToolError):
        text = f"Rejected by {named(spec, owner)}: {exc.message}"
    else:
        text = f"{named(spec, owner).capitalize()} failed: {_failed(exc)['reject_reason']}"
    return as_seen(ToolResult(content=[text], is_error=True))


def _guarded(spec: MiddlewareSpec, owner: str, call_next: CallNext) -> CallNext:
    async def step(call: ToolCall) -> ToolResult:
        received: list[ToolResult] = []

        async def passing_on(call: ToolCall) -> ToolResult:
            received.append(await call_next(call))
            return received[0]

        try:
            result = await spec.fn(call, passing_on)
            if received and result is received[0]:
                return result  # unchanged
            return as_seen(as_tool_result(result, spec.name))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # SystemExit, KeyboardInterrupt...: still one answer
            return rejection(spec, owner, exc)

    return step


def as_seen(result: ToolResult) -> ToolResult:
    """A result as the next middleware out sees it: as if it had crossed to another process
    (MCP content blocks, plain JSON structured content, no tool-list changes)."""
    return tool_result_from_mcp(orjson.loads(mcp_result_json(result)))


def _once(spec: MiddlewareSpec, call_next: CallNext) -> CallNext:
    used = False

    async def once(call: ToolCall) -> ToolResult:
        nonlocal used
        if used:
            raise RuntimeError(f"middleware {spec.name!r} called call_next twice")
        used = True
        return await call_next(call)

    return once


class _Invocation:
    """The middleware of one segment of the host's chain (several of this process, next to
    each other) wrapped around one call, from phase "before" to phase "after"."""

    def __init__(
        self,
        runner: MiddlewareRunner,
        specs: list[MiddlewareSpec],
        owner: str,
        key: tuple[str, str],
        request_id: str,
        serial: int,
    ) -> None:
        self.runner = runner
        self.specs = specs
        self.owner = owner
        self.before_only = all(spec.before_only for spec in specs)
        self.key = key
        self.serial = serial  # unique for the process's lifetime
        self.request_id = request_id  # the host request our next reply answers
        self.after: asyncio.Future[str] | None = None  # made once needed (see waiting)
        self.passed_on = False  # call_next was called
        self.received: ToolResult | None = None  # what call_next returned
        self.task: asyncio.Task[None] | None = None
        self.original_arguments = b""
        self.abandoned = False
        self.detached = False  # before-only: passed on, and the host asks nothing more

    async def run(self, call: ToolCall) -> None:
        self.original_arguments = orjson.dumps(call.arguments)
        reply: JSONObject
        try:
            result = await compose(self.specs, self.owner, self.call_next)(call)
            if self.detached:  # before-only: its one reply (the phase "before") is sent
                return
            if not self.passed_on:  # it answered the call itself
                reply = {"result_json": mcp_result_json(as_tool_result(result, self.specs[0].name))}
            elif result is self.received:
                reply = {}
            else:
                reply = {"params_json": mcp_result_json(as_tool_result(result, self.specs[0].name))}
        except ToolError as exc:
            reply = {"reject": True, "reject_reason": exc.message}
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if self.abandoned or (task is not None and task.cancelling()):
                raise  # cancelled from outside (abandoned, or the process is ending): nobody waits
            reply = _failed(exc)  # its own code raised CancelledError: still one answer
        except BaseException as exc:  # SystemExit, KeyboardInterrupt...: still one answer
            reply = _failed(exc)  # the host names the middleware: "middleware 'x' failed: ..."
        finally:
            if self.runner.running.get(self.key) is self:
                del self.runner.running[self.key]
        self._reply(**reply)

    def abandon(self) -> None:
        """Its call ended without a phase "after": stop waiting in call_next."""
        self.abandoned = True
        if self.task is not None:
            self.task.cancel()

    async def call_next(self, call: ToolCall) -> ToolResult:
        self.passed_on = True
        changed = orjson.dumps(call.arguments) != self.original_arguments
        params = orjson.dumps({"name": call.name, "arguments": call.arguments}).decode() if changed else ""
        self._reply(params_json=params)
        if self.before_only:  # each returns this unchanged, as its last statement (see before_only)
            self.detached = True
            self.received = ToolResult()
            return self.received
        result_json = await self.waiting()
        self.received = tool_result_from_mcp(orjson.loads(result_json))
        return self.received

    def waiting(self) -> asyncio.Future[str]:
        """Phase "after" (the result), which may come before call_next is reached."""
        if self.after is None:
            self.after = self.runner.loop.create_future()
        return self.after

    def resume(self, request_id: str, result_json: str) -> None:
        self.request_id = request_id
        after = self.waiting()
        if not after.done():
            after.set_result(result_json)

    def _reply(self, **fields: str | bool) -> None:
        self.runner.reply(self.request_id, **fields)


def _failed(exc: BaseException) -> JSONObject:
    detail = str(exc)
    return {
        "reject": True,
        "failed": True,
        "reject_reason": f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__,
    }


def as_tool_result(value: object, name: str) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(content=[value])
    raise TypeError(f"middleware {name!r} must return a ToolResult (or a str), not {type(value).__name__}")
