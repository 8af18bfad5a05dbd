"""The types of decoded JSON, and JSON Schema's primitive types as tests on decoded (Python)
values: bool is not a number in JSON, and 1.0 is an integer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

JSON: TypeAlias = Any
"""A decoded JSON value: dict, list, str, int, float, bool or None (what ``orjson.loads``
gives). Any rather than a recursive union: code reading JSON checks the shapes it relies on
(``is_object`` & co. below, ``isinstance``) where it reads them, not at every step."""

JSONObject: TypeAlias = dict[str, JSON]
"""A decoded JSON object: an MCP request's params or result, a JSON Schema, a ``_meta``."""

JSONArray: TypeAlias = list[JSON]
"""A decoded JSON array."""


def is_string(value: JSON) -> bool:
    return isinstance(value, str)


def is_integer(value: JSON) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and value.is_integer()
    )


def is_number(value: JSON) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_boolean(value: JSON) -> bool:
    return isinstance(value, bool)


def is_null(value: JSON) -> bool:
    return value is None


def is_object(value: JSON) -> bool:
    return isinstance(value, dict)


def is_array(value: JSON) -> bool:
    return isinstance(value, list)


def is_id(value: JSON) -> bool:
    """A JSON-RPC request id, progress token or cancelled ``requestId``: a string or an integer
    (not a boolean, not a float)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


JSON_TYPES: dict[str, Callable[[JSON], bool]] = {
    "string": is_string,
    "integer": is_integer,
    "number": is_number,
    "boolean": is_boolean,
    "null": is_null,
    "object": is_object,
    "array": is_array,
}
"""JSON Schema ``type`` name -> the test for it."""

PRIMITIVE_TYPES = frozenset({"string", "integer", "number", "boolean", "null"})
