"""JSON Schemas and argument converters built from a tool function's type hints.

Everything here runs once, when ``@tool`` decorates a function; the per-call work is one
call of :attr:`Signature.convert`.

Two ways to build them:

- **Simple signatures** (every parameter ``str``, ``int``, ``float``, ``bool``, one of those
  ``| None``, or unannotated; defaults that are plain JSON scalars): built here without
  pydantic, which a tool file made only of such tools never imports. The schemas are the
  ones pydantic would generate and conversion follows pydantic's lax mode
  (``tests/sdk/authoring/test_fast_path.py`` checks both against pydantic).
- **Everything else** (``Annotated``/``Field``, ``Literal``, enums, models, containers...):
  one pydantic v2 model per tool.
"""

from __future__ import annotations

import inspect
import math
import sys
import types
import typing
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Union

from protomcp_sdk.authoring.context import CallContext
from protomcp_sdk.authoring.results import CONTENT_TYPES, ToolResult
from protomcp_sdk.wire.jsontypes import JSON, JSONObject

if TYPE_CHECKING:
    from google.protobuf.message import Message
    from pydantic import BaseModel
    from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
    from pydantic_core import ErrorDetails

Converter = Callable[[JSONObject], dict[str, object]]
"""JSON arguments -> the function's keyword arguments (converted: any Python values)."""
Coerce = Callable[[JSON], object]  # one JSON argument -> the value the function gets
_Param = tuple[str, object, object]  # (name, annotation, default or _REQUIRED)

_REQUIRED: object = inspect.Parameter.empty
_MISSING = object()
_UNION_TYPES = (Union, types.UnionType)
_JSON_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_EXTRA = "Extra inputs are not permitted"
_MAX_SHOWN_INPUT = 60  # characters of a rejected value quoted back in an error


class ArgumentError(ValueError):
    """Arguments that do not fit the tool's parameters; the message is meant for the model."""


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
    params: list[_Param] = []
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
        built = (fast and _simple_arguments(params, tool_name)) or _pydantic_arguments(params, tool_name)
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
    from protomcp_sdk.wire import protoschema

    def convert(arguments: JSONObject) -> dict[str, object]:
        try:
            return {name: protoschema.json_to_message(arguments, message)}
        except ValueError as exc:
            raise ArgumentError(f"Invalid arguments for tool '{tool_name}': {exc}") from None

    return protoschema.schema_from_message(message.DESCRIPTOR), convert


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
        from protomcp_sdk.wire import protoschema

        return protoschema.schema_from_message(message.DESCRIPTOR), False
    simple = _simple_type(annotation) if fast else None
    if simple is not None:
        schema = _type_schema(*simple)  # never an object: always wrapped
    else:
        schema = _pydantic_output_schema(annotation, tool_name)
        if schema.get("type") == "object":
            return schema, False
    defs = schema.pop("$defs", None)
    wrapped: JSONObject = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    if defs:
        wrapped["$defs"] = defs  # refs are "#/$defs/...": they must live at the document root
    return wrapped, True


def describe(errors: Sequence[ErrorDetails]) -> str:
    """Every bad field and what is wrong with it, e.g. ``b: Input should be a valid integer (got 'x')``.

    ``errors`` are pydantic's error dicts (``loc``, ``type``, ``msg``, ``input``); the fast
    path produces the same shape.
    """
    problems = []
    for error in errors:
        where = _location(error["loc"])
        if error["type"] == "missing":
            problems.append(f"{where}: required argument is missing")
            continue
        if error["type"] == "extra_forbidden":
            problems.append(f"{where}: unknown argument (not a parameter of this tool)")
            continue
        problems.append(f"{where}: {error['msg']} (got {_shown(error.get('input'))})")
    return "; ".join(problems)


def _argument_error(tool_name: str, errors: Sequence[ErrorDetails]) -> ArgumentError:
    return ArgumentError(f"Invalid arguments for tool '{tool_name}': {describe(errors)}")


# ---- the fast path: simple signatures without pydantic -----------------------


def _simple_type(annotation: object) -> tuple[type | None, bool] | None:
    """``(base, nullable)`` for str/int/float/bool, ``X | None`` of those, and Any (base None).

    None for every other annotation: those take the pydantic path.
    """
    if annotation is Any:
        return None, False
    if isinstance(annotation, type):
        return (annotation, False) if annotation in _JSON_TYPES else None
    if typing.get_origin(annotation) in _UNION_TYPES:
        args = typing.get_args(annotation)
        if len(args) == 2 and args[1] is type(None) and isinstance(args[0], type) and args[0] in _JSON_TYPES:
            return args[0], True
    return None


def _is_plain_default(default: object) -> bool:
    """Defaults whose JSON is the value itself (what pydantic writes into the schema)."""
    if type(default) is float:
        return math.isfinite(default)
    return default is _REQUIRED or default is None or type(default) in (str, int, bool)


def _type_schema(base: type | None, nullable: bool) -> JSONObject:
    if base is None:
        return {}
    schema = {"type": _JSON_TYPES[base]}
    return {"anyOf": [schema, {"type": "null"}]} if nullable else schema


def _simple_arguments(params: list[_Param], tool_name: str) -> tuple[JSONObject, Converter] | None:
    """Input schema and converter for a simple signature, or None if it is not one."""
    properties: JSONObject = {}
    required: list[str] = []
    # (name, exact type: the value as-is, coerce: anything else, default)
    fields: list[tuple[str, type | None, Coerce, object]] = []
    for name, annotation, default in params:
        simple = _simple_type(annotation)
        if simple is None or not _is_plain_default(default):
            return None
        base, nullable = simple
        prop = _type_schema(base, nullable)
        if default is _REQUIRED:
            required.append(name)
        else:
            prop["default"] = default
        properties[name] = dict(sorted(prop.items()))  # pydantic sorts schema keys
        coerce = _COERCE[base]
        fields.append((name, base, _or_none(coerce) if nullable else coerce, default))
    # Unknown arguments are rejected (pydantic's key order: additionalProperties first).
    schema: JSONObject = {"additionalProperties": False, "properties": properties}
    if required:
        schema["required"] = required
    schema["type"] = "object"
    return schema, _converter(tool_name, tuple(fields))


def _converter(tool_name: str, fields: tuple[tuple[str, type | None, Coerce, object], ...]) -> Converter:
    def convert(arguments: JSONObject) -> dict[str, object]:
        kwargs = {}
        errors: list[ErrorDetails] = []
        given = 0
        for name, exact, coerce, default in fields:
            value = arguments.get(name, _MISSING)
            if value is not _MISSING:
                given += 1
            if type(value) is exact:
                kwargs[name] = value
            elif value is _MISSING:
                if default is _REQUIRED:
                    errors.append(
                        {"loc": (name,), "type": "missing", "msg": "Field required", "input": arguments}
                    )
                else:
                    kwargs[name] = default
            else:
                try:
                    kwargs[name] = coerce(value)
                except _Invalid as problem:
                    errors.append({"loc": (name,), "type": problem.type, "msg": problem.msg, "input": value})
        if given < len(arguments):  # keys that are no parameter, reported after the fields as pydantic does
            known = {field[0] for field in fields}
            errors.extend(
                {
                    "loc": (key,),
                    "type": "extra_forbidden",
                    "msg": "Extra inputs are not permitted",
                    "input": value,
                }
                for key, value in arguments.items()
                if key not in known
            )
        if errors:
            raise _argument_error(tool_name, errors)
        return kwargs

    return convert


class _Invalid(Exception):
    def __init__(self, type: str, msg: str) -> None:
        self.type = type
        self.msg = msg


# pydantic's lax mode for JSON values (error types and messages are pydantic's own)
_I64 = 2.0**63
_INT_TYPE = ("int_type", "Input should be a valid integer")
_INT_PARSING = ("int_parsing", "Input should be a valid integer, unable to parse string as an integer")
_INT_FRACTION = ("int_from_float", "Input should be a valid integer, got a number with a fractional part")
_INT_SIZE = ("int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size")
_FINITE = ("finite_number", "Input should be a finite number")
_FLOAT_TYPE = ("float_type", "Input should be a valid number")
_FLOAT_PARSING = ("float_parsing", "Input should be a valid number, unable to parse string as a number")
_BOOL_TYPE = ("bool_type", "Input should be a valid boolean")
_BOOL_PARSING = ("bool_parsing", "Input should be a valid boolean, unable to interpret input")
_STR_TYPE = ("string_type", "Input should be a valid string")
_BOOL_WORDS = dict.fromkeys(("0", "off", "f", "false", "n", "no"), False) | dict.fromkeys(
    ("1", "on", "t", "true", "y", "yes"), True
)


def _to_int(value: JSON) -> int:
    kind = type(value)
    if kind is int or kind is bool:
        return int(value)
    if kind is float:
        if not math.isfinite(value):
            raise _Invalid(*_FINITE)
        if not value.is_integer():
            raise _Invalid(*_INT_FRACTION)
        if not -_I64 < value < _I64:
            raise _Invalid(*_INT_SIZE)
        return int(value)
    if kind is str:
        text = value.strip()
        whole, dot, decimals = text.partition(".")
        if dot and decimals and not decimals.strip("0"):  # "5.00" is 5
            text = whole
        if text.isascii():
            try:
                return int(text)
            except ValueError:
                pass
        raise _Invalid(*_INT_PARSING)
    raise _Invalid(*_INT_TYPE)


def _to_float(value: JSON) -> float:
    if type(value) is float:
        return value
    kind = type(value)
    if kind is int or kind is bool:
        try:
            return float(value)
        except OverflowError:
            raise _Invalid(*_FLOAT_TYPE) from None
    if kind is str:
        text = value.strip()
        if text.isascii():
            try:
                return float(text)
            except ValueError:
                pass
        raise _Invalid(*_FLOAT_PARSING)
    raise _Invalid(*_FLOAT_TYPE)


def _to_bool(value: JSON) -> bool:
    if type(value) is bool:
        return value
    kind = type(value)
    if kind is str:
        word = _BOOL_WORDS.get(value.lower())
        if word is None:
            raise _Invalid(*_BOOL_PARSING)
        return word
    if kind is int or kind is float:
        if value == 0 or value == 1:
            return bool(value == 1)
        # pydantic reads a number as a 64-bit integer first, and words its error by whether it could
        whole = -_I64 <= value < _I64 if kind is int else value.is_integer() and -_I64 < value < _I64
        raise _Invalid(*(_BOOL_PARSING if whole else _BOOL_TYPE))
    raise _Invalid(*_BOOL_TYPE)


def _to_str(value: JSON) -> str:
    if type(value) is str:
        return value
    raise _Invalid(*_STR_TYPE)


def _as_is(value: JSON) -> JSON:
    return value


def _or_none(coerce: Coerce) -> Coerce:
    def nullable(value: JSON) -> object:
        return None if value is None else coerce(value)

    return nullable


_COERCE: dict[type | None, Coerce] = {
    int: _to_int,
    float: _to_float,
    bool: _to_bool,
    str: _to_str,
    None: _as_is,
}


# ---- the pydantic path ------------------------------------------------------


def _pydantic_arguments(params: list[_Param], tool_name: str) -> tuple[JSONObject, Converter]:
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
            ... if default is _REQUIRED else default,
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
            raise _argument_error(tool_name, exc.errors(include_url=False)) from None
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


def _pydantic_output_schema(annotation: Any, tool_name: str) -> JSONObject:
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


# ---- helpers ----------------------------------------------------------------


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


def _location(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "arguments"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN_INPUT else text[: _MAX_SHOWN_INPUT - 3] + "..."


def _pydantic_message(exc: Exception) -> str:
    """pydantic's error text without its documentation links."""
    lines = [line for line in str(exc).splitlines() if not line.strip().startswith("For further information")]
    text = " ".join(line.strip() for line in lines if line.strip()) or type(exc).__name__
    return text.replace(f"{TOOL_MODULE}.", "")  # the tool file's classes by their own names


def _type_name(annotation: object) -> str:
    import typing

    name = None if typing.get_args(annotation) else getattr(annotation, "__qualname__", None)
    return (name or repr(annotation)).replace(f"{TOOL_MODULE}.", "")


TOOL_MODULE = "__protomcp_tools__"  # the module name a tool file runs under (runtime.loading)
