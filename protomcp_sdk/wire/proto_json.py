"""One argument object (or structured result) between JSON and a protobuf message, exactly
for every shape tool_messages makes (and messages written by hand); a JSON null becomes an
absent field."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from google.protobuf.message import Message

from protomcp_sdk.wire.jsontypes import JSON, JSONObject
from protomcp_sdk.wire.schema_options import SCALAR_NAMES, VALUE, WELL_KNOWN_PACKAGE, AnyDescriptor, F

INT_RANGES = {
    **dict.fromkeys((F.TYPE_INT32, F.TYPE_SINT32, F.TYPE_SFIXED32), (-(2**31), 2**31)),
    **dict.fromkeys((F.TYPE_UINT32, F.TYPE_FIXED32), (0, 2**32)),
    **dict.fromkeys((F.TYPE_UINT64, F.TYPE_FIXED64), (0, 2**64)),
}


def json_to_message(data: JSONObject, cls: type[Message]) -> Message:
    """An argument object (or structured result) as a message of `cls`. Raises ValueError."""
    message = cls()
    _fill(message, data, "")
    return message


def _fill(message: Message, data: JSON, where: str) -> None:
    descriptor = message.DESCRIPTOR
    if descriptor.full_name.startswith(WELL_KNOWN_PACKAGE):  # Struct, Value, Timestamp...: their JSON
        try:
            ParseDict(data, message)
        except ParseError as exc:
            raise ValueError(f"{where or 'arguments'}: {exc}") from None
        return
    if not isinstance(data, dict):
        raise ValueError(f"{where or 'arguments'}: expected an object, got {_kind_of(data)}")
    by_json = {field.json_name: field for field in descriptor.fields}
    for key, value in data.items():
        field = by_json.get(key)
        at = f"{where}.{key}" if where else key
        if field is None:
            raise ValueError(f"{at}: no such field in {descriptor.name}")
        if value is None and (field.message_type is None or field.message_type.full_name != VALUE[1:]):
            continue  # null: absent
        _set(message, field, value, at)


def _set(message: Message, field: AnyDescriptor, value: JSON, at: str) -> None:
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        if not isinstance(value, dict):
            raise ValueError(f"{at}: expected an object, got {_kind_of(value)}")
        target = getattr(message, field.name)
        key_field = field.message_type.fields_by_name["key"]
        value_field = field.message_type.fields_by_name["value"]
        for key, item in value.items():
            if key_field.type != F.TYPE_STRING:  # JSON keys are strings; protobuf's may be numbers
                try:
                    key = int(key) if SCALAR_NAMES.get(key_field.type) == "integer" else key == "true"
                except ValueError:
                    raise ValueError(f"{at}: key {key!r} is not an integer") from None
            if value_field.message_type is None:
                target[key] = _scalar(value_field, item, f"{at}.{key}")
            else:
                _fill(target[key], item, f"{at}.{key}")
        return
    if field.is_repeated:
        if not isinstance(value, list):
            raise ValueError(f"{at}: expected an array, got {_kind_of(value)}")
        target = getattr(message, field.name)
        for i, item in enumerate(value):
            if field.message_type is None:
                target.append(_scalar(field, item, f"{at}[{i}]"))
            else:
                _fill(target.add(), item, f"{at}[{i}]")
        return
    if field.message_type is not None:
        target = getattr(message, field.name)
        _fill(target, value, at)
        target.SetInParent()  # present even when empty ({})
        return
    setattr(message, field.name, _scalar(field, value, at))


def _scalar(field: AnyDescriptor, value: JSON, at: str) -> object:
    # what the field holds: str, int, float, bool or bytes
    kind = SCALAR_NAMES.get(field.type)
    ok = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
    }.get(kind or "", False)
    if not ok:
        raise ValueError(f"{at}: expected {kind}, got {_kind_of(value)}")
    if kind == "integer":
        low, high = INT_RANGES.get(field.type, (-(2**63), 2**63))
        if not low <= value < high:
            raise ValueError(f"{at}: {value} is out of range for {_type_word(field)}")
    if field.type == F.TYPE_BYTES:
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error:
            raise ValueError(f"{at}: expected base64") from None
    if field.type == F.TYPE_ENUM:
        found = field.enum_type.values_by_name.get(value)
        if found is None:
            names = ", ".join(field.enum_type.values_by_name)
            raise ValueError(f"{at}: {value!r} is not one of {names}")
        return found.number
    return value


def _type_word(field: AnyDescriptor) -> str:
    return {v: k for k, v in vars(F).items() if k.startswith("TYPE_")}[field.type][5:].lower()


def _plain(field: AnyDescriptor, value: Any) -> JSON:  # a field's value: str, int, float, bool or bytes
    """A scalar field's value as JSON (bytes as base64, an enum by name)."""
    if field.type == F.TYPE_BYTES:
        return base64.b64encode(value).decode()
    if field.type == F.TYPE_ENUM:
        found = field.enum_type.values_by_number.get(value)
        return found.name if found is not None else value
    return value


def _kind_of(value: JSON) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def message_to_json(message: Message) -> JSONObject:
    """A message back as the JSON object it stands for (absent fields left out)."""
    arguments: JSONObject = _read(message)
    return arguments


def _read(message: Message) -> JSON:
    if message.DESCRIPTOR.full_name.startswith(WELL_KNOWN_PACKAGE):
        return MessageToDict(message)
    out: JSONObject = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            if value:
                inner = field.message_type.fields_by_name["value"]
                out[field.json_name] = {
                    str(k): (_plain(inner, v) if inner.message_type is None else _read(v))
                    for k, v in value.items()
                }
        elif field.is_repeated:
            if value:
                out[field.json_name] = [
                    _plain(field, v) if field.message_type is None else _read(v) for v in value
                ]
        elif field.message_type is not None:
            if message.HasField(field.name):
                out[field.json_name] = _read(value)
        elif field.has_presence:
            if message.HasField(field.name):
                out[field.json_name] = _plain(field, value)
        else:
            out[field.json_name] = _plain(field, value)
    return out
