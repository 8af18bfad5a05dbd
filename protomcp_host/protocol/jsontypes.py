"""The JSON type predicates the protocol core uses: the one implementation lives in the wire
contract (`protomcp_sdk.wire.jsontypes`, shared with the tool processes' argument checks)."""

from protomcp_sdk.wire.jsontypes import (
    JSON_TYPES,
    PRIMITIVE_TYPES,
    is_array,
    is_boolean,
    is_id,
    is_integer,
    is_null,
    is_number,
    is_object,
    is_string,
)

__all__ = [
    "JSON_TYPES",
    "PRIMITIVE_TYPES",
    "is_array",
    "is_boolean",
    "is_id",
    "is_integer",
    "is_null",
    "is_number",
    "is_object",
    "is_string",
]
