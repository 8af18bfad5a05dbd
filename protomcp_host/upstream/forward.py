"""A request of the calls layer sent to an upstream with the mcp client, its answer turned into
the Envelope a tool process would have sent (a call's progress goes to its leg meanwhile)."""

from __future__ import annotations

from typing import Any

import orjson

from protomcp_host.processes.events import Leg
from protomcp_host.upstream.offer import Names, as_json, dump
from protomcp_sdk.wire import envelope_pb2 as pb


async def send(session: Any, envelope: pb.Envelope, leg: Leg, names: Names) -> tuple[pb.Envelope | None, str]:
    """The request on `session`: the answer, or why there is none."""
    kind = envelope.WhichOneof("msg") or ""
    if kind == "call_tool":
        return await _call_tool(session, envelope.call_tool, leg, names), ""
    if kind == "read_resource_request":
        return await _read(session, envelope.read_resource_request.uri), ""
    if kind == "get_prompt_request":
        return await _prompt(session, envelope.get_prompt_request, names), ""
    if kind == "completion_request":
        return await _complete(session, envelope.completion_request, names), ""
    return None, f"{kind} is not forwarded to an upstream"


def error_reply(kind: str, code: int, message: str) -> pb.Envelope | None:
    """A forwarded request's JSON-RPC error as the Envelope answer (None: a call, which fails)."""
    if kind == "read_resource_request":
        return pb.Envelope(
            read_resource_response=pb.ReadResourceResponse(is_error=True, error=message, error_code=code)
        )
    if kind == "get_prompt_request":
        return pb.Envelope(
            get_prompt_response=pb.GetPromptResponse(is_error=True, error=message, error_code=code)
        )
    return None


async def _call_tool(session: Any, request: pb.CallToolRequest, leg: Leg, names: Names) -> pb.Envelope:
    name = names.tools.get(request.name, request.name)
    arguments = orjson.loads(request.arguments_json) if request.arguments_json else {}

    async def progress(value: float, total: float | None, message: str | None) -> None:
        note = pb.ProgressNotification(progress_value=value, total_value=total or 0.0, message=message or "")
        leg.progress(note)

    result = await session.call_tool(name, arguments, progress_callback=progress)
    dumped = dump(result)
    response = pb.CallToolResponse(
        is_error=bool(dumped.get("isError")), result_json=orjson.dumps(dumped.get("content", [])).decode()
    )
    if dumped.get("structuredContent") is not None:
        response.structured_content_json = orjson.dumps(dumped["structuredContent"]).decode()
    response.meta_json = as_json(dumped.get("_meta"))
    return pb.Envelope(call_result=response)


async def _read(session: Any, uri: str) -> pb.Envelope:
    result = dump(await session.read_resource(uri))
    contents = orjson.dumps(result.get("contents", [])).decode()
    return pb.Envelope(read_resource_response=pb.ReadResourceResponse(contents_json=contents))


async def _prompt(session: Any, request: pb.GetPromptRequest, names: Names) -> pb.Envelope:
    arguments = orjson.loads(request.arguments_json) if request.arguments_json else {}
    name = names.prompts.get(request.name, request.name)
    result = dump(await session.get_prompt(name, {k: str(v) for k, v in arguments.items()}))
    response = pb.GetPromptResponse(
        description=result.get("description") or "",
        messages_json=orjson.dumps(result["messages"]).decode(),
    )
    return pb.Envelope(get_prompt_response=response)


async def _complete(session: Any, request: pb.CompletionRequest, names: Names) -> pb.Envelope:
    from mcp import types

    ref: Any
    if request.ref_type == "ref/prompt":
        ref = types.PromptReference(
            type="ref/prompt", name=names.prompts.get(request.ref_name, request.ref_name)
        )
    else:
        ref = types.ResourceTemplateReference(type="ref/resource", uri=request.ref_name)
    context = orjson.loads(request.context_arguments_json) if request.context_arguments_json else None
    argument = {"name": request.argument_name, "value": request.argument_value}
    completion = (await session.complete(ref, argument, context or None)).completion
    response = pb.CompletionResponse(
        values=completion.values, total=completion.total or 0, has_more=bool(completion.has_more)
    )
    return pb.Envelope(completion_response=response)
