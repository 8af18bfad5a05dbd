"""The JSON type predicates of the host: what a decoded JSON value is, in JSON Schema's terms.

A decoded ``true`` is a Python ``bool``, which is also an ``int``: every test here keeps the
two apart. ``integer`` follows JSON Schema (2020-12): ``1.0`` is an integer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def is_string(value: Any) -> bool:
    return isinstance(value, str)


def is_integer(value: Any) -> bool:
    if isinstance(value, int):
        return not isinstance(value, bool)
    return isinstance(value, float) and value.is_integer()


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_boolean(value: Any) -> bool:
    return isinstance(value, bool)


def is_null(value: Any) -> bool:
    return value is None


def is_object(value: Any) -> bool:
    return isinstance(value, dict)


def is_array(value: Any) -> bool:
    return isinstance(value, list)


def is_id(value: Any) -> bool:
    """A JSON-RPC request id, progress token or cancelled ``requestId``: a string or an integer
    (not a boolean, not a float)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": is_string,
    "integer": is_integer,
    "number": is_number,
    "boolean": is_boolean,
    "null": is_null,
    "object": is_object,
    "array": is_array,
}
"""JSON Schema's type names and their tests."""

PRIMITIVE_TYPES = frozenset({"string", "integer", "number", "boolean", "null"})
