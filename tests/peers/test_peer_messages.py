"""Seed 004's messages: every type round-trips through its pydantic model with the seed's field
names, invalid ones are refused with a clear error; the priority gate orders queued requests."""

from __future__ import annotations

from datetime import datetime

import orjson
import pytest
from pydantic import ValidationError

from protomcp_host.peers.gate import PriorityGate
from protomcp_host.peers.messages import (
    AgentCapabilities,
    BaseMessage,
    ErrorCode,
    InvalidMessage,
    MCPBridgeProtocol,
    MessagePriority,
    MessageType,
    ToolRequest,
    ToolResponse,
    parse_message,
)

pytestmark = pytest.mark.fast  # starts no process

ENVELOPE = {
    "message_id",
    "message_type",
    "sender_id",
    "receiver_id",
    "timestamp",
    "correlation_id",
    "priority",
    "payload",
}


def every_message() -> list[BaseMessage]:
    caps = AgentCapabilities(
        agent_id="agent-1",
        agent_name="Data Processor",
        agent_role="processor",
        tools=["process_data", "validate_input"],
        metadata={"region": "us-east", "capacity": "high"},
    )
    hello = MCPBridgeProtocol.create_handshake_request("agent-1", caps, receiver_id="agent-2")
    back = MCPBridgeProtocol.create_handshake_response(
        "agent-2",
        hello,
        AgentCapabilities(agent_id="agent-2", agent_name="Coordinator", agent_role="coordinator"),
    )
    request = MCPBridgeProtocol.create_request(
        "agent-1",
        "agent-2",
        ToolRequest(tool_name="process_data", arguments={"data": "test"}, timeout=30),
        priority=MessagePriority.HIGH,
    )
    response = MCPBridgeProtocol.create_response(
        "agent-2", request, ToolResponse(success=True, result={"processed": True}, execution_time=0.5)
    )
    broadcast = MCPBridgeProtocol.create_notification("agent-1", "agent_status_changed", {"status": "busy"})
    targeted = MCPBridgeProtocol.create_notification("agent-1", "ping", {}, receiver_id="agent-3")
    error = MCPBridgeProtocol.create_error(
        "agent-2",
        ErrorCode.TOOL_NOT_FOUND,
        "The requested tool does not exist",
        error_type="not_found",
        correlation_id=request.message_id,
        details={"tool_name": "invalid_tool", "available_tools": ["ping"]},
    )
    return [hello, back, request, response, broadcast, targeted, error]


@pytest.mark.parametrize("message", every_message(), ids=lambda m: m.message_type.value)
def test_every_message_type_round_trips_with_the_seeds_fields(message: BaseMessage) -> None:
    text = message.to_json()
    data = orjson.loads(text)
    assert set(data) == ENVELOPE
    assert data["message_type"] in {t.value for t in MessageType}
    assert data["priority"] in {"low", "normal", "high", "urgent"}
    datetime.fromisoformat(data["timestamp"])  # ISO 8601
    again = parse_message(text)
    assert type(again) is type(message) and again == message
    assert parse_message(data) == message


def test_payload_fields_are_the_seeds() -> None:
    hello, back, request, response, _, _, error = (orjson.loads(m.to_json()) for m in every_message())
    assert set(hello["payload"]) == {"agent_id", "agent_name", "agent_role", "tools", "version", "metadata"}
    assert set(back["payload"]) == {
        "agent_id",
        "agent_name",
        "agent_role",
        "tools",
        "version",
        "metadata",
        "accepted",
    }
    assert back["correlation_id"] == hello["message_id"] and back["payload"]["accepted"] is True
    assert set(request["payload"]) == {"tool_name", "arguments", "timeout"}
    assert set(response["payload"]) == {"success", "result", "execution_time", "error"}
    assert response["correlation_id"] == request["message_id"]
    assert set(error["payload"]) == {"error_code", "error_message", "error_type", "details"}
    assert error["payload"]["error_code"] == "TOOL_NOT_FOUND"


def test_the_seeds_json_examples_parse() -> None:
    message = parse_message(
        {
            "message_id": "1f1e7a52-0000-4000-8000-000000000000",
            "message_type": "response",
            "sender_id": "agent-2",
            "receiver_id": "agent-1",
            "timestamp": "2024-01-11T10:00:00Z",
            "correlation_id": "0c3a0d62-0000-4000-8000-000000000000",
            "priority": "normal",
            "payload": {
                "success": True,
                "result": {"processed": True, "output": "result data"},
                "execution_time": 0.5,
                "error": None,
            },
        }
    )
    assert message.payload.execution_time == 0.5


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"message_type": "shout"}, "message_type must be one of handshake_request"),
        ({"message_type": "response", "correlation_id": None}, "needs a correlation_id"),
        ({"message_type": "handshake_response", "correlation_id": None}, "needs a correlation_id"),
        ({"priority": "asap"}, "priority"),
        ({"payload": {"arguments": {}}}, "tool_name"),
        ({"sender_id": None}, "sender_id"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_invalid_messages_are_refused_with_a_clear_error(change: dict, expected: str) -> None:
    request = every_message()[2]
    data = {**orjson.loads(request.to_json()), **change}
    if change.get("message_type") in ("response", "handshake_response"):
        data["payload"] = (
            {"success": True} if change["message_type"] == "response" else {"agent_id": "x", "accepted": True}
        )
    with pytest.raises(InvalidMessage, match="invalid bridge message") as refused:
        parse_message(orjson.dumps(data))
    assert expected in str(refused.value)


def test_not_json_and_the_seeds_validation_example() -> None:
    with pytest.raises(InvalidMessage):
        parse_message(b"not json")
    with pytest.raises(ValidationError):
        BaseMessage(sender_id="agent-1", message_type="invalid_type")


def test_priority_gate_runs_urgent_before_high_before_normal_before_low_fifo_within() -> None:
    gate: PriorityGate[str] = PriorityGate(1)
    assert gate.submit(MessagePriority.LOW, "first") == "first"  # a free slot: runs at once
    for priority, name in [
        ("low", "low1"),
        ("normal", "n1"),
        ("urgent", "u1"),
        ("high", "h1"),
        ("normal", "n2"),
        ("urgent", "u2"),
        ("low", "low2"),
    ]:
        assert gate.submit(MessagePriority(priority), name) is None
    order = []
    while (following := gate.finish()) is not None:
        order.append(following)
    assert order == ["u1", "u2", "h1", "n1", "n2", "low1", "low2"]
    assert gate.running == 0
    assert gate.submit(MessagePriority.NORMAL, "again") == "again"
    gate.submit(MessagePriority.HIGH, "drop-me")
    assert gate.discard(lambda item: item == "drop-me") == ["drop-me"] and len(gate) == 0
