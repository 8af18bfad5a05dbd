"""The records a session and the calls layer pass each other: a tool call (``Call``) from
request to answer, a tool's answer (``ToolAnswer``) and its CallToolResult encoding, and the
events a session returns for the router to carry out."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.catalog import Tool
from protomcp_host.protocol.events import Batch, Send
from protomcp_host.protocol.features import CancelForward, ClientAnswer, Forward, RootsChanged
from protomcp_host.protocol.tasks import Task

STRUCTURED_VERSIONS = frozenset({"2025-06-18", "2025-11-25", "2026-07-28"})


@dataclass(slots=True, eq=False)
class Call:
    """One tools/call from request to answer: the only record of it. The session owns it
    (``in_flight``) and returns it as the event that starts it; the host notes on it the
    execution that runs it, which the protocol core never reads."""

    id: bytes
    tool: Tool
    arguments: dict[str, Any]
    progress_token: str | int | None
    batch: Batch | None = None
    task: Task | None = None  # a task-augmented call: its answer goes to this task, not a response
    auth: dict[str, Any] | None = None  # verified claims of the caller (HTTP + OAuth) for the tool
    execution: Any = None  # what the host runs it as (calls.execution.Execution)
    capabilities: str = ""  # what the client declared (JSON), for ctx.client_capabilities
    answers: str = ""  # 2026-07-28: answers its requests for the client already have (JSON, by key)
    retry: Any = None  # 2026-07-28: (inputResponses, requestState) of a retried request
    task_later: bool = False  # 2026-07-28: becomes a task once its input round trip is done
    trace: tuple[str, str] = ("", "")  # tracing: the W3C traceparent/tracestate of its request's span
    arguments_proto: bytes = b""  # a typed tool's argument message as a proto-mcp client sent it
    result_proto: bool = False  # its caller reads a typed tool's result message itself (proto-mcp)


@dataclass(slots=True)
class CancelCall:
    call: Call


@dataclass(slots=True)
class TaskInput:
    """2026-07-28 tasks/update: the client's answers to a task's outstanding requests (the calls layer gives
    them to the task's call)."""

    task: Task
    responses: dict[str, Any]


@dataclass(slots=True)
class TaskCancel:
    """2026-07-28 tasks/cancel of a running task: the calls layer stops its call."""

    task: Task


@dataclass(slots=True)
class TasksUnsettled:
    """2026-07-28 tasks/get, tasks/update or tasks/cancel of a task this host holds only a copy
    of (another host sharing its store runs it), or of an id it does not know, while its view of
    the other hosts' tasks may be behind (TaskStore.unsettled: the store's bus broke): the calls
    layer carries out what `answer()` returns once the view is settled again (bounded)."""

    answer: Callable[[], Event | list[Event]]


@dataclass(slots=True)
class ToolAnswer:
    """A tool's result, already JSON: the content array (whole or in pieces, spliced as they
    are), the structuredContent object, and whether it is an error. `trusted` content comes
    from our own SDK (orjson output) and is not checked again."""

    content: list[bytes]
    structured: bytes = b""
    is_error: bool = False
    trusted: bool = False
    meta: bytes = b""  # the result's _meta object, JSON (e.g. a ToolError's code)
    # a typed tool's output message, serialized, instead of `structured` (Call.result_proto):
    # passed on in base64 under STRUCTURED_PROTO, for the proto-mcp codec alone
    structured_proto: bytes = b""


Event = (
    Send
    | Call
    | CancelCall
    | Forward
    | CancelForward
    | ClientAnswer
    | RootsChanged
    | TaskInput
    | TaskCancel
    | TasksUnsettled
)
Handler = Callable[[rpc.Request, Batch | None], Event | list[Event] | None]


def error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


# _meta key of a typed tool's argument message in base64 (proto-mcp's Any, passed through)
PROTO_ARGUMENTS = "io.protomcp/argumentsProto"
# _meta key (true) of a call whose client reads a typed tool's result message itself, and the
# result's key of that message in base64 (both between the proto-mcp codec and this session)
PROTO_RESULT = "io.protomcp/resultProto"
STRUCTURED_PROTO = "io.protomcp/structuredProto"
_STRUCTURED_PROTO_KEY = b',"' + STRUCTURED_PROTO.encode() + b'":"'


def proto_arguments(value: Any) -> bytes:
    try:
        return base64.b64decode(value, validate=True) if isinstance(value, str) else b""
    except binascii.Error:
        return b""


def call_result_parts(call: Call, answer: ToolAnswer, version: str | None) -> list[bytes]:
    """The CallToolResult JSON object, in pieces."""
    chunks = answer.content or [b"[]"]
    structured = answer.structured
    if not answer.trusted:
        content = b"".join(chunks)
        try:
            if not isinstance(orjson.loads(content), list):
                raise ValueError("content is not a list")
            if structured and not isinstance(orjson.loads(structured), dict):
                raise ValueError("structuredContent is not an object")
        except ValueError:
            return [orjson.dumps(error_result(f"Tool '{call.tool.name}' returned malformed content"))]
        if b"\n" in content or b"\r" in content:  # keep one message per line
            content = orjson.dumps(orjson.loads(content))
        if b"\n" in structured or b"\r" in structured:
            structured = orjson.dumps(orjson.loads(structured))
        chunks = [content]
    parts = [b'{"content":', *chunks]
    if structured and version in STRUCTURED_VERSIONS:
        parts += [b',"structuredContent":', structured]
    elif answer.structured_proto:  # the message as it came, for the codec to unwrap
        parts += [_STRUCTURED_PROTO_KEY, base64.b64encode(answer.structured_proto), b'"']
    if answer.meta:
        parts += [b',"_meta":', answer.meta]
    parts.append(b',"isError":true}' if answer.is_error else b',"isError":false}')
    return parts


def first_text(result: bytes) -> str | None:
    """The first text block of a CallToolResult (a failed task's statusMessage)."""
    blocks = orjson.loads(result).get("content") or []
    return next((b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)), None)


def json_number(value: float) -> float | int:
    return int(value) if value.is_integer() else value
