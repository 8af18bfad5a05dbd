"""A tool's JSON Schema as protobuf messages, and arguments between JSON and protobuf.

`tool_messages` turns a tool's inputSchema (and outputSchema) into one .proto file:
``<Camel>Request`` (and ``<Camel>Response``) in package ``protomcp.tools``, nested messages for
objects and ``$defs``. Types: string → string, integer → int64, number → double, boolean →
bool, an array → repeated (an array of arrays, or of mixed items → ``google.protobuf.Value``),
an object with properties → a message, with only ``additionalProperties`` → a map (or
``google.protobuf.Struct``), anything else (``anyOf`` of several types, no type) →
``google.protobuf.Value``. A scalar that is not required, or may be null, is ``optional``
(proto3 presence), so absent stays absent. What the protobuf type cannot say — constraints
(minimum, maxLength, pattern, enum...), description, title, default, format — travels as the
``(protomcp.field_schema)`` / ``(protomcp.message_schema)`` option (proto/protomcp/options.proto),
so `schema_from_message` gives the original schema back.

`json_to_message` / `message_to_json` move one argument object (or structured result) between
the two, exactly for every shape above; a JSON null becomes an absent field. Imports protobuf
and the standard library only (host and tool processes both use it).

This module is the one to import them from; each direction lives in a module of its own:
schema_to_proto (tool_messages), proto_to_schema, proto_json, descriptor_sets (self-contained
sets, message classes), proto_text (.proto source), and their vocabulary in schema_options.
"""

from __future__ import annotations

from protomcp_sdk.wire.descriptor_sets import (
    descriptor_set,
    files_of,
    message_class,
    message_names,
    self_contained,
)
from protomcp_sdk.wire.proto_json import json_to_message, message_to_json
from protomcp_sdk.wire.proto_text import proto_source
from protomcp_sdk.wire.proto_to_schema import schema_from_message
from protomcp_sdk.wire.schema_options import OPTIONS_FILE, WELL_KNOWN, SchemaError
from protomcp_sdk.wire.schema_to_proto import PACKAGE, tool_messages

__all__ = [
    "OPTIONS_FILE",
    "PACKAGE",
    "WELL_KNOWN",
    "SchemaError",
    "descriptor_set",
    "files_of",
    "json_to_message",
    "message_class",
    "message_names",
    "message_to_json",
    "proto_source",
    "schema_from_message",
    "self_contained",
    "tool_messages",
]
