"""Envelope messages ↔ the MCP shapes the protocol core works with. The only host module
besides the frame channel that knows protobuf, so `protocol/` speaks MCP alone."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import orjson

from protomcp_host.protocol.catalog import Tool
from protomcp_host.protocol.session import ToolAnswer
from protomcp_sdk import protomcp_pb2 as pb

TASK_MODES = ("forbidden", "optional", "required")


def tool_from_definition(definition: pb.ToolDefinition, owner: Hashable) -> Tool:
    """Map an Envelope ToolDefinition to the catalog's Tool (the MCP Tool object and the
    host-only settings: hidden, timeout)."""
    mcp: dict[str, Any] = {"name": definition.name}
    if definition.title:
        mcp["title"] = definition.title
    mcp["description"] = definition.description
    mcp["inputSchema"] = _json_or(definition.input_schema_json, {"type": "object"})
    if definition.output_schema_json:
        mcp["outputSchema"] = orjson.loads(definition.output_schema_json)
    annotations = _annotations(definition)
    if annotations:
        mcp["annotations"] = annotations
    mode = task_mode(definition)
    if mode != "forbidden":
        mcp["execution"] = {"taskSupport": mode}
    return Tool(
        definition.name,
        owner,
        mcp,
        hidden=definition.hidden,
        timeout=definition.timeout if definition.timeout > 0 else None,
    )


def task_mode(definition: pb.ToolDefinition) -> str:
    if definition.task_support_mode in TASK_MODES:
        return definition.task_support_mode
    return "optional" if definition.task_support else "forbidden"


def _annotations(definition: pb.ToolDefinition) -> dict[str, Any]:
    if definition.annotations_json:
        return orjson.loads(definition.annotations_json)
    # A tool process that only sets the bool hints: report the ones set to true.
    hints = {
        "readOnlyHint": definition.read_only_hint,
        "destructiveHint": definition.destructive_hint,
        "idempotentHint": definition.idempotent_hint,
        "openWorldHint": definition.open_world_hint,
    }
    return {key: True for key, value in hints.items() if value}


def _json_or(text: str, default: Any) -> Any:
    return orjson.loads(text) if text else default


def tool_answer(response: pb.CallToolResponse, raw: list[bytes] | None, trusted: bool) -> ToolAnswer:
    """A CallToolResponse as the protocol core's ToolAnswer. `raw` is the content JSON when
    it travelled outside the Envelope (raw payload or spool file)."""
    content = raw if raw is not None else [response.result_json.encode() or b"[]"]
    structured = response.structured_content_json.encode() if response.structured_content_json else b""
    meta = b""
    if response.is_error and response.error.error_code:  # a ToolError's code, for programs to act on
        error = {"code": response.error.error_code, "retryable": response.error.retryable}
        meta = orjson.dumps({"protomcp/error": error})
    return ToolAnswer(content, structured, response.is_error, trusted, meta)


def control_change(envelope: pb.Envelope) -> dict[str, Any]:
    """A tool-list control request as keyword arguments of Session.update_tools. In a batch an
    empty allow or block list leaves the mode as it is (proto3 cannot tell empty from unset)."""
    kind = envelope.WhichOneof("msg")
    if kind == "batch":
        batch = envelope.batch
        return {
            "enable": list(batch.enable),
            "disable": list(batch.disable),
            "allow": list(batch.allow) or None,
            "block": list(batch.block) or None,
        }
    key = {
        "enable_tools": "enable",
        "disable_tools": "disable",
        "set_allowed": "allow",
        "set_blocked": "block",
    }
    if kind in key:
        return {key[kind]: list(getattr(envelope, kind).tool_names)}
    return {}  # get_active_tools
