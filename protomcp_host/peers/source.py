"""A peer's tools served here as `PEERID_<name>` (owner `peer PEERID`): their definitions, made
from what the peer announced, and `PeerSource`, which the calls layer calls like a tool file's
processes (`ToolSource`); a peer's answer becomes the Envelope a tool process would send."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import orjson

from protomcp_host.peers.link import Background, PeerCallFailed
from protomcp_host.peers.messages import MessagePriority, ToolResponse
from protomcp_host.processes.events import Leg
from protomcp_sdk.wire import envelope_pb2 as pb

PEER_PREFIX = "peer "  # owner label of a peer's tools: "peer b"
PeerCall = Callable[[str, str, dict[str, Any], MessagePriority], Awaitable[pb.CallToolResponse]]
"""(peer id, served name, arguments, priority) -> the peer's answer; raises PeerCallFailed."""


def peer_tools(
    peer_id: str, mcp_tools: Any, names: list[str]
) -> tuple[list[pb.ToolDefinition], dict[str, str]]:
    """A peer's tools as served here, and served name -> the peer's name."""
    definitions = []
    served: dict[str, str] = {}
    described = {t.get("name"): t for t in mcp_tools or [] if isinstance(t, dict)}
    for name in names:
        tool = described.get(name) or {"name": name, "inputSchema": {"type": "object"}}
        definition = pb.ToolDefinition(
            name=f"{peer_id}_{name}",
            description=str(tool.get("description") or f"{name} on peer {peer_id}"),
            input_schema_json=orjson.dumps(tool.get("inputSchema") or {"type": "object"}).decode(),
            title=str(tool.get("title") or ""),
            tags=["peer", peer_id],
            task_support_mode="forbidden",
        )
        if tool.get("annotations"):
            definition.annotations_json = orjson.dumps(tool["annotations"]).decode()
        definitions.append(definition)
        served[definition.name] = name
    return definitions, served


class PeerSource:
    """A peer's tools as the calls layer sees a tool file's processes (`ToolSource`)."""

    def __init__(self, peer_id: str, call: PeerCall, background: Background) -> None:
        self.peer_id = peer_id
        self.call = call
        self.background = background
        self._running: dict[str, anyio.CancelScope] = {}
        self._ids = itertools.count(1)

    def start(self, envelope: pb.Envelope, leg: Leg) -> None:
        if envelope.WhichOneof("msg") != "call_tool" or not self.background.running:
            leg.failed(f"peer {self.peer_id} serves tools only")
            return
        request_id = f"p{next(self._ids)}"
        scope = self._running[request_id] = anyio.CancelScope()
        leg.sent(self, request_id)
        self.background.start_soon(self._call, envelope.call_tool, leg, request_id, scope)

    async def _call(
        self, request: pb.CallToolRequest, leg: Leg, request_id: str, scope: anyio.CancelScope
    ) -> None:
        reply: pb.CallToolResponse | None = None
        failure = ""
        with scope:
            try:
                arguments = orjson.loads(request.arguments_json) if request.arguments_json else {}
                reply = await self.call(self.peer_id, request.name, arguments, MessagePriority.NORMAL)
            except PeerCallFailed as exc:
                failure = f"peer {self.peer_id}: {exc}"
        if self._running.pop(request_id, None) is None:
            return  # dropped: nobody waits for it
        if reply is not None:
            leg.answered(pb.Envelope(call_result=reply), None, True)
        else:
            leg.failed(failure)

    def drop(self, request_id: str, cancel: bool = True) -> None:
        """The call is over here (cancelled, timed out): stop waiting. The bridge protocol has no way to
        cancel a request on the peer; its answer, when it comes, is dropped."""
        scope = self._running.pop(request_id, None)
        if scope is not None:
            scope.cancel()

    def notify(self, envelope: pb.Envelope) -> None:
        """Notifications for tool processes (roots changed) do not go to peers."""

    def ready_channel(self) -> None:
        return None

    async def channel(self) -> None:
        return None

    async def stop(self, grace: float) -> None:
        for scope in self._running.values():
            scope.cancel()


def call_response(response: ToolResponse) -> pb.CallToolResponse:
    """A peer's ToolResponse as the tool process answer the calls layer expects."""
    result = response.result if isinstance(response.result, dict) else {}
    content = result.get("content")
    if not isinstance(content, list):  # another implementation's plain result
        content = [text_block(orjson.dumps(response.result).decode() if response.result is not None else "")]
    if not response.success and response.error and not content:
        content = [text_block(response.error)]
    answer = pb.CallToolResponse(is_error=not response.success, result_json=orjson.dumps(content).decode())
    if isinstance(result.get("structuredContent"), dict):
        answer.structured_content_json = orjson.dumps(result["structuredContent"]).decode()
    return answer


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}
