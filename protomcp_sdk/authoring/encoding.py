"""How a tool's return value (or exception) becomes a ``CallToolResponse`` and its content JSON,
and how middleware sees results (MCP CallToolResult JSON <-> ToolResult)."""

from __future__ import annotations

import binascii

import orjson

from protomcp_sdk.authoring.arguments import ArgumentError
from protomcp_sdk.authoring.outputs import output_check
from protomcp_sdk.authoring.results import (
    CONTENT_TYPES,
    Audio,
    ContentBlock,
    EmbeddedResource,
    Image,
    ResourceLink,
    Text,
    ToolError,
    ToolResult,
    dump_json,
)
from protomcp_sdk.authoring.tools import ToolSpec
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire.jsontypes import JSONObject
from protomcp_sdk.wire.toollist import ToolListChange

_MAX_DETAIL = 1000  # characters of an exception message kept in an error text


Encoded = tuple[pb.CallToolResponse, bytes]
"""A response and its content JSON, kept apart so large content can travel raw; the
response's ``result_json`` stays empty until ``_joined`` puts the content in."""


def to_response(value: object, spec: ToolSpec) -> pb.CallToolResponse:
    """Map a tool's return value to a response (see encode_result for the rules)."""
    return _joined(encode_result(value, spec))


def error_response(exc: BaseException, spec_name: str) -> pb.CallToolResponse:
    """An ``isError`` result whose text tells the model what went wrong (never a traceback)."""
    return _joined(encode_error(exc, spec_name))


def encode_result(value: object, spec: ToolSpec, *, proto: bool = False) -> Encoded:
    """Map a tool's return value to a response and its content JSON.

    - ``str``: one text block. ``None``: no content blocks at all.
    - a content block, or a non-empty list made only of content blocks: those blocks.
    - ``ToolResult``: its blocks, ``structured``, ``is_error`` and tool-list changes, as given.
    - anything else (numbers, dicts, lists, dataclasses, models, datetimes...): one text block
      with compact JSON (never a Python repr).

    structuredContent is sent only when the tool declares an output schema: the value itself
    for object schemas, ``{"result": value}`` when ``spec.wraps_result``. A value that cannot
    be encoded as JSON becomes an error result.

    With `proto` (the caller reads the message itself: a proto-mcp client), a typed tool's
    output message goes back serialized in ``structured_content_proto``, with no content: no
    JSON is made at all.
    """
    try:
        if isinstance(value, str):
            content: list[JSONObject] = [{"type": "text", "text": value}]
            text_json = None
        elif value is None:
            content, text_json = [], None
        elif isinstance(value, ToolResult):
            return _from_tool_result(value, spec.name)
        elif isinstance(value, CONTENT_TYPES):
            return _encoded([value.to_mcp()])
        elif isinstance(value, list) and value and all(isinstance(v, CONTENT_TYPES) for v in value):
            return _encoded([v.to_mcp() for v in value])
        elif spec.result_message is not None and isinstance(value, spec.result_message):
            if proto:  # its own class: it fits the output schema made from that class
                return pb.CallToolResponse(structured_content_proto=value.SerializeToString()), b"[]"
            from protomcp_sdk.wire.proto_json import message_to_json

            text_json = dump_json(message_to_json(value))
            # (no output check either: the schema was made from the class; checking a large
            # message's JSON against it would cost more than making the JSON)
            return _encoded([{"type": "text", "text": text_json.decode()}], structured=text_json)
        else:
            text_json = dump_json(value)
            content = [{"type": "text", "text": text_json.decode()}]
        structured = None
        if spec.output_schema is not None:
            if spec.wraps_result:
                inner = text_json if text_json is not None else dump_json(value)
                structured = b'{"result":' + inner + b"}"
            elif text_json is not None and text_json.startswith(b"{"):
                structured = text_json  # structuredContent must be an object
            problem = _output_problem(spec, value, structured)
            if problem:
                return _invalid_result(spec.name, problem)
        return _encoded(content, structured=structured)
    except orjson.JSONEncodeError as exc:
        return _invalid_result(spec.name, f"its return value cannot be converted to JSON ({exc})")


def encode_error(exc: BaseException, spec_name: str) -> Encoded:
    """The response for a tool that raised, with its content JSON (see error_response)."""
    if isinstance(exc, ToolError):
        text = exc.message  # clients mark an isError result themselves ("Error: ...")
        if exc.retryable:
            text += " (retryable)"
        if exc.suggestion:
            text += f"\nSuggestion: {exc.suggestion}"
        error = pb.ToolError(
            error_code=exc.code or "tool_error",
            message=exc.message,
            suggestion=exc.suggestion,
            retryable=exc.retryable,
        )
        return _encoded([{"type": "text", "text": text}], is_error=True, error=error)
    if isinstance(exc, ArgumentError):
        message = str(exc)
        error = pb.ToolError(error_code="invalid_arguments", message=message)
        return _encoded([{"type": "text", "text": message}], is_error=True, error=error)
    kind = type(exc).__name__
    detail = str(exc)
    if len(detail) > _MAX_DETAIL:
        detail = detail[:_MAX_DETAIL] + "..."
    summary = f"{kind}: {detail}" if detail else kind
    error = pb.ToolError(error_code=kind, message=detail or kind)
    text = f"Error in tool '{spec_name}': {summary}"
    return _encoded([{"type": "text", "text": text}], is_error=True, error=error)


def _from_tool_result(result: ToolResult, tool_name: str) -> Encoded:
    content: list[JSONObject] = []
    for item in result.content:
        if isinstance(item, str):
            content.append({"type": "text", "text": item})
        elif isinstance(item, CONTENT_TYPES):
            content.append(item.to_mcp())
        else:
            return _invalid_result(
                tool_name, f"ToolResult.content holds a {type(item).__name__}; use str or content blocks"
            )
    structured = None
    if result.structured is not None:
        structured = dump_json(result.structured)
        if not structured.startswith(b"{"):
            return _invalid_result(tool_name, "ToolResult.structured must be a JSON object (a dict or model)")
        if not content:  # MCP: structured results should also be readable as text
            content.append({"type": "text", "text": structured.decode()})
    response, content_json = _encoded(content, is_error=result.is_error, structured=structured)
    if result.meta:
        response.meta_json = dump_json(result.meta).decode()
    if result.enable_tools or result.disable_tools:
        ToolListChange(enable=tuple(result.enable_tools), disable=tuple(result.disable_tools)).write_to(
            response
        )
    return response, content_json


def mcp_result_json(result: ToolResult, tool_name: str = "middleware") -> str:
    """A ToolResult as the JSON of an MCP CallToolResult (used by middleware)."""
    return mcp_result_json_of(*_from_tool_result(result, tool_name))


def mcp_result_json_of(response: pb.CallToolResponse, content: bytes) -> str:
    """An encoded answer as the JSON of an MCP CallToolResult."""
    parts = [b'{"content":', content]
    if response.structured_content_json:
        parts += [b',"structuredContent":', response.structured_content_json.encode()]
    if response.meta_json:
        parts += [b',"_meta":', response.meta_json.encode()]
    parts.append(b',"isError":true}' if response.is_error else b',"isError":false}')
    return b"".join(parts).decode()


def tool_result_from_mcp(data: JSONObject) -> ToolResult:
    """An MCP CallToolResult as a ToolResult with the SDK's content blocks."""
    return ToolResult(
        content=[_block_from_mcp(block) for block in data.get("content") or []],
        structured=data.get("structuredContent"),
        is_error=bool(data.get("isError")),
        meta=data["_meta"] if isinstance(data.get("_meta"), dict) else None,
    )


def _block_from_mcp(block: JSONObject) -> ContentBlock:
    kind = block.get("type")
    if kind == "text":
        return Text(str(block.get("text", "")))
    if kind in ("image", "audio"):
        media = Image if kind == "image" else Audio
        return media(binascii.a2b_base64(block.get("data", "")), str(block.get("mimeType", "")))
    if kind == "resource_link":
        return ResourceLink(
            block["uri"],
            block.get("name", ""),
            block.get("title"),
            block.get("description"),
            block.get("mimeType"),
            block.get("size"),
        )
    if kind == "resource":
        resource = block.get("resource") or {}
        blob = resource.get("blob")
        return EmbeddedResource(
            resource.get("uri", ""),
            text=None if blob is not None else str(resource.get("text", "")),
            blob=binascii.a2b_base64(blob) if blob is not None else None,
            mime_type=resource.get("mimeType"),
        )
    return Text(orjson.dumps(block).decode())  # a block type this SDK does not know


def _output_problem(spec: ToolSpec, value: object, structured: bytes | None) -> str:
    """Why a result does not fit the tool's outputSchema ("" when it does)."""
    if structured is None:
        kind = "None" if value is None else type(value).__name__
        return f"it declares an output schema but returned {kind}, which is not a JSON object"
    if spec.output_checker is None:
        spec.output_checker = output_check(spec.output_schema or {}, spec.wraps_result)
    problem = spec.output_checker(value, structured)
    if problem is None:
        return ""
    fix = "fix the return annotation or the value"
    return f"its return value does not match its output schema ({problem}); {fix}"


def _invalid_result(tool_name: str, problem: str) -> Encoded:
    text = f"Error in tool '{tool_name}': {problem}"
    error = pb.ToolError(error_code="invalid_result", message=problem)
    return _encoded([{"type": "text", "text": text}], is_error=True, error=error)


def _encoded(
    content: list[JSONObject],
    is_error: bool = False,
    *,
    structured: bytes | None = None,
    error: pb.ToolError | None = None,
) -> Encoded:
    response = pb.CallToolResponse(is_error=is_error)
    if structured is not None:
        response.structured_content_json = structured.decode()
    if error is not None:
        response.error.CopyFrom(error)
    return response, orjson.dumps(content)


def _joined(encoded: Encoded) -> pb.CallToolResponse:
    response, content = encoded
    response.result_json = content.decode()
    return response
