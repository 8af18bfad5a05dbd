"""JSON Schemas and argument validators built from a tool function's type hints (pydantic v2).

Everything here runs once, when ``@tool`` decorates a function; the per-call work is a
single pydantic validation (see :meth:`protomcp_sdk.registry.ToolSpec.convert`).
"""

from __future__ import annotations

import inspect
import types
import typing
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, PydanticJsonSchemaWarning

from protomcp_sdk.context import Context
from protomcp_sdk.results import CONTENT_TYPES, ToolResult

_UNION_TYPES = (Union, types.UnionType)


class _Schema(GenerateJsonSchema):
    """Pydantic's generator without the auto-made ``title`` on every property (noise for an LLM).

    Titles a tool author sets explicitly, and model/enum titles in ``$defs``, are kept.
    """

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class Signature:
    """What a tool function's signature means to MCP."""

    arguments_model: type[BaseModel]
    # (model field name, parameter name): fields use safe internal names and the parameter
    # name as alias, so any parameter name works (``_x``, ``model_config``, ``json``...).
    fields: tuple[tuple[str, str], ...]
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    wraps_result: bool
    context_param: str | None


def analyze(fn: Callable[..., Any], tool_name: str) -> Signature:
    """Build the argument validator and the input/output schemas of ``fn``.

    Raises TypeError with a readable message when the signature cannot become a tool.
    """
    hints = resolve_hints(fn, tool_name)
    context_param: str | None = None
    definitions: dict[str, Any] = {}
    annotations: dict[str, Any] = {}
    fields: list[tuple[str, str]] = []
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
        default = ... if param.default is param.empty else param.default
        attr = f"p{len(fields)}"
        definitions[attr] = (Annotated[annotation, Field(alias=param.name)], default)
        annotations[param.name] = annotation
        fields.append((attr, param.name))

    model = _arguments_model(tool_name, definitions, annotations)
    input_schema = _generate(lambda gen: model.model_json_schema(schema_generator=gen))
    input_schema.pop("title", None)  # the model's made-up name means nothing to a client
    output_schema, wraps = output_schema_for(hints.get("return", inspect.Signature.empty), tool_name)
    return Signature(model, tuple(fields), input_schema, output_schema, wraps, context_param)


def resolve_hints(fn: Callable[..., Any], tool_name: str) -> dict[str, Any]:
    """Type hints with ``Annotated`` kept; also resolves ``from __future__ import annotations``."""
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise TypeError(
            f"tool {tool_name!r}: cannot resolve the type hints of {fn.__qualname__} "
            f"({type(exc).__name__}: {exc}); types used in annotations must be importable "
            "at module level"
        ) from exc


def is_context_type(annotation: Any) -> bool:
    """True for ``Context``, ``Optional[Context]`` and ``Annotated[Context, ...]``."""
    annotation = _strip_annotated(annotation)
    if annotation is Context:
        return True
    if typing.get_origin(annotation) in _UNION_TYPES:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(args) == 1 and _strip_annotated(args[0]) is Context
    return False


def output_schema_for(annotation: Any, tool_name: str = "?") -> tuple[dict[str, Any] | None, bool]:
    """``(outputSchema, wraps_result)`` for a return annotation.

    No schema for text-like returns (missing, ``str``, ``None``, ``Any``, ``ToolResult``,
    content blocks). MCP requires an object schema, so any non-object type is wrapped as
    ``{"result": <schema>}`` and ``wraps_result`` is True.
    """
    if annotation is inspect.Signature.empty or _is_unstructured(annotation):
        return None, False
    try:
        adapter = TypeAdapter(annotation)
        schema = _generate(lambda gen: adapter.json_schema(mode="serialization", schema_generator=gen))
    except Exception as exc:
        raise TypeError(
            f"tool {tool_name!r}: cannot build an output schema from the return annotation "
            f"{_type_name(annotation)} ({exc}). Return str, a dict, a list, a dataclass or a "
            "pydantic model, or remove the return annotation"
        ) from exc
    schema = _inline_root_ref(schema)
    if schema.get("type") == "object":
        return schema, False
    defs = schema.pop("$defs", None)
    wrapped: dict[str, Any] = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    if defs:
        wrapped["$defs"] = defs  # refs are "#/$defs/...": they must live at the document root
    return wrapped, True


def _arguments_model(
    tool_name: str, definitions: dict[str, Any], annotations: dict[str, Any]
) -> type[BaseModel]:
    config = ConfigDict(extra="ignore")
    try:
        return create_model(f"{tool_name}_arguments", __config__=config, **definitions)
    except Exception as exc:
        culprit = _failing_parameter(annotations)
        where = f"parameter {culprit!r}" if culprit else "its parameters"
        raise TypeError(f"tool {tool_name!r}: cannot build an input schema from {where}: {exc}") from exc


def _failing_parameter(annotations: dict[str, Any]) -> str | None:
    """Name the parameter whose type pydantic rejects (only used to word an error)."""
    for name, annotation in annotations.items():
        try:
            TypeAdapter(annotation)
        except Exception:
            return name
    return None


def _generate(make: Callable[[type[GenerateJsonSchema]], JsonSchemaValue]) -> dict[str, Any]:
    # A default that JSON cannot express is left out of the schema; that is not worth a warning.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PydanticJsonSchemaWarning)
        return dict(make(_Schema))


def _inline_root_ref(schema: dict[str, Any]) -> dict[str, Any]:
    """Turn ``{"$ref": "#/$defs/X", "$defs": ...}`` (recursive models) into X's own schema."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or set(schema) - {"$ref", "$defs"} or not ref.startswith("#/$defs/"):
        return schema
    defs = schema["$defs"]
    return {**defs[ref.removeprefix("#/$defs/")], "$defs": defs}


def _strip_annotated(annotation: Any) -> Any:
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _is_unstructured(annotation: Any) -> bool:
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


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__qualname__", None) or repr(annotation)
