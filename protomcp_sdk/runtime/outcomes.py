"""A tool function run to its encoded answer: its arguments decoded and converted, then its
result (or what it raised) encoded as one answer."""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING

import orjson

from protomcp_sdk.authoring.arguments import ArgumentError
from protomcp_sdk.authoring.encoding import Encoded, encode_error, encode_result
from protomcp_sdk.authoring.tools import ToolSpec
from protomcp_sdk.runtime.context import Context
from protomcp_sdk.runtime.loading import report_failure
from protomcp_sdk.wire import envelope_pb2 as pb

if TYPE_CHECKING:
    from google.protobuf.message import Message


async def outcome_async(
    spec: ToolSpec, arguments: str | bytes, ctx: Context, proto: bool = False
) -> Encoded | None:
    """An async tool's answer; None when the call was cancelled from outside."""
    try:
        return encode_result(await spec.fn(**_arguments(spec, arguments, ctx)), spec, proto=proto)
    except asyncio.CancelledError as exc:
        if cancelled_from_outside(ctx):
            return None
        report_failure(exc, ctx)
        return encode_error(exc, spec.name)  # the tool's own code raised it
    except BaseException as exc:  # SystemExit, KeyboardInterrupt...: still one answer
        report_failure(exc, ctx)
        return encode_error(exc, spec.name)


def outcome_sync(spec: ToolSpec, arguments: str | bytes, ctx: Context, proto: bool = False) -> Encoded:
    """A sync tool's answer."""
    try:
        return encode_result(spec.fn(**_arguments(spec, arguments, ctx)), spec, proto=proto)
    except BaseException as exc:  # SystemExit, KeyboardInterrupt...: still one answer
        report_failure(exc, ctx)
        return encode_error(exc, spec.name)


def cancelled_from_outside(ctx: Context) -> bool:
    """A CancelledError came from the host cancelling the call (which has answered it) or from
    the process ending, not from the tool's (or a middleware's) own code."""
    task = asyncio.current_task()
    return ctx.cancelled or (task is not None and task.cancelling() > 0)


def arguments_of(request: pb.CallToolRequest, spec: ToolSpec) -> str | bytes:
    """The call's arguments as they came: JSON, or a typed tool's message."""
    if request.arguments_proto and spec.message is not None:
        return request.arguments_proto  # a typed tool's message, from a proto-mcp client
    return request.arguments_json


def _arguments(spec: ToolSpec, arguments_json: str | bytes, ctx: Context) -> dict[str, object]:
    if isinstance(arguments_json, bytes):  # a typed tool's message as it came: no JSON at all
        kwargs: dict[str, object] = {_the_parameter(spec): _parse(spec, arguments_json)}
    else:
        arguments = orjson.loads(arguments_json) if arguments_json else {}
        if not isinstance(arguments, dict):
            raise ArgumentError(f"Arguments for tool '{spec.name}' must be a JSON object")
        kwargs = spec.convert(arguments)
    if spec.context_param:
        kwargs[spec.context_param] = ctx
    return kwargs


def _the_parameter(spec: ToolSpec) -> str:
    [name] = [p for p in inspect.signature(spec.fn).parameters if p != spec.context_param]
    return name


def _parse(spec: ToolSpec, data: bytes) -> Message:
    from google.protobuf.message import DecodeError

    message = spec.message
    assert message is not None  # bytes come for a typed tool only (arguments_of)
    try:
        return message.FromString(data)
    except DecodeError as exc:
        raise ArgumentError(
            f"Invalid arguments for tool '{spec.name}': not a {message.DESCRIPTOR.full_name} ({exc})"
        ) from None
