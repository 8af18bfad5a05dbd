"""Middleware across tool processes: runs one tools/call through every registered
middleware (lower priority outermost; ties by file, then name), each in its own tool
process, around the tool's own process.

Per middleware the host sends phase "before" (the call's name and arguments) and, once
the inner part answered, phase "after" (the CallToolResult); the middleware's coroutine
waits in ``call_next`` in between. Rejections, failures and invalid rewritten arguments
become an error result that the outer middleware still see in their "after" phase. A
middleware that hangs past the call timeout or whose process dies fails the call with a
message naming it; the others still waiting are released.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import orjson

from protomcp_host.processes.channel import Channel, ChannelError, cancel_call
from protomcp_host.protocol.session import Call, ToolAnswer
from protomcp_sdk.wire import protomcp_pb2 as pb

if TYPE_CHECKING:
    from protomcp_host.app import Host


@dataclass(frozen=True, slots=True)
class Middleware:
    name: str
    priority: int
    owner: str  # the label of the tool file that defines it

    @property
    def order(self) -> tuple[int, str, str]:
        return (self.priority, self.owner, self.name)

    def __str__(self) -> str:
        return f"middleware '{self.name}' ({self.owner})"


class Abort(Exception):
    """The chain cannot go on (a middleware hung or its process died)."""


class ChainRun:
    """One call on its way through the middleware chain. It is the call's runner: the
    client's cancellation reaches it, and it cancels whatever part is running."""

    def __init__(self, host: Host, call: Call, chain: list[Middleware], timeout: float | None) -> None:
        self.host = host
        self.call = call
        self.chain = chain
        self.timeout = timeout
        self.router = call.sink
        self.call_id = f"m{id(self):x}"
        self.stage = ""  # what runs now, for a timeout message
        self.inner: Call | None = None  # the tool's own call, once started
        self.entered: list[tuple[Middleware, Channel]] = []  # waiting in call_next
        self.scope = anyio.CancelScope()
        call.runner = self

    # -- the call's runner ---------------------------------------------------------------
    def cancel(self, call: Call) -> None:
        call.done = True
        if self.inner is not None:
            cancel_call(self.inner)
        self.scope.cancel()

    def fail(self, call: Call, message: str) -> None:
        if not call.done:
            call.done = True
            self.router.call_failed(call, message)

    # -- the run -------------------------------------------------------------------------
    async def run(self) -> None:
        outcome: tuple[ToolAnswer, pb.CallToolResponse | None] | None = None
        problem = ""
        with self.scope:
            try:
                with anyio.fail_after(self.timeout):
                    outcome = await self._through()
            except TimeoutError:
                problem = f"timed out after {self.timeout:g}s in {self.stage}"
            except Abort as exc:
                problem = str(exc)
            except Exception as exc:  # a bug here must still answer the call, and not stop the host
                problem = f"internal error in the middleware chain: {exc!r}"
        self._release()
        if self.call.done:
            return
        if outcome is None:
            self.fail(self.call, problem or "cancelled")
        else:
            self.call.done = True
            self.router.call_answered(self.call, *outcome)

    async def _through(self) -> tuple[ToolAnswer, pb.CallToolResponse | None]:
        arguments = self.call.arguments
        result: tuple[ToolAnswer, pb.CallToolResponse | None] | None = None
        for middleware in self.chain:
            params = orjson.dumps({"name": self.call.tool.name, "arguments": arguments}).decode()
            reply, channel = await self._ask(middleware, "before", params)
            if reply.reject:
                result = (_rejected(middleware, reply), None)
                break
            if reply.result_json:  # it answered the call itself
                result = (_answer_of(reply.result_json), None)
                break
            self.entered.append((middleware, channel))
            if reply.params_json:
                arguments = orjson.loads(reply.params_json).get("arguments") or {}
        if result is None:
            problem = self.call.tool.validate(arguments) if arguments is not self.call.arguments else None
            result = (_error(problem), None) if problem else await self._tool(arguments)
        while self.entered:
            middleware, channel = self.entered.pop()
            answer, effects = result
            reply, _ = await self._ask(middleware, "after", _result_json(answer), channel)
            if reply.reject:
                result = (_rejected(middleware, reply), effects)
            elif reply.params_json:
                result = (_answer_of(reply.params_json), effects)
        return result

    async def _ask(
        self, middleware: Middleware, phase: str, params_json: str, channel: Channel | None = None
    ) -> tuple[pb.MiddlewareInterceptResponse, Channel]:
        self.stage = str(middleware)
        if channel is None:
            channel = await self.host.supervisors[middleware.owner].channel()
        if channel is None:
            raise Abort(f"{middleware} is not available: its tool process is not running")
        request = pb.MiddlewareInterceptRequest(
            middleware_name=middleware.name, phase=phase, method="tools/call", params_json=params_json
        )
        try:
            reply = await channel.request(
                pb.Envelope(call_id=self.call_id, middleware_intercept=request), timeout=None
            )
        except ChannelError as exc:
            raise Abort(f"{middleware} failed: {exc}") from None
        return reply.middleware_intercept_response, channel

    async def _tool(self, arguments: dict[str, Any]) -> tuple[ToolAnswer, pb.CallToolResponse | None]:
        """Run the tool itself, as an inner call whose answer comes back here."""
        self.stage = f"tool '{self.call.tool.name}'"
        leg = _Leg(self)
        call = self.call
        self.inner = inner = Call(
            call.id, call.tool, arguments, call.progress_token, task=call.task, sink=leg
        )
        self.host.supervisors[call.tool.owner].dispatch(inner, None)  # type: ignore[index]
        await leg.done.wait()
        if leg.failure is not None:
            return _error(f"Tool '{call.tool.name}' failed: {leg.failure}"), None
        assert leg.answer is not None
        return leg.answer, leg.effects

    def _release(self) -> None:
        """Middleware still waiting in call_next get an error result, and nobody waits for them."""
        if self.inner is not None and not self.inner.done:
            cancel_call(self.inner)
        for middleware, channel in self.entered:
            request = pb.MiddlewareInterceptRequest(
                middleware_name=middleware.name,
                phase="after",
                method="tools/call",
                params_json=_result_json(_error("the call was cancelled")),
            )
            channel.send(
                pb.Envelope(request_id="released", call_id=self.call_id, middleware_intercept=request)
            )
        self.entered.clear()


class _Leg:
    """The sink of the tool's own call inside a chain: progress and logs go straight to the
    client's router, the answer back to the chain."""

    def __init__(self, run: ChainRun) -> None:
        self.run = run
        self.done = anyio.Event()
        self.answer: ToolAnswer | None = None
        self.effects: pb.CallToolResponse | None = None
        self.failure: str | None = None

    def call_answered(self, call: Call, answer: ToolAnswer, effects: pb.CallToolResponse) -> None:
        self.answer, self.effects = answer, effects
        self.done.set()

    def call_failed(self, call: Call, message: str) -> None:
        self.failure = message
        self.done.set()

    def call_progress(self, call: Call, progress: float, total: float | None, message: str) -> None:
        self.run.router.call_progress(self.run.call, progress, total, message)

    def call_log(self, call: Call, level: str, logger: str, data: Any) -> None:
        self.run.router.call_log(self.run.call, level, logger, data)

    def call_task_status(self, call: Call, status: str, message: str) -> None:
        self.run.router.call_task_status(self.run.call, status, message)

    def call_request(
        self, call: Call, method: str, params: dict[str, Any], timeout: float | None, reply: Any
    ) -> None:
        """Sampling, elicitation, roots: asked of the client that made the call."""
        self.run.router.call_request(self.run.call, method, params, timeout, reply)


def _error(message: str) -> ToolAnswer:
    return ToolAnswer([orjson.dumps([{"type": "text", "text": message}])], is_error=True, trusted=True)


def _rejected(middleware: Middleware, reply: pb.MiddlewareInterceptResponse) -> ToolAnswer:
    if reply.failed:
        return _error(f"{middleware.__str__().capitalize()} failed: {reply.reject_reason}")
    return _error(f"Rejected by {middleware}: {reply.reject_reason}")


def _result_json(answer: ToolAnswer) -> str:
    parts = [b'{"content":', *answer.content]
    if answer.structured:
        parts += [b',"structuredContent":', answer.structured]
    parts.append(b',"isError":true}' if answer.is_error else b',"isError":false}')
    return b"".join(bytes(part) for part in parts).decode()


def _answer_of(result_json: str) -> ToolAnswer:
    """A CallToolResult a middleware wrote (checked again by the session before it is sent)."""
    try:
        result = orjson.loads(result_json)
        content = orjson.dumps(result.get("content", []))
        structured = result.get("structuredContent")
    except (orjson.JSONDecodeError, AttributeError):
        return _error("a middleware returned a malformed result")
    return ToolAnswer(
        [content], orjson.dumps(structured) if structured is not None else b"", bool(result.get("isError"))
    )
