"""Peers' requests run here: each through the link's headless MCP session of this host (so
middleware, validation and tool processes apply), at most `max_in_flight` at once across
peers, the rest queued by priority (urgent, high, normal, low; FIFO within one) up to
MAX_QUEUED; refused once the host drains."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import anyio

from protomcp_host.peers.gate import PriorityGate
from protomcp_host.peers.link import Background, Link, describe
from protomcp_host.peers.messages import (
    BaseMessage,
    ErrorCode,
    ErrorMessage,
    MCPBridgeProtocol,
    RequestMessage,
    ToolResponse,
)

MAX_QUEUED = 1024  # peer requests waiting for a slot, across links; more are refused (busy)


class PeerRequests:
    def __init__(
        self,
        me: str,
        max_in_flight: int,
        local_tools: Callable[[], list[Any]],
        call_timeout: float | None,
        background: Background,
        stderr: Callable[[str], None],
    ) -> None:
        self.me = me
        self.local_tools = local_tools  # the tools peers may call
        self.call_timeout = call_timeout
        self.background = background
        self.stderr = stderr
        self.gate: PriorityGate[tuple[Link, RequestMessage]] = PriorityGate(max_in_flight)
        self.draining = False  # the host is stopping: peers' new requests are refused
        self._settled = asyncio.Event()  # set (and replaced) whenever a request here or there ends

    async def receive(self, link: Link, message: RequestMessage) -> None:
        """A peer's request: started, queued, or refused (stopping, busy)."""
        if self.draining:
            text, kind = f"agent {self.me!r} is stopping: request not started", "stopping"
        elif len(self.gate) >= MAX_QUEUED:  # a flood waits in memory only up to a bound
            text, kind = f"agent {self.me!r} is busy: {MAX_QUEUED} requests wait", "busy"
        else:
            if self.gate.submit(message.priority, (link, message)) is not None:
                self._start(link, message)
            return
        await link.send(self._error(ErrorCode.INTERNAL_ERROR, text, kind, link, message))

    def discard(self, link: Link) -> None:
        """The link ended: its queued requests have nobody to answer."""
        self.gate.discard(lambda item: item[0] is link)

    async def drain(self, links: Callable[[], list[Link]]) -> None:
        """Refuse peers' new requests; return once theirs (running and queued) have been
        answered and this host's calls to peers are over (the caller bounds the wait)."""
        self.draining = True
        while self.gate.running or len(self.gate) or any(link.pending for link in links()):
            settled = self._settled
            await settled.wait()

    def settle(self) -> None:
        """A request here or there ended: a drain looks again."""
        self._settled.set()
        self._settled = asyncio.Event()

    def _start(self, link: Link, message: RequestMessage) -> None:
        self.background.start_soon(self._execute, link, message)

    async def _execute(self, link: Link, message: RequestMessage) -> None:
        try:
            with anyio.CancelScope() as scope:
                link.inbound[message.message_id] = scope
                reply = await self._run(link, message)
                if link.open:
                    await link.send(reply)
        except Exception as exc:
            self.stderr(f"protomcp: bridge: answering peer {link.peer_id}: {describe(exc)}")
        finally:
            link.inbound.pop(message.message_id, None)
            following = self.gate.finish()
            if following is not None:
                self._start(*following)
            self.settle()

    async def _run(self, link: Link, message: RequestMessage) -> BaseMessage:
        request = message.payload
        name = request.tool_name
        local = {tool.name: tool for tool in self.local_tools()}
        tool = local.get(name)
        if tool is None:
            text = f"no tool {name!r} on agent {self.me!r}"
            found = {"tool_name": name, "available_tools": sorted(local)}
            return self._error(ErrorCode.TOOL_NOT_FOUND, text, "not_found", link, message, found)
        problem = tool.validate(request.arguments)
        if problem:
            text = f"{name}: {problem}"
            return self._error(
                ErrorCode.INVALID_ARGUMENTS, text, "invalid_arguments", link, message, {"tool_name": name}
            )
        timeout = request.timeout or self.call_timeout
        began = time.monotonic()
        with anyio.move_on_after(timeout) as deadline:
            answer = await link.client.request("tools/call", {"name": name, "arguments": request.arguments})
        if deadline.cancelled_caught:
            text = f"{name} did not finish within {timeout:g}s"
            late = {"tool_name": name, "timeout": timeout}
            return self._error(ErrorCode.TIMEOUT, text, "timeout", link, message, late)
        elapsed = time.monotonic() - began
        if "error" in answer:
            text = str(answer["error"].get("message"))
            return self._error(
                ErrorCode.EXECUTION_FAILED, text, "execution_failed", link, message, {"tool_name": name}
            )
        result = answer["result"]
        failed = bool(result.get("isError"))
        response = ToolResponse(
            success=not failed, result=result, execution_time=elapsed, error=_text(result) if failed else None
        )
        return MCPBridgeProtocol.create_response(self.me, message, response)

    def _error(
        self,
        code: ErrorCode,
        text: str,
        kind: str,
        link: Link,
        message: RequestMessage,
        details: dict[str, Any] | None = None,
    ) -> ErrorMessage:
        return MCPBridgeProtocol.create_error(
            self.me,
            code,
            text,
            receiver_id=link.peer_id,
            correlation_id=message.message_id,
            error_type=kind,
            details=details,
        )


def _text(result: dict[str, Any]) -> str:
    return "\n".join(
        str(b.get("text")) for b in result.get("content") or [] if isinstance(b, dict) and "text" in b
    )
