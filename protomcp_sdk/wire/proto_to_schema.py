"""The JSON Schema a protobuf message stands for: the original schema of a message made by
tool_messages (its options give back what the types cannot say), a plain one for a message
written by hand."""

from __future__ import annotations

from protomcp_sdk.wire.jsontypes import JSONObject
from protomcp_sdk.wire.schema_options import (
    DEF,
    FIELD_SCHEMA,
    ITEMS,
    MESSAGE_SCHEMA,
    NO_PROPERTIES,
    NULLABLE,
    REF,
    SCALAR_NAMES,
    STRUCT,
    VALUE_DEFS,
    WELL_KNOWN_PACKAGE,
    WHOLE,
    AnyDescriptor,
    F,
    option,
)


def schema_from_message(descriptor: AnyDescriptor) -> JSONObject:
    """The JSON Schema a message stands for (the original one, for a message made here)."""
    defs: JSONObject = {}
    schema = _message_schema(descriptor, defs)
    defs.update(schema.pop(VALUE_DEFS, {}))
    for nested in descriptor.nested_types:
        key = option(nested.GetOptions().Extensions[MESSAGE_SCHEMA]).get(DEF)
        if key is not None:
            defs[key] = _message_schema(nested, defs)
    if defs:
        schema["$defs"] = defs
    return schema


def _message_schema(descriptor: AnyDescriptor, defs: JSONObject) -> JSONObject:
    extras = option(descriptor.GetOptions().Extensions[MESSAGE_SCHEMA])
    extras.pop(DEF, None)
    schema: JSONObject = {"type": "object", "properties": {}}
    for field in descriptor.fields:
        schema["properties"][field.json_name] = _field_schema(field, defs)
    if extras.pop(NO_PROPERTIES, False):
        del schema["properties"]
    schema.update(extras)
    return schema


def _field_schema(field: AnyDescriptor, defs: JSONObject) -> JSONObject:
    extras = option(field.GetOptions().Extensions[FIELD_SCHEMA])
    if extras.pop(WHOLE, False):
        return extras
    nullable = extras.pop(NULLABLE, False)
    items = extras.pop(ITEMS, {})
    item_ref = items.pop(REF, None)
    ref = extras.pop(REF, None)
    if ref is not None:  # a $ref to a $defs entry that is not an object
        inner: JSONObject = {"$ref": ref}
        schema = {"anyOf": [inner, {"type": "null"}]} if nullable else inner
        return {**schema, **extras}
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        value = field.message_type.fields_by_name["value"]
        inner = {"type": "object", "additionalProperties": {**_type_schema(value, defs), **items}}
    elif field.is_repeated:
        item = {"$ref": item_ref} if item_ref else _type_schema(field, defs)
        inner = {"type": "array", "items": {**item, **items}}
    else:
        inner = _type_schema(field, defs)
    schema = {"anyOf": [inner, {"type": "null"}]} if nullable else inner
    schema.update(extras)
    return schema


def _type_schema(field: AnyDescriptor, defs: JSONObject) -> JSONObject:
    if field.message_type is None:
        if field.type == F.TYPE_ENUM:
            return {"type": "string", "enum": [value.name for value in field.enum_type.values]}
        if field.type == F.TYPE_BYTES:
            return {"type": "string", "contentEncoding": "base64"}
        return {"type": SCALAR_NAMES[field.type]}
    message = field.message_type
    if message.full_name.startswith(WELL_KNOWN_PACKAGE):  # in protobuf's own JSON form
        return {"type": "object"} if message.full_name == STRUCT[1:] else {}
    options = message.GetOptions()
    key = option(options.Extensions[MESSAGE_SCHEMA]).get(DEF)
    if key is not None:
        return {"$ref": f"#/$defs/{key}"}
    if not options.HasExtension(MESSAGE_SCHEMA):  # a message written by hand: by reference
        if message.full_name not in defs:
            defs[message.full_name] = {}  # taken before it is built: it may contain itself
            defs[message.full_name] = _message_schema(message, defs)
        return {"$ref": f"#/$defs/{message.full_name}"}
    return _message_schema(message, defs)
