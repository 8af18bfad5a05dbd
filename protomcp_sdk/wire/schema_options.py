"""The vocabulary of a tool's JSON Schema as protobuf (protoschema.py), shared by both
directions: the ``(protomcp.message_schema)`` / ``(protomcp.field_schema)`` options, the
``x-protomcp-*`` marks they carry beside the schema's own keywords, the scalar types, and
SchemaError."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias, cast

import orjson
from google.protobuf import descriptor_pb2

from protomcp_sdk.wire import options_pb2
from protomcp_sdk.wire.jsontypes import JSONObject

if TYPE_CHECKING:
    from google.protobuf.internal.extension_dict import _ExtensionFieldDescriptor

WELL_KNOWN = "google/protobuf/"
WELL_KNOWN_PACKAGE = "google.protobuf."
OPTIONS_FILE = options_pb2.DESCRIPTOR.name  # protomcp/options.proto
AnyDescriptor: TypeAlias = Any
"""A protobuf descriptor (of a file, message or field), read by reflection. The stubs split each
kind between upb's class and the pure-Python one, and make Optional what a field's type makes
present (``enum_type`` of an enum field): typed, every read here would need a cast."""
# The (protomcp.message_schema) and (protomcp.field_schema) options, typed: protoc's stubs call
# an extension a plain FieldDescriptor, not what it extends and holds.
MESSAGE_SCHEMA = cast(
    "_ExtensionFieldDescriptor[descriptor_pb2.MessageOptions, str]", options_pb2.message_schema
)
FIELD_SCHEMA = cast("_ExtensionFieldDescriptor[descriptor_pb2.FieldOptions, str]", options_pb2.field_schema)
F = descriptor_pb2.FieldDescriptorProto
SCALAR_NAMES = {
    F.TYPE_STRING: "string",
    F.TYPE_INT64: "integer",
    F.TYPE_DOUBLE: "number",
    F.TYPE_BOOL: "boolean",
    # the other types a message written by hand (a typed tool's) may use
    F.TYPE_FLOAT: "number",
    F.TYPE_BYTES: "string",  # base64, as protobuf's JSON mapping
    F.TYPE_ENUM: "string",  # the value's name
    **dict.fromkeys(
        (F.TYPE_INT32, F.TYPE_SINT32, F.TYPE_SFIXED32, F.TYPE_SINT64, F.TYPE_SFIXED64), "integer"
    ),
    **dict.fromkeys((F.TYPE_UINT32, F.TYPE_FIXED32, F.TYPE_UINT64, F.TYPE_FIXED64), "integer"),
}
VALUE, STRUCT = ".google.protobuf.Value", ".google.protobuf.Struct"
# marks in the options (taken out again by schema_from_message)
NULLABLE = "x-protomcp-nullable"  # the field was anyOf [X, {"type": "null"}]
WHOLE = "x-protomcp-whole"  # a google.protobuf.Value field: the option is its whole schema
ITEMS = "x-protomcp-items"  # keywords of an array's items (or a map's values) beside their type
DEF = "x-protomcp-def"  # a message made from $defs[key]
VALUE_DEFS = "x-protomcp-defs"  # $defs that are not objects (enums...): kept as they are
REF = "x-protomcp-ref"  # the field was a $ref to one of those
NO_PROPERTIES = "x-protomcp-no-properties"  # an object schema without "properties"


class SchemaError(ValueError):
    """A schema that cannot be read as a tool's object schema."""


def option(text: str) -> JSONObject:
    """The JSON object an option holds (empty when unset)."""
    return dict(orjson.loads(text)) if text else {}
