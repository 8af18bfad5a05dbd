"""JSON Schemas and argument converters built from a tool function's type hints.

Everything here runs once, when ``@tool`` decorates a function; the per-call work is one
call of :attr:`Signature.convert`.

Two ways to build them:

- **Simple signatures** (every parameter ``str``, ``int``, ``float``, ``bool``, one of those
  ``| None``, or unannotated; defaults that are plain JSON scalars): built without pydantic
  (simple_signatures.py), which a tool file made only of such tools never imports.
- **Everything else** (``Annotated``/``Field``, ``Literal``, enums, models, containers...):
  one pydantic v2 model per tool (pydantic_schemas.py).
"""

from __future__ import annotations

import inspect
import sys
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Union

from protomcp_sdk.authoring.arguments import ArgumentError, Converter
from protomcp_sdk.authoring.context import CallContext
from protomcp_sdk.authoring.results import CONTENT_TYPES, ToolResult
from protomcp_sdk.authoring.simple_signatures import Param, simple_arguments, simple_type, type_schema
from protomcp_sdk.wire.jsontypes import JSONObject

if TYPE_CHECKING:
    from google.protobuf.message import Message

_UNION_TYPES = (Union, types.UnionType)


@dataclass(frozen=True, slots=True)
class Signature:
    """What a tool function's signature means to MCP."""

    params: tuple[str, ...]  # the arguments in the input schema, in order (no Context)
    # dict of JSON arguments -> keyword arguments for the function; defaults filled in.
    # Raises ArgumentError naming every bad (or unknown) argument.
    convert: Converter
    input_schema: JSONObject
    output_schema: JSONObject | None
    wraps_result: bool
    context_param: str | None
    warnings: tuple[str, ...] = ()  # likely mistakes worth telling the author at load time
    # a typed tool: its one parameter, and its result, are protobuf message classes
    message: type[Message] | None = None
    result_message: type[Message] | None = None


def analyze(
    fn: Callable[..., object], tool_name: str, *, fast: bool = True, returns: bool = True
) -> Signature:
    """Build the argument converter and the input/output schemas of ``fn``.

    ``fast=False`` forces the pydantic path even for simple signatures (tests compare both).
    ``returns=False`` skips the output schema (resources and prompts have none).
    Raises TypeError with a readable message when the signature cannot become a tool.
    """
    hints = resolve_hints(fn, tool_name)
    context_param: str | None = None
    params: list[Param] = []
    notes: list[str] = []
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            star = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise TypeError(
                f"tool {tool_name!r}: parameter {star}{param.name} is not supported; "
                "declare every argument as a named parameter"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(
                f"tool {tool_name!r}: parameter {param.name!r} is positional-only; "
                "tool arguments are passed by name, so remove the '/'"
            )
        annotation = hints.get(param.name, Any)
        if is_context_type(annotation):
            context_param = param.name
            continue
        params.append((param.name, annotation, param.default))
        if param.name in ("ctx", "context"):
            notes.append(
                f"tool {tool_name!r}: parameter {param.name!r} is not annotated Context, so it is an "
                f"argument the model must fill in; write `{param.name}: Context` to get the call context"
            )
        elif param.name not in hints:
            notes.append(
                f"tool {tool_name!r}: parameter {param.name!r} has no type annotation, so the model may "
                "pass any JSON value; annotate it (e.g. `: str`) to get validation and a clear schema"
            )

    message = _message_class(params[0][1]) if len(params) == 1 else None
    if message is not None:
        input_schema, convert = _message_arguments(params[0][0], message, tool_name)
    else:
        built = simple_arguments(params, tool_name) if fast else None
        if built is None:  # (pydantic and its path are imported for the tools that need them only)
            from protomcp_sdk.authoring.pydantic_schemas import pydantic_arguments

            built = pydantic_arguments(params, tool_name)
        input_schema, convert = built
    return_annotation = hints.get("return", inspect.Signature.empty) if returns else inspect.Signature.empty
    output_schema, wraps = output_schema_for(return_annotation, tool_name, fast=fast)
    if _strip_annotated(return_annotation) in (bytes, bytearray):
        notes.append(
            f"tool {tool_name!r} returns bytes, which the model receives as JSON text; return "
            "Image(data, mime_type), Audio(...) or EmbeddedResource(uri, blob=...) to send binary content"
        )
    names = tuple(name for name, _, _ in params)
    result_message = _message_class(return_annotation)
    return Signature(
        names,
        convert,
        input_schema,
        output_schema,
        wraps,
        context_param,
        tuple(notes),
        message,
        result_message,
    )


def _message_class(annotation: object) -> type[Message] | None:
    """A generated protobuf message class (a typed tool's parameter or result), else None."""
    protobuf = sys.modules.get("google.protobuf.message")  # imported by any such class
    if protobuf is None:
        return None
    return annotation if isinstance(annotation, type) and issubclass(annotation, protobuf.Message) else None


def _message_arguments(name: str, message: type[Message], tool_name: str) -> tuple[JSONObject, Converter]:
    """A typed tool: the schema of its message, and JSON arguments → {name: message}."""
    from protomcp_sdk.wire.proto_json import json_to_message
    from protomcp_sdk.wire.proto_to_schema import schema_from_message

    def convert(arguments: JSONObject) -> dict[str, object]:
        try:
            return {name: json_to_message(arguments, message)}
        except ValueError as exc:
            raise ArgumentError(f"Invalid arguments for tool '{tool_name}': {exc}") from None

    return schema_from_message(message.DESCRIPTOR), convert


def resolve_hints(fn: Callable[..., object], tool_name: str) -> dict[str, object]:
    """Type hints with ``Annotated`` kept; also resolves ``from __future__ import annotations``."""
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise TypeError(
            f"tool {tool_name!r}: cannot resolve the type hints of {fn.__qualname__} "
            f"({type(exc).__name__}: {exc}); types used in annotations must be importable "
            "at module level"
        ) from exc


def is_context_type(annotation: object) -> bool:
    """True for ``Context``, ``Optional[Context]`` and ``Annotated[Context, ...]``."""
    annotation = _strip_annotated(annotation)
    if _is_context_class(annotation):
        return True
    if typing.get_origin(annotation) in _UNION_TYPES:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(args) == 1 and _is_context_class(_strip_annotated(args[0]))
    return False


def _is_context_class(annotation: object) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, CallContext)


def output_schema_for(
    annotation: object, tool_name: str = "?", *, fast: bool = True
) -> tuple[JSONObject | None, bool]:
    """``(outputSchema, wraps_result)`` for a return annotation.

    No schema for text-like returns (missing, ``str``, ``None``, ``Any``, ``ToolResult``,
    content blocks). MCP requires an object schema, so any non-object type is wrapped as
    ``{"result": <schema>}`` and ``wraps_result`` is True.
    """
    if annotation is inspect.Signature.empty or _is_unstructured(annotation):
        return None, False
    message = _message_class(annotation)
    if message is not None:
        from protomcp_sdk.wire.proto_to_schema import schema_from_message

        return schema_from_message(message.DESCRIPTOR), False
    simple = simple_type(annotation) if fast else None
    if simple is not None:
        schema = type_schema(*simple)  # never an object: always wrapped
    else:
        from protomcp_sdk.authoring.pydantic_schemas import pydantic_output_schema

        schema = pydantic_output_schema(annotation, tool_name)
        if schema.get("type") == "object":
            return schema, False
    defs = schema.pop("$defs", None)
    wrapped: JSONObject = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    if defs:
        wrapped["$defs"] = defs  # refs are "#/$defs/...": they must live at the document root
    return wrapped, True


def _strip_annotated(annotation: object) -> object:
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _is_unstructured(annotation: object) -> bool:
    """Return types that become plain content: text, blocks, ToolResult (or unions/lists of them)."""
    annotation = _strip_annotated(annotation)
    if annotation in (None, type(None), str, Any, object, ToolResult):
        return True
    if isinstance(annotation, type) and issubclass(annotation, CONTENT_TYPES):
        return True
    origin = typing.get_origin(annotation)
    if origin in _UNION_TYPES:
        return all(_is_unstructured(arg) for arg in typing.get_args(annotation))
    if origin in (list, Sequence):
        (item,) = typing.get_args(annotation) or (Any,)
        item = _strip_annotated(item)
        members = typing.get_args(item) if typing.get_origin(item) in _UNION_TYPES else (item,)
        return all(isinstance(m, type) and issubclass(m, CONTENT_TYPES) for m in members)
    return False
