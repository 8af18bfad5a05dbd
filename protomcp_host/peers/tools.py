"""The peers' own tools on this host (their names are the bridge's, and public):
`bridge_notify` sends a notification to one peer or all, `bridge_peers` says who is connected,
with their capabilities."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson

from protomcp_host.peers.link import Background, Link
from protomcp_host.peers.messages import MessagePriority
from protomcp_host.peers.source import text_block
from protomcp_host.processes.events import Leg
from protomcp_sdk.wire import envelope_pb2 as pb

TOOLS_LABEL = "bridge"  # owner of these tools
Notify = Callable[[str, dict[str, Any], str | None, MessagePriority], Awaitable[list[str]]]
"""(event type, data, receiver id or None for all, priority) -> the peers it went to."""


class PeerTools:
    def __init__(self, me: str, links: Mapping[str, Link], notify: Notify, background: Background) -> None:
        self.me = me
        self.links = links
        self.notify_peers = notify
        self.background = background

    @staticmethod
    def definitions() -> list[pb.ToolDefinition]:
        notify_schema = {
            "type": "object",
            "properties": {
                "event_type": {"type": "string", "description": "What happened, e.g. agent_status_changed"},
                "data": {"type": "object", "description": "The event's data"},
                "receiver_id": {"type": ["string", "null"], "description": "One peer's agent id (null: all)"},
                "priority": {
                    "type": "string",
                    "enum": [p.value for p in MessagePriority],
                    "default": "normal",
                },
            },
            "required": ["event_type"],
            "additionalProperties": False,
        }
        return [
            pb.ToolDefinition(
                name="bridge_notify",
                description="Send a notification to one peer host (receiver_id) or to all.",
                input_schema_json=orjson.dumps(notify_schema).decode(),
                tags=["bridge"],
            ),
            pb.ToolDefinition(
                name="bridge_peers",
                description="The peer hosts connected over the bridge, with their capabilities.",
                input_schema_json=orjson.dumps({"type": "object", "additionalProperties": False}).decode(),
                annotations_json=orjson.dumps({"readOnlyHint": True}).decode(),
                tags=["bridge"],
            ),
        ]

    def start(self, envelope: pb.Envelope, leg: Leg) -> None:
        if envelope.WhichOneof("msg") != "call_tool" or not self.background.running:
            leg.failed("the bridge serves tools only")
            return
        self.background.start_soon(self._call, envelope.call_tool, leg)

    async def _call(self, request: pb.CallToolRequest, leg: Leg) -> None:
        arguments = orjson.loads(request.arguments_json) if request.arguments_json else {}
        try:
            if request.name == "bridge_notify":
                sent = await self.notify_peers(
                    arguments["event_type"],
                    arguments.get("data") or {},
                    arguments.get("receiver_id"),
                    MessagePriority(arguments.get("priority") or "normal"),
                )
                value: Any = {"sent_to": sent}
            else:
                value = {
                    "agent_id": self.me,
                    "peers": [link.peer.model_dump() for link in self.links.values()],
                }
        except LookupError as exc:
            response = pb.CallToolResponse(
                is_error=True, result_json=orjson.dumps([text_block(str(exc))]).decode()
            )
        else:
            text = orjson.dumps(value).decode()
            response = pb.CallToolResponse(result_json=orjson.dumps([text_block(text)]).decode())
        if leg.live:
            leg.answered(pb.Envelope(call_result=response), None, True)

    def notify(self, envelope: pb.Envelope) -> None: ...

    def ready_channel(self) -> None:
        return None

    async def channel(self) -> None:
        return None

    async def stop(self, grace: float) -> None: ...
