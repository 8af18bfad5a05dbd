"""A tool's JSON Schema as protobuf messages: ``tool_messages`` makes one .proto file (see
protoschema.py for the mapping)."""

from __future__ import annotations

import re

import orjson
from google.protobuf import descriptor_pb2, struct_pb2

from protomcp_sdk.wire.jsontypes import JSON, JSONObject
from protomcp_sdk.wire.schema_options import (
    DEF,
    FIELD_SCHEMA,
    ITEMS,
    MESSAGE_SCHEMA,
    NO_PROPERTIES,
    NULLABLE,
    OPTIONS_FILE,
    REF,
    VALUE,
    VALUE_DEFS,
    WHOLE,
    F,
    SchemaError,
)

PACKAGE = "protomcp.tools"
STRUCT_FILE = struct_pb2.DESCRIPTOR.name  # google/protobuf/struct.proto
SCALARS = {"string": F.TYPE_STRING, "integer": F.TYPE_INT64, "number": F.TYPE_DOUBLE, "boolean": F.TYPE_BOOL}
# keywords the protobuf structure itself says (everything else goes in the option)
STRUCTURAL = frozenset({"type", "properties", "required", "items", "additionalProperties", "$ref", "$defs"})
IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def camel(name: str) -> str:
    words = [w for w in re.split(r"[^A-Za-z0-9]+", name) if w]
    text = "".join(w[:1].upper() + w[1:] for w in words) or "Tool"
    return text if text[0].isalpha() else "T" + text


def _field_name(key: str, taken: set[str]) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", key)
    if not IDENTIFIER.fullmatch(name):
        name = "f_" + name
    base, n = name, 2
    while name.lower() in taken:  # protobuf field names must differ ignoring case in JSON
        name, n = f"{base}_{n}", n + 1
    taken.add(name.lower())
    return name


class _Builder:
    """Builds one top-level message (and its nested ones) from an object schema."""

    def __init__(self, top: descriptor_pb2.DescriptorProto, full_name: str, defs: JSONObject) -> None:
        self.top, self.full_name, self.defs = top, full_name, defs
        self.def_names: dict[str, str] = {}  # $defs key -> nested message full name
        self.needs_struct = False

    def build(self, schema: JSONObject) -> None:
        objects = {k: _schema_dict(v, k) for k, v in self.defs.items() if _is_object(_schema_dict(v, k))}
        self.value_defs = {k: v for k, v in self.defs.items() if k not in objects}
        for key in objects:  # names first: $defs may refer to each other (and to themselves)
            name = _unique("Def" + camel(key), {n.rsplit(".", 1)[1] for n in self.def_names.values()})
            self.def_names[key] = f"{self.full_name}.{name}"
        for key, definition in objects.items():
            nested = self.top.nested_type.add(name=self.def_names[key].rsplit(".", 1)[1])
            self._object(nested, self.def_names[key], definition, {DEF: key})
        self._object(
            self.top, self.full_name, schema, {VALUE_DEFS: self.value_defs} if self.value_defs else {}
        )

    def _object(
        self,
        message: descriptor_pb2.DescriptorProto,
        full: str,
        schema: JSONObject,
        marks: JSONObject,
    ) -> None:
        extras = {**_extras(schema), **marks}
        if "properties" not in schema:
            extras[NO_PROPERTIES] = True
        for key in ("required", "additionalProperties"):
            if key in schema:
                extras[key] = schema[key]
        message.options.Extensions[MESSAGE_SCHEMA] = _dumps(extras)
        taken: set[str] = set()
        for number, (key, sub) in enumerate((schema.get("properties") or {}).items(), start=1):
            field = message.field.add(name=_field_name(key, taken), number=number, json_name=key)
            self._field(message, full, field, _schema_dict(sub, key))

    def _field(
        self,
        message: descriptor_pb2.DescriptorProto,
        full: str,
        field: descriptor_pb2.FieldDescriptorProto,
        schema: JSONObject,
    ) -> None:
        inner, nullable = _unwrap_nullable(schema)
        extras = _extras(schema)
        if nullable:
            extras.pop("anyOf")
            extras[NULLABLE] = True
        field.label = F.LABEL_OPTIONAL
        kind = self._kind(message, full, field, inner, extras)
        if kind == "any":  # google.protobuf.Value / Struct: the whole schema is the option
            extras = {**schema, WHOLE: True}
        elif kind == "repeated":
            field.label = F.LABEL_REPEATED
        elif kind == "scalar":  # presence, so an absent argument stays absent
            field.proto3_optional = True
            field.oneof_index = len(message.oneof_decl)
            message.oneof_decl.add(name=f"_{field.name}")
        if extras:
            field.options.Extensions[FIELD_SCHEMA] = _dumps(extras)

    def _kind(
        self,
        message: descriptor_pb2.DescriptorProto,
        full: str,
        field: descriptor_pb2.FieldDescriptorProto,
        schema: JSONObject,
        extras: JSONObject,
    ) -> str:
        """Set the field's type from `schema`: "scalar", "message", "repeated" or "any"."""
        ref, kind = schema.get("$ref"), schema.get("type")
        if isinstance(ref, str) and not set(schema) & (STRUCTURAL - {"$ref"}) and not _combines(schema):
            key = ref.removeprefix("#/$defs/")
            if key in self.value_defs and ref.startswith("#/$defs/"):
                extras[REF] = ref
                return self._kind(message, full, field, _schema_dict(self.value_defs[key], key), extras)
            if not ref.startswith("#/$defs/") or key not in self.def_names:
                raise SchemaError(f"{field.json_name}: unresolvable reference {ref!r}")
            field.type, field.type_name = F.TYPE_MESSAGE, "." + self.def_names[key]
            return "message"
        if isinstance(kind, str) and kind in SCALARS and not _has_structure(schema):
            field.type = SCALARS[kind]
            return "scalar"
        if kind == "array" and isinstance(schema.get("items"), dict) and not _combines(schema):
            items = schema["items"]
            marks: JSONObject = {}
            plain = "$ref" in items or (items.get("type") in SCALARS and not _has_structure(items))
            plain = plain or (items.get("type") == "object" and isinstance(items.get("properties"), dict))
            if plain and self._kind(message, full, field, items, marks) in ("scalar", "message"):
                if _extras(items) or marks:
                    extras[ITEMS] = {**_extras(items), **marks}
                return "repeated"
            return self._any(field)
        if kind == "object" and isinstance(schema.get("properties"), dict) and not _combines(schema):
            name = _unique(camel(field.json_name), {m.name for m in message.nested_type})
            nested = message.nested_type.add(name=name)
            self._object(nested, f"{full}.{name}", schema, {})
            field.type, field.type_name = F.TYPE_MESSAGE, f".{full}.{name}"
            return "message"
        values = schema.get("additionalProperties")
        if (
            kind == "object"
            and set(schema) & STRUCTURAL == {"type", "additionalProperties"}
            and (isinstance(values, dict) and values.get("type") in SCALARS and not _has_structure(values))
        ):
            name = _unique(camel(field.json_name) + "Entry", {m.name for m in message.nested_type})
            entry = message.nested_type.add(name=name)
            entry.options.map_entry = True
            entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, json_name="key")
            entry.field.add(
                name="value",
                number=2,
                type=SCALARS[values["type"]],
                label=F.LABEL_OPTIONAL,
                json_name="value",
            )
            if _extras(values):
                extras[ITEMS] = _extras(values)
            field.type, field.type_name = F.TYPE_MESSAGE, f".{full}.{name}"
            return "repeated"
        return self._any(field)

    def _any(self, field: descriptor_pb2.FieldDescriptorProto) -> str:
        """Any JSON value: what protobuf types cannot express exactly."""
        self.needs_struct = True
        field.type, field.type_name = F.TYPE_MESSAGE, VALUE
        return "any"


def _is_object(schema: JSONObject) -> bool:
    return (
        schema.get("type") == "object"
        and isinstance(schema.get("properties"), dict)
        and not _combines(schema)
    )


def _unique(wanted: str, taken: set[str]) -> str:
    name, n = wanted, 2
    while name in taken:
        name, n = f"{wanted}{n}", n + 1
    return name


def _combines(schema: JSONObject) -> bool:
    return any(
        k in schema for k in ("anyOf", "oneOf", "allOf", "not", "if", "patternProperties", "prefixItems")
    )


def _schema_dict(value: JSON, where: str) -> JSONObject:
    if value is True:
        return {}
    if not isinstance(value, dict):
        raise SchemaError(f"{where}: a schema must be an object, not {value!r}")
    return value


def _extras(schema: JSONObject) -> JSONObject:
    return {k: v for k, v in schema.items() if k not in STRUCTURAL}


def _has_structure(schema: JSONObject) -> bool:
    return bool(set(schema) & (STRUCTURAL - {"type"})) or _combines(schema)


def _unwrap_nullable(schema: JSONObject) -> tuple[JSONObject, bool]:
    """anyOf [X, {"type": "null"}] → (X, True)."""
    options = schema.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        other = options[0] if options[1] == {"type": "null"} else options[1]
        if isinstance(other, dict):
            return other, True
    return schema, False


def _dumps(value: JSON) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def tool_messages(
    tool_name: str,
    input_schema: JSONObject,
    output_schema: JSONObject | None = None,
    package: str = PACKAGE,
) -> descriptor_pb2.FileDescriptorProto:
    """One .proto file for a tool: ``<Camel>Request`` from `input_schema`, and
    ``<Camel>Response`` from `output_schema` when there is one."""
    file = descriptor_pb2.FileDescriptorProto(
        name=f"{package.replace('.', '/')}/{tool_name}.proto", package=package, syntax="proto3"
    )
    needs_struct = False
    for suffix, schema in (("Request", input_schema), ("Response", output_schema)):
        if schema is None:
            continue
        schema = _schema_dict(schema, f"{tool_name} {suffix.lower()} schema")
        top = file.message_type.add(name=camel(tool_name) + suffix)
        builder = _Builder(top, f"{package}.{top.name}", dict(schema.get("$defs") or {}))
        builder.build(schema)
        needs_struct |= builder.needs_struct
    if needs_struct:
        file.dependency.append(STRUCT_FILE)
    file.dependency.append(OPTIONS_FILE)
    return file
