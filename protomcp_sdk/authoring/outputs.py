"""Checking a result's structuredContent against the tool's outputSchema before it is sent.

A client that knows the outputSchema rejects a result that does not match it (the official
SDK client raises); checked here, the mismatch becomes an error result that names the field,
which the tool's author can act on. Plain values (``-> int``, ``-> str | None``...) are
checked with a type test; other schemas with jsonschema, compiled once per tool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import orjson

from protomcp_sdk.wire.jsontypes import JSON, JSONObject
from protomcp_sdk.wire.jsontypes import JSON_TYPES as _TYPES

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

# (the value the tool returned, the structuredContent JSON) -> None, or what is wrong
OutputCheck = Callable[[object, bytes], str | None]


def output_check(schema: JSONObject, wraps_result: bool) -> OutputCheck:
    """A checker for one tool's results; builds a jsonschema validator only when needed."""
    inner = schema.get("properties", {}).get("result") if wraps_result else None
    if isinstance(inner, dict) and (tests := _primitive_tests(inner)) is not None:

        def check_value(value: object, structured: bytes) -> str | None:
            if any(test(value) for test in tests):
                return None
            return f"result: {_shown(value)} is not of type {_kinds(inner)}"

        return check_value
    validator: Draft202012Validator | None = None

    def check_json(value: object, structured: bytes) -> str | None:
        nonlocal validator
        if validator is None:
            validator = _compile(schema)
        from jsonschema.exceptions import best_match

        error = best_match(validator.iter_errors(orjson.loads(structured)))
        if error is None:
            return None
        where = ".".join(str(part) for part in error.absolute_path)
        return f"{where}: {error.message}" if where else error.message

    return check_json


def _primitive_tests(schema: JSONObject) -> list[Callable[[JSON], bool]] | None:
    extra = set(schema) - {"type", "anyOf", "title", "description", "default"}
    if extra:
        return None
    if "anyOf" in schema:
        tests: list[Callable[[JSON], bool]] = []
        for option in schema["anyOf"]:
            found = _primitive_tests(option) if isinstance(option, dict) and "anyOf" not in option else None
            if found is None:
                return None
            tests.extend(found)
        return tests
    kind = schema.get("type")
    return [_TYPES[kind]] if isinstance(kind, str) and kind in _TYPES else None


def _kinds(schema: JSONObject) -> str:
    options = schema.get("anyOf", [schema])
    return " or ".join(str(option.get("type")) for option in options)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _compile(schema: JSONObject) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema)
