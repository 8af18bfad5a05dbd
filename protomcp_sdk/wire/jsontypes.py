"""JSON Schema's primitive types as tests on decoded (Python) values: bool is not a number
in JSON, and 1.0 is an integer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def is_string(value: Any) -> bool:
    return isinstance(value, str)


def is_integer(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and value.is_integer()
    )


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_boolean(value: Any) -> bool:
    return isinstance(value, bool)


def is_null(value: Any) -> bool:
    return value is None


JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": is_string,
    "integer": is_integer,
    "number": is_number,
    "boolean": is_boolean,
    "null": is_null,
}
"""JSON Schema ``type`` name -> the test for it."""
