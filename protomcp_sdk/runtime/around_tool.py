"""A call through this process's own middleware right around its tool (the host names them in
the call): run here, without asking the host, the tool's answer going back unchanged unless
a middleware replaced it."""

from __future__ import annotations

import asyncio
import contextvars

import orjson

from protomcp_sdk.authoring.encoding import Encoded, encode_result, mcp_result_json_of, tool_result_from_mcp
from protomcp_sdk.authoring.middleware import CallNext, MiddlewareSpec, ToolCall
from protomcp_sdk.authoring.results import ToolResult
from protomcp_sdk.authoring.tools import ToolSpec
from protomcp_sdk.runtime.context import Context
from protomcp_sdk.runtime.middleware import as_tool_result, compose, rejection, specs_of
from protomcp_sdk.runtime.outcomes import cancelled_from_outside, outcome_async, outcome_sync
from protomcp_sdk.runtime.threads import CallThreads

Segment = tuple[list[MiddlewareSpec], bool]  # the middleware, and whether each is before-only


class AroundTool:
    """Runs the middleware of a call's segment around its tool, in this process."""

    def __init__(self, loop: asyncio.AbstractEventLoop, call_threads: CallThreads) -> None:
        self.loop = loop
        self.call_threads = call_threads
        self.segments: dict[tuple[str, ...], Segment] = {}  # by names

    def segment(self, names: tuple[str, ...]) -> Segment | str:
        """The middleware of these names (looked up once: the same few come with every call),
        or why not."""
        known = self.segments.get(names)
        if known is None:
            specs = specs_of(list(names))
            if isinstance(specs, str):
                return specs
            known = self.segments[names] = (specs, all(m.before_only for m in specs))
        return known

    async def through(
        self, spec: ToolSpec, arguments_json: str, ctx: Context, specs: list[MiddlewareSpec], owner: str
    ) -> Encoded | None:
        """The call's answer through middleware that see the result; None when cancelled."""
        outcome: list[Encoded | None] = []  # the tool's own answer
        seen: list[ToolResult] = []  # ...as the middleware saw it

        async def tool(call: ToolCall) -> ToolResult:
            changed = orjson.dumps(call.arguments).decode()
            encoded = await self._run_tool(spec, changed, ctx)
            outcome.append(encoded)
            if encoded is None:  # cancelled: the host has answered
                raise asyncio.CancelledError
            seen.append(tool_result_from_mcp(orjson.loads(mcp_result_json_of(*encoded))))
            return seen[0]

        call = ToolCall(spec.name, orjson.loads(arguments_json) if arguments_json else {})
        try:
            result = await _through(specs, owner, tool, call, ctx)
        except asyncio.CancelledError:
            return None
        if seen and result is seen[0]:
            return outcome[0]
        response, content = encode_result(result, spec)
        own = outcome[0] if outcome else None
        del response.enable_tools[:], response.disable_tools[:]  # the tool's changes stand, no other
        if own is not None:
            response.enable_tools.extend(own[0].enable_tools)
            response.disable_tools.extend(own[0].disable_tools)
        return response, content

    async def _run_tool(self, spec: ToolSpec, arguments_json: str, ctx: Context) -> Encoded | None:
        """Run the tool as a call without middleware would (a sync one in a call thread)."""
        if spec.is_async:
            return await outcome_async(spec, arguments_json, ctx)
        done: asyncio.Future[Encoded] = self.loop.create_future()

        def run() -> None:
            encoded = outcome_sync(spec, arguments_json, ctx)
            self.loop.call_soon_threadsafe(_settle, done, encoded)

        self.call_threads.submit(spec.name, contextvars.copy_context().run, run)
        return await done


async def before_tool(
    spec: ToolSpec, specs: list[MiddlewareSpec], owner: str, call: ToolCall, ctx: Context
) -> ToolCall | Encoded:
    """Before-only middleware up to the tool: the call they pass on, or their answer."""
    passed_on: list[ToolCall] = []
    mark = ToolResult()

    async def tool(call: ToolCall) -> ToolResult:
        passed_on.append(call)
        return mark

    result = await _through(specs, owner, tool, call, ctx)
    return passed_on[0] if result is mark else encode_result(result, spec)


async def _through(
    specs: list[MiddlewareSpec], owner: str, innermost: CallNext, call: ToolCall, ctx: Context
) -> ToolResult:
    """The call through middleware of this process around `innermost`: their result, or the
    error result that names the outermost when it raised. A cancel from outside propagates."""
    try:
        return as_tool_result(await compose(specs, owner, innermost)(call), specs[0].name)
    except asyncio.CancelledError as exc:
        if cancelled_from_outside(ctx):
            raise
        return rejection(specs[0], owner, exc)
    except BaseException as exc:  # still one answer; the message names the middleware
        return rejection(specs[0], owner, exc)


def _settle(future: asyncio.Future[Encoded], encoded: Encoded) -> None:
    if not future.done():  # (cancelled meanwhile: nobody waits)
        future.set_result(encoded)
