"""Input schemas, argument converters and output schemas built with pydantic v2: one model per
tool, for every signature that is not simple (``Annotated``/``Field``, ``Literal``, enums,
models, containers...). pydantic is imported here only when a tool needs it."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any

from protomcp_sdk.authoring.arguments import Converter, argument_error
from protomcp_sdk.authoring.simple_signatures import REQUIRED, Param
from protomcp_sdk.wire.jsontypes import JSONObject

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue

TOOL_MODULE = "__protomcp_tools__"  # the module name a tool file runs under (runtime.loading)


def pydantic_arguments(params: list[Param], tool_name: str) -> tuple[JSONObject, Converter]:
    """One pydantic model per tool: its JSON schema, and its validation as the converter."""
    from pydantic import Field, ValidationError

    definitions: dict[str, Any] = {}  # pydantic's field definitions
    # (model field name, parameter name): fields use safe internal names and the parameter
    # name as alias, so any parameter name works (``_x``, ``model_config``, ``json``...).
    fields: list[tuple[str, str]] = []
    for name, annotation, default in params:
        attr = f"p{len(fields)}"
        definitions[attr] = (
            Annotated[annotation, Field(alias=name)],
            ... if default is REQUIRED else default,
        )
        fields.append((attr, name))
    model = _arguments_model(tool_name, definitions, {name: annotation for name, annotation, _ in params})
    input_schema = _generate(lambda gen: model.model_json_schema(schema_generator=gen))
    input_schema.pop("title", None)  # the model's made-up name means nothing to a client
    validate = model.model_validate

    def convert(arguments: JSONObject) -> dict[str, object]:
        try:
            values = validate(arguments).__dict__
        except ValidationError as exc:
            raise argument_error(tool_name, exc.errors(include_url=False)) from None
        return {param: values[attr] for attr, param in fields}

    return input_schema, convert


def _arguments_model(
    tool_name: str, definitions: dict[str, Any], annotations: dict[str, object]
) -> type[BaseModel]:
    from pydantic import ConfigDict, create_model

    config = ConfigDict(extra="forbid")
    try:
        return create_model(f"{tool_name}_arguments", __config__=config, **definitions)
    except Exception as exc:
        culprit = _failing_parameter(annotations)
        if culprit is not None and _unsupported_type(exc):
            raise TypeError(
                f"tool {tool_name!r}: parameter {culprit!r} has type {_type_name(annotations[culprit])}, "
                f"which has no JSON Schema, so a client cannot send it. {SUPPORTED_TYPES}"
            ) from None
        where = f"parameter {culprit!r}" if culprit else "its parameters"
        raise TypeError(
            f"tool {tool_name!r}: cannot build an input schema from {where}: {_pydantic_message(exc)}"
        ) from None  # pydantic's own frames say nothing to the tool's author


SUPPORTED_TYPES = (
    "Use str, int, float, bool, a Literal, an Enum, list/dict of those, a dataclass, a TypedDict or "
    "a pydantic model (and convert to your own type inside the tool)."
)


def _unsupported_type(exc: Exception) -> bool:
    """pydantic cannot describe the type at all (an arbitrary class)."""
    from pydantic.errors import PydanticSchemaGenerationError

    return isinstance(exc, PydanticSchemaGenerationError)


def _failing_parameter(annotations: dict[str, Any]) -> str | None:
    """Name the parameter whose type pydantic rejects (only used to word an error).

    Annotations are typed ``Any``: they are runtime type forms, which pydantic's ``TypeAdapter``
    types as ``TypeForm[T]`` in newer releases and ``type[T] | Any`` in older ones."""
    from pydantic import TypeAdapter

    for name, annotation in annotations.items():
        try:
            TypeAdapter(annotation)
        except Exception:
            return name
    return None


def pydantic_output_schema(annotation: Any, tool_name: str) -> JSONObject:
    from pydantic import TypeAdapter

    try:
        adapter: TypeAdapter[object] = TypeAdapter(annotation)
        schema = _generate(lambda gen: adapter.json_schema(mode="serialization", schema_generator=gen))
    except Exception as exc:
        why = "it has no JSON Schema" if _unsupported_type(exc) else _pydantic_message(exc)
        raise TypeError(
            f"tool {tool_name!r}: cannot build an output schema from the return annotation "
            f"{_type_name(annotation)} ({why}). Return str, a dict, a list, a "
            "dataclass or a pydantic model, or remove the return annotation"
        ) from None  # pydantic's own frames say nothing to the tool's author
    return _inline_root_ref(schema)


@cache
def _schema_generator() -> type[GenerateJsonSchema]:
    from pydantic.json_schema import GenerateJsonSchema

    class _Schema(GenerateJsonSchema):
        """Pydantic's generator without the auto-made ``title`` on every property (noise for an LLM).

        Titles a tool author sets explicitly, and model/enum titles in ``$defs``, are kept.
        """

        def field_title_should_be_set(self, schema: Any) -> bool:
            return False

    return _Schema


def _generate(make: Callable[[type[GenerateJsonSchema]], JsonSchemaValue]) -> JSONObject:
    from pydantic.json_schema import PydanticJsonSchemaWarning

    # A default that JSON cannot express is left out of the schema; that is not worth a warning.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PydanticJsonSchemaWarning)
        return dict(make(_schema_generator()))


def _inline_root_ref(schema: JSONObject) -> JSONObject:
    """Turn ``{"$ref": "#/$defs/X", "$defs": ...}`` (recursive models) into X's own schema."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or set(schema) - {"$ref", "$defs"} or not ref.startswith("#/$defs/"):
        return schema
    defs = schema["$defs"]
    return {**defs[ref.removeprefix("#/$defs/")], "$defs": defs}


def _pydantic_message(exc: Exception) -> str:
    """pydantic's error text without its documentation links."""
    lines = [line for line in str(exc).splitlines() if not line.strip().startswith("For further information")]
    text = " ".join(line.strip() for line in lines if line.strip()) or type(exc).__name__
    return text.replace(f"{TOOL_MODULE}.", "")  # the tool file's classes by their own names


def _type_name(annotation: object) -> str:
    import typing

    name = None if typing.get_args(annotation) else getattr(annotation, "__qualname__", None)
    return (name or repr(annotation)).replace(f"{TOOL_MODULE}.", "")
