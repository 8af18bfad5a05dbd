"""Envelope messages ↔ the MCP shapes the protocol core works with. The only host module
besides the frame channel that knows protobuf, so `protocol/` speaks MCP alone."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import orjson

from protomcp_host.protocol.catalog import Tool
from protomcp_host.protocol.features import Entry, FileFeatures, Forward, template_entry
from protomcp_host.protocol.session import ToolAnswer
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire.rates import Rate

TASK_MODES = ("forbidden", "optional", "required")


def tool_from_definition(
    definition: pb.ToolDefinition, owner: str, rate_of: Callable[[str, str], Rate | None] | None = None
) -> Tool:
    """Map an Envelope ToolDefinition to the catalog's Tool (the MCP Tool object and the
    host-only settings: hidden, pinned, timeout; its rate limit as `rate_of` (name, declared)
    decides: limits.RateLimits.rate_of)."""
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
    _decorated(mcp, definition)
    return Tool(
        definition.name,
        owner,
        mcp,
        hidden=definition.hidden,
        pinned=definition.pinned,
        timeout=definition.timeout if definition.timeout > 0 else None,
        input_before_task=definition.input_before_task and mode != "forbidden",
        messages=(
            (definition.message_descriptors, definition.input_message, definition.output_message)
            if definition.input_message
            else None
        ),
        scopes=frozenset(definition.scopes),
        rate_limit=rate_of(definition.name, definition.rate_limit) if rate_of is not None else None,
    )


def _decorated(mcp: dict[str, Any], definition: Any) -> dict[str, Any]:
    """The author's `icons` and `_meta` (JSON in the definition), when set."""
    if definition.icons_json:
        mcp["icons"] = orjson.loads(definition.icons_json)
    if definition.meta_json:
        mcp["_meta"] = orjson.loads(definition.meta_json)
    return mcp


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
    meta = response.meta_json.encode()  # the tool's own (ToolResult(meta=...))
    if meta and not trusted:
        meta = _checked_object(meta)
    if response.is_error and response.error.error_code:  # a ToolError's code, for programs to act on
        error = {"code": response.error.error_code, "retryable": response.error.retryable}
        meta = orjson.dumps({**(orjson.loads(meta) if meta else {}), "protomcp/error": error})
    message = response.structured_content_proto  # asked for (Call.result_proto): as it came
    return ToolAnswer(content, structured, response.is_error, trusted, meta, message)


def _checked_object(data: bytes) -> bytes:
    """A `_meta` from a tool process not written with this SDK: an object on one line, or none."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return b""
    return orjson.dumps(value) if isinstance(value, dict) and value else b""


# -- resources, prompts, completions --------------------------------------------------------


def file_features(
    owner: str,
    resources: pb.ResourceListResponse,
    templates: pb.ResourceTemplateListResponse,
    prompts: pb.PromptListResponse,
    completions: bool,
) -> FileFeatures:
    """A tool file's handshake lists as the protocol core's entries."""
    offered = FileFeatures(completions=completions)
    for resource in resources.resources:
        mcp = _described({"uri": resource.uri, "name": resource.name or resource.uri}, resource)
        if resource.size:
            mcp["size"] = resource.size
        offered.resources.append(Entry(resource.uri, owner, mcp, scopes=frozenset(resource.scopes)))
    for template in templates.templates:
        mcp = _described(
            {"uriTemplate": template.uri_template, "name": template.name or template.uri_template}, template
        )
        entry = template_entry(template.uri_template, owner, mcp, frozenset(template.scopes))
        if entry is not None:
            offered.templates.append(entry)
    for prompt in prompts.prompts:
        mcp = {"name": prompt.name}
        if prompt.title:
            mcp["title"] = prompt.title
        if prompt.description:
            mcp["description"] = prompt.description
        arguments = []
        for argument in prompt.arguments:
            item: dict[str, Any] = {"name": argument.name}
            if argument.description:
                item["description"] = argument.description
            item["required"] = argument.required
            arguments.append(item)
        mcp["arguments"] = arguments
        _decorated(mcp, prompt)
        required = tuple(a.name for a in prompt.arguments if a.required)
        offered.prompts.append(
            Entry(prompt.name, owner, mcp, required=required, scopes=frozenset(prompt.scopes))
        )
    return offered


def _described(mcp: dict[str, Any], definition: Any) -> dict[str, Any]:
    if definition.title:
        mcp["title"] = definition.title
    if definition.description:
        mcp["description"] = definition.description
    if definition.mime_type:
        mcp["mimeType"] = definition.mime_type
    if definition.annotations_json:
        mcp["annotations"] = orjson.loads(definition.annotations_json)
    return _decorated(mcp, definition)


def _claims_json(params: dict[str, Any]) -> str:
    """The caller's verified token claims (HTTP with OAuth) as JSON; empty without them."""
    claims = params.get("auth")
    return orjson.dumps(claims).decode() if claims is not None else ""


def forward_request(forward: Forward) -> pb.Envelope:
    """The Envelope request for a forwarded resources/read, prompts/get or completion/complete."""
    params = forward.params
    if forward.method == "resources/read":
        read = pb.ReadResourceRequest(uri=params["uri"])
        read.client_capabilities_json = params.get("capabilities", "")
        read.input_answers_json = params.get("answers", "")
        read.auth_json = _claims_json(params)
        return pb.Envelope(read_resource_request=read)
    if forward.method == "prompts/get":
        arguments = orjson.dumps(params["arguments"]).decode()
        get = pb.GetPromptRequest(name=params["name"], arguments_json=arguments)
        get.client_capabilities_json = params.get("capabilities", "")
        get.input_answers_json = params.get("answers", "")
        get.auth_json = _claims_json(params)
        return pb.Envelope(get_prompt_request=get)
    request = pb.CompletionRequest(
        ref_type=params["ref_type"],
        ref_name=params["ref"],
        argument_name=params["argument"],
        argument_value=params["value"],
        context_arguments_json=orjson.dumps(params["context"]).decode(),
    )
    return pb.Envelope(completion_request=request)


class ForwardError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


INTERNAL_ERROR = -32603


def forward_result(
    forward: Forward, reply: pb.Envelope, raw: list[bytes] | None, trusted: bool
) -> list[bytes]:
    """The MCP result (JSON, in pieces) for a tool process's answer. Raises ForwardError."""
    kind = reply.WhichOneof("msg")
    if kind == "read_resource_response":
        read = reply.read_resource_response
        if read.is_error:
            data = {"uri": forward.params["uri"]} if read.error_code == -32002 else None
            raise ForwardError(read.error_code or INTERNAL_ERROR, read.error, data)
        if raw is not None:
            contents = raw
        elif read.contents_json:
            contents = [read.contents_json.encode()]
        else:
            contents = [orjson.dumps([_content(c) for c in read.contents])]
        if not trusted:
            contents = [_checked_list(b"".join(contents), "resource contents")]
        return [b'{"contents":', *contents, b"}"]
    if kind == "get_prompt_response":
        prompt = reply.get_prompt_response
        if prompt.is_error:
            raise ForwardError(prompt.error_code or INTERNAL_ERROR, prompt.error)
        messages = prompt.messages_json.encode() or b"[]"
        if not trusted:
            messages = _checked_list(messages, "prompt messages")
        head = b'{"description":' + orjson.dumps(prompt.description) + b"," if prompt.description else b"{"
        return [head, b'"messages":', messages, b"}"]
    if kind == "completion_response":
        completed = reply.completion_response
        values = list(completed.values)[:100]
        completion = {
            "values": values,
            "total": max(completed.total, len(values)),
            "hasMore": completed.has_more,
        }
        return [orjson.dumps({"completion": completion})]
    raise ForwardError(INTERNAL_ERROR, f"the tool process answered {forward.method} with {kind!r}")


def _content(content: pb.ResourceContent) -> dict[str, Any]:
    item: dict[str, Any] = {"uri": content.uri}
    if content.mime_type:
        item["mimeType"] = content.mime_type
    if content.blob:
        item["blob"] = base64.b64encode(content.blob).decode("ascii")
    else:
        item["text"] = content.text
    return item


def _checked_list(data: bytes, what: str) -> bytes:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, list):
        raise ForwardError(INTERNAL_ERROR, f"the tool process sent malformed {what}")
    return orjson.dumps(value)  # one line, whatever the process wrote
