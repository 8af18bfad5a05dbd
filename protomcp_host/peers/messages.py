"""The MCP-to-MCP bridge protocol (version 0.1.0): every message as a pydantic model.

Field names and JSON are the bridge protocol's: a common envelope (`message_id`, `message_type`,
`sender_id`, `receiver_id`, `timestamp`, `correlation_id`, `priority`, `payload`) and a typed
payload per message type. `parse_message` is the one way in: it refuses, with a readable
error, anything that is not one of the six message types or whose payload does not fit it.

protomcp's use of the free-form parts (documented in docs/architecture.md): a handshake's
`metadata.mcp_tools` carries the MCP Tool objects behind `tools` (names alone make no schema),
a `ToolResponse.result` is the MCP CallToolResult, and a notification whose `event_type` is
`tools_changed` carries new `tools` / `mcp_tools` in its `data`.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

PROTOCOL_VERSION = "0.1.0"


class MessageType(StrEnum):
    HANDSHAKE_REQUEST = "handshake_request"
    HANDSHAKE_RESPONSE = "handshake_response"
    REQUEST = "request"
    RESPONSE = "response"
    NOTIFICATION = "notification"
    ERROR = "error"


class MessagePriority(StrEnum):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    URGENT = "urgent"


PRIORITY_RANK = {
    MessagePriority.URGENT: 0,
    MessagePriority.HIGH: 1,
    MessagePriority.NORMAL: 2,
    MessagePriority.LOW: 3,
}
"""Queue order: lower goes first."""


class ErrorCode(StrEnum):
    TOOL_NOT_FOUND = "TOOL_NOT_FOUND"
    INVALID_ARGUMENTS = "INVALID_ARGUMENTS"
    EXECUTION_FAILED = "EXECUTION_FAILED"
    TIMEOUT = "TIMEOUT"
    UNAUTHORIZED = "UNAUTHORIZED"
    INTERNAL_ERROR = "INTERNAL_ERROR"


# -- payloads ----------------------------------------------------------------------------------


class AgentCapabilities(BaseModel):
    agent_id: str
    agent_name: str = ""
    agent_role: str = ""
    tools: list[str] = Field(default_factory=list)
    version: str = PROTOCOL_VERSION
    metadata: dict[str, Any] = Field(default_factory=dict)


class HandshakeAccept(AgentCapabilities):
    """HandshakeResponse payload: AgentCapabilities + the accepted flag."""

    accepted: bool


class ToolRequest(BaseModel):
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    timeout: float | None = None  # seconds


class ToolResponse(BaseModel):
    success: bool
    result: Any = None
    execution_time: float | None = None  # seconds
    error: str | None = None


class NotificationPayload(BaseModel):
    event_type: str
    data: dict[str, Any] = Field(default_factory=dict)


class ErrorDetails(BaseModel):
    error_code: ErrorCode
    error_message: str
    error_type: str = ""
    details: dict[str, Any] = Field(default_factory=dict)


# -- messages ----------------------------------------------------------------------------------


def _new_id() -> str:
    return str(uuid.uuid4())


def _now() -> datetime:
    return datetime.now(UTC)


class BaseMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message_id: str = Field(default_factory=_new_id)
    message_type: MessageType
    sender_id: str
    receiver_id: str | None = None
    timestamp: datetime = Field(default_factory=_now)
    correlation_id: str | None = None
    priority: MessagePriority = MessagePriority.NORMAL
    payload: Any = Field(default_factory=dict)

    def to_json(self) -> str:
        return self.model_dump_json()


class _Correlated(BaseMessage):
    @model_validator(mode="after")
    def _needs_correlation(self) -> _Correlated:
        if not self.correlation_id:
            raise ValueError(
                f"a {self.message_type.value} message needs a correlation_id (the request's message_id)"
            )
        return self


class HandshakeRequest(BaseMessage):
    message_type: Literal[MessageType.HANDSHAKE_REQUEST] = MessageType.HANDSHAKE_REQUEST
    payload: AgentCapabilities


class HandshakeResponse(_Correlated):
    message_type: Literal[MessageType.HANDSHAKE_RESPONSE] = MessageType.HANDSHAKE_RESPONSE
    payload: HandshakeAccept


class RequestMessage(BaseMessage):
    message_type: Literal[MessageType.REQUEST] = MessageType.REQUEST
    payload: ToolRequest


class ResponseMessage(_Correlated):
    message_type: Literal[MessageType.RESPONSE] = MessageType.RESPONSE
    payload: ToolResponse


class NotificationMessage(BaseMessage):
    message_type: Literal[MessageType.NOTIFICATION] = MessageType.NOTIFICATION
    payload: NotificationPayload


class ErrorMessage(BaseMessage):
    message_type: Literal[MessageType.ERROR] = MessageType.ERROR
    payload: ErrorDetails


Message = Annotated[
    HandshakeRequest
    | HandshakeResponse
    | RequestMessage
    | ResponseMessage
    | NotificationMessage
    | ErrorMessage,
    Field(discriminator="message_type"),
]
_adapter: TypeAdapter[BaseMessage] = TypeAdapter(Message)


class InvalidMessage(ValueError):
    """A frame that is not a valid bridge message; the text says what is wrong with it."""


def parse_message(data: str | bytes | dict[str, Any]) -> BaseMessage:
    """One bridge message from JSON (or its decoded object). Raises InvalidMessage."""
    try:
        if isinstance(data, dict):
            return _adapter.validate_python(data)
        return _adapter.validate_json(data)
    except ValidationError as exc:
        raise InvalidMessage(_explain(exc)) from None


def _explain(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error["loc"] if not str(p).startswith("function-after"))
        message = error["msg"]
        if error["type"] == "union_tag_invalid":
            message = "message_type must be one of " + ", ".join(t.value for t in MessageType)
        parts.append(f"{where}: {message}" if where else message)
    return "invalid bridge message: " + "; ".join(parts)


class MCPBridgeProtocol:
    """The bridge protocol's factory: messages with ids, timestamps and correlation filled in."""

    @staticmethod
    def create_handshake_request(
        sender_id: str, capabilities: AgentCapabilities, receiver_id: str | None = None
    ) -> HandshakeRequest:
        return HandshakeRequest(sender_id=sender_id, receiver_id=receiver_id, payload=capabilities)

    @staticmethod
    def create_handshake_response(
        sender_id: str, request: HandshakeRequest, capabilities: AgentCapabilities, accepted: bool = True
    ) -> HandshakeResponse:
        return HandshakeResponse(
            sender_id=sender_id,
            receiver_id=request.sender_id,
            correlation_id=request.message_id,
            payload=HandshakeAccept(**capabilities.model_dump(), accepted=accepted),
        )

    @staticmethod
    def create_request(
        sender_id: str,
        receiver_id: str,
        tool_request: ToolRequest,
        priority: MessagePriority = MessagePriority.NORMAL,
    ) -> RequestMessage:
        return RequestMessage(
            sender_id=sender_id, receiver_id=receiver_id, priority=priority, payload=tool_request
        )

    @staticmethod
    def create_response(sender_id: str, request: RequestMessage, response: ToolResponse) -> ResponseMessage:
        return ResponseMessage(
            sender_id=sender_id,
            receiver_id=request.sender_id,
            correlation_id=request.message_id,
            priority=request.priority,
            payload=response,
        )

    @staticmethod
    def create_notification(
        sender_id: str,
        event_type: str,
        data: dict[str, Any] | None = None,
        receiver_id: str | None = None,
        priority: MessagePriority = MessagePriority.NORMAL,
    ) -> NotificationMessage:
        return NotificationMessage(
            sender_id=sender_id,
            receiver_id=receiver_id,
            priority=priority,
            payload=NotificationPayload(event_type=event_type, data=data or {}),
        )

    @staticmethod
    def create_error(
        sender_id: str,
        error_code: ErrorCode,
        error_message: str,
        *,
        receiver_id: str | None = None,
        correlation_id: str | None = None,
        error_type: str = "",
        details: dict[str, Any] | None = None,
    ) -> ErrorMessage:
        return ErrorMessage(
            sender_id=sender_id,
            receiver_id=receiver_id,
            correlation_id=correlation_id,
            payload=ErrorDetails(
                error_code=error_code,
                error_message=error_message,
                error_type=error_type,
                details=details or {},
            ),
        )
