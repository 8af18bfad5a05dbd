"""Input schemas and argument converters for simple signatures, built without pydantic.

A simple signature has every parameter ``str``, ``int``, ``float``, ``bool``, one of those
``| None``, or unannotated, and defaults that are plain JSON scalars. A tool file made only of
such tools never imports pydantic; the schemas are the ones pydantic would generate and
conversion follows pydantic's lax mode (``tests/sdk/authoring/test_fast_path.py`` checks both
against pydantic).
"""

from __future__ import annotations

import inspect
import math
import types
import typing
from typing import TYPE_CHECKING, Any, Union

from protomcp_sdk.authoring.arguments import Converter, argument_error
from protomcp_sdk.authoring.lax_scalars import COERCE, Coerce, Invalid, or_none
from protomcp_sdk.wire.jsontypes import JSONObject

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

Param = tuple[str, object, object]  # (name, annotation, default or REQUIRED)

REQUIRED: object = inspect.Parameter.empty
_MISSING = object()
_UNION_TYPES = (Union, types.UnionType)
_JSON_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def simple_type(annotation: object) -> tuple[type | None, bool] | None:
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
    return default is REQUIRED or default is None or type(default) in (str, int, bool)


def type_schema(base: type | None, nullable: bool) -> JSONObject:
    if base is None:
        return {}
    schema = {"type": _JSON_TYPES[base]}
    return {"anyOf": [schema, {"type": "null"}]} if nullable else schema


def simple_arguments(params: list[Param], tool_name: str) -> tuple[JSONObject, Converter] | None:
    """Input schema and converter for a simple signature, or None if it is not one."""
    properties: JSONObject = {}
    required: list[str] = []
    # (name, exact type: the value as-is, coerce: anything else, default)
    fields: list[tuple[str, type | None, Coerce, object]] = []
    for name, annotation, default in params:
        simple = simple_type(annotation)
        if simple is None or not _is_plain_default(default):
            return None
        base, nullable = simple
        prop = type_schema(base, nullable)
        if default is REQUIRED:
            required.append(name)
        else:
            prop["default"] = default
        properties[name] = dict(sorted(prop.items()))  # pydantic sorts schema keys
        coerce = COERCE[base]
        fields.append((name, base, or_none(coerce) if nullable else coerce, default))
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
                if default is REQUIRED:
                    errors.append(
                        {"loc": (name,), "type": "missing", "msg": "Field required", "input": arguments}
                    )
                else:
                    kwargs[name] = default
            else:
                try:
                    kwargs[name] = coerce(value)
                except Invalid as problem:
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
            raise argument_error(tool_name, errors)
        return kwargs

    return convert
