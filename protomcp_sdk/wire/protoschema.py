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
"""

from __future__ import annotations

import base64
import binascii
import importlib
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import orjson
from google.protobuf import descriptor_pb2, descriptor_pool, struct_pb2
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from protomcp_sdk.wire import options_pb2
from protomcp_sdk.wire.jsontypes import JSON, JSONObject

if TYPE_CHECKING:
    from google.protobuf.internal.extension_dict import _ExtensionFieldDescriptor

PACKAGE = "protomcp.tools"
STRUCT_FILE = struct_pb2.DESCRIPTOR.name  # google/protobuf/struct.proto
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
SCALARS = {"string": F.TYPE_STRING, "integer": F.TYPE_INT64, "number": F.TYPE_DOUBLE, "boolean": F.TYPE_BOOL}
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
INT_RANGES = {
    **dict.fromkeys((F.TYPE_INT32, F.TYPE_SINT32, F.TYPE_SFIXED32), (-(2**31), 2**31)),
    **dict.fromkeys((F.TYPE_UINT32, F.TYPE_FIXED32), (0, 2**32)),
    **dict.fromkeys((F.TYPE_UINT64, F.TYPE_FIXED64), (0, 2**64)),
}
VALUE, STRUCT = ".google.protobuf.Value", ".google.protobuf.Struct"
# keywords the protobuf structure itself says (everything else goes in the option)
STRUCTURAL = frozenset({"type", "properties", "required", "items", "additionalProperties", "$ref", "$defs"})
# marks in the options (taken out again by schema_from_message)
NULLABLE = "x-protomcp-nullable"  # the field was anyOf [X, {"type": "null"}]
WHOLE = "x-protomcp-whole"  # a google.protobuf.Value field: the option is its whole schema
ITEMS = "x-protomcp-items"  # keywords of an array's items (or a map's values) beside their type
DEF = "x-protomcp-def"  # a message made from $defs[key]
VALUE_DEFS = "x-protomcp-defs"  # $defs that are not objects (enums...): kept as they are
REF = "x-protomcp-ref"  # the field was a $ref to one of those
NO_PROPERTIES = "x-protomcp-no-properties"  # an object schema without "properties"
IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


class SchemaError(ValueError):
    """A schema that cannot be read as a tool's object schema."""


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


def message_names(file: descriptor_pb2.FileDescriptorProto) -> tuple[str, str]:
    """The full names of a tool file's request and (or "") response messages."""
    names = [f"{file.package}.{m.name}" for m in file.message_type]
    return names[0], (names[1] if len(names) > 1 else "")


def descriptor_set(files: Iterable[descriptor_pb2.FileDescriptorProto]) -> descriptor_pb2.FileDescriptorSet:
    """The files with every file they import, transitively, dependencies first, as
    ``protoc --include_imports`` writes a set: a client with an empty descriptor pool (in any
    language) builds their messages from it alone. An imported file that is not among `files`
    is taken from this runtime (google/protobuf/*.proto, protomcp/options.proto); any other
    raises SchemaError.

    An import that only declares custom options (protomcp/options.proto, which would bring
    google/protobuf/descriptor.proto with it) is left out, from the set and from the importing
    file's ``dependency``: the option values stay in the file's options as extension fields,
    which a client without that file keeps as unknown fields and one with it (the host, any
    pool with the options file) reads as before."""
    given = {file.name: file for file in files}

    def find(name: str) -> descriptor_pb2.FileDescriptorProto:
        file = given.get(name)
        if file is None:
            known = _known_file(name)
            if known is None:
                raise SchemaError(f"{name!r} is imported but neither in the set nor a standard file")
            file = _proto_of(known)
        return file

    return _closure(given.values(), find)


def _closure(
    roots: Iterable[descriptor_pb2.FileDescriptorProto],
    find: Callable[[str], descriptor_pb2.FileDescriptorProto],
) -> descriptor_pb2.FileDescriptorSet:
    """`roots` and what they import (found by `find`) but options-only imports, dependencies
    first."""
    out = descriptor_pb2.FileDescriptorSet()
    done: set[str] = set()

    def add(file: descriptor_pb2.FileDescriptorProto) -> None:
        if file.name in done:
            return
        done.add(file.name)  # (protobuf forbids import cycles)
        file = _without_option_imports(file, find)
        for dependency in file.dependency:
            add(find(dependency))
        out.file.append(file)

    for file in roots:
        add(file)
    return out


def _without_option_imports(
    file: descriptor_pb2.FileDescriptorProto,
    find: Callable[[str], descriptor_pb2.FileDescriptorProto],
) -> descriptor_pb2.FileDescriptorProto:
    """`file` without the imports it uses for custom options only (see descriptor_set)."""
    kept = [
        name
        for i, name in enumerate(file.dependency)
        if i in file.public_dependency or i in file.weak_dependency or not _declares_options_only(find(name))
    ]
    if len(kept) == len(file.dependency):
        return file
    index = {name: i for i, name in enumerate(kept)}
    public = [index[file.dependency[i]] for i in file.public_dependency]
    weak = [index[file.dependency[i]] for i in file.weak_dependency]
    trimmed = descriptor_pb2.FileDescriptorProto()
    trimmed.CopyFrom(file)
    del trimmed.dependency[:], trimmed.public_dependency[:], trimmed.weak_dependency[:]
    trimmed.dependency.extend(kept)
    trimmed.public_dependency.extend(public)
    trimmed.weak_dependency.extend(weak)
    return trimmed


def _declares_options_only(file: descriptor_pb2.FileDescriptorProto) -> bool:
    """Whether a file declares nothing but extensions of descriptor.proto's *Options messages:
    a file importing it can name none of its types, only use its options."""
    return (
        bool(file.extension)
        and not (file.message_type or file.enum_type or file.service)
        and all(re.fullmatch(r"\.google\.protobuf\.\w+Options", e.extendee) for e in file.extension)
    )


def self_contained(fds: descriptor_pb2.FileDescriptorSet) -> descriptor_pb2.FileDescriptorSet:
    """A set from elsewhere (a tool process's) with what it imports added and its files in
    dependency order (see descriptor_set); as it is when an import is nowhere to be found."""
    try:
        return descriptor_set(fds.file)
    except SchemaError:
        return fds


def files_of(classes: Iterable[type[Message]]) -> descriptor_pb2.FileDescriptorSet:
    """The files that define generated message classes, with every file they import
    (google/protobuf's too), dependencies first: a typed tool's descriptors, self-contained
    (imports used for custom options only left out, as descriptor_set does)."""
    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}

    def collect(file: AnyDescriptor) -> None:
        if file.name not in files:
            files[file.name] = _proto_of(file)
            for dependency in file.dependencies:
                collect(dependency)

    roots = [cls.DESCRIPTOR.file for cls in classes]
    for root in roots:
        collect(root)
    return _closure([files[root.name] for root in roots], files.__getitem__)


def _proto_of(file: AnyDescriptor) -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto()
    file.CopyToProto(proto)
    return proto


def _known_file(name: str) -> AnyDescriptor | None:
    """The descriptor of a file this runtime has (google/protobuf/*.proto, imported on demand,
    and protomcp/options.proto), or None."""
    if name == OPTIONS_FILE:
        return options_pb2.DESCRIPTOR
    if not name.startswith(WELL_KNOWN) or not name.endswith(".proto"):
        return None
    pool = descriptor_pool.Default()
    try:
        return pool.FindFileByName(name)
    except KeyError:
        pass
    module = "google.protobuf." + name[len(WELL_KNOWN) : -len(".proto")].replace("/", ".") + "_pb2"
    try:
        importlib.import_module(module)
        return pool.FindFileByName(name)
    except (ImportError, KeyError):
        return None


def message_class(fds: descriptor_pb2.FileDescriptorSet, full_name: str) -> type[Message]:
    """The message class `full_name` of a descriptor set (one pool per set: never clashes)."""
    return _pool(fds.SerializeToString(deterministic=True)).get(full_name)


@lru_cache(maxsize=256)
def _pool(serialized: bytes) -> _Classes:
    return _Classes(descriptor_pb2.FileDescriptorSet.FromString(serialized))


class _Classes:
    def __init__(self, fds: descriptor_pb2.FileDescriptorSet) -> None:
        self.pool = descriptor_pool.DescriptorPool()
        given = {file.name for file in fds.file}
        added: set[str] = set()

        def add_standard(name: str) -> None:  # the standard files a set from elsewhere leaves out
            if name in given or name in added:
                return
            added.add(name)
            standard = _known_file(name)
            if standard is None:
                return  # the pool names what is missing when the file that needs it is added
            for dependency in standard.dependencies:
                add_standard(dependency.name)
            self.pool.Add(_proto_of(standard))

        for file in fds.file:
            for dependency in file.dependency:
                add_standard(dependency)
            self.pool.Add(file)
        self.classes: dict[str, type[Message]] = {}

    def get(self, full_name: str) -> type[Message]:
        cls = self.classes.get(full_name)
        if cls is None:
            try:
                descriptor = self.pool.FindMessageTypeByName(full_name)
            except KeyError:
                raise SchemaError(f"no message {full_name!r} in the descriptor set") from None
            cls = self.classes[full_name] = GetMessageClass(descriptor)
        return cls


# -- .proto text ----------------------------------------------------------------------------

PROTO_TYPES = {F.TYPE_STRING: "string", F.TYPE_INT64: "int64", F.TYPE_DOUBLE: "double", F.TYPE_BOOL: "bool"}


def proto_source(file: descriptor_pb2.FileDescriptorProto) -> str:
    """A tool's messages as .proto text (protoc compiles it beside protomcp/options.proto)."""
    lines = ["// Generated by protomcp from the tool's JSON Schema.", 'syntax = "proto3";', ""]
    lines += [f"package {file.package};", ""]
    lines += [f'import "{dependency}";' for dependency in file.dependency]
    for message in file.message_type:
        lines.append("")
        _render_message(message, lines, "")
    return "\n".join(lines) + "\n"


def _render_message(message: descriptor_pb2.DescriptorProto, lines: list[str], indent: str) -> None:
    options = message.options.Extensions[MESSAGE_SCHEMA]
    description = orjson.loads(options).get("description") if options else None
    _comment(description, lines, indent)
    lines.append(f"{indent}message {message.name} {{")
    inner = indent + "  "
    if options:
        lines.append(f"{inner}option (protomcp.message_schema) = {_literal(options)};")
    entries = {n.name: n for n in message.nested_type if n.options.map_entry}
    for field in message.field:
        schema = field.options.Extensions[FIELD_SCHEMA]
        extras = orjson.loads(schema) if schema else {}
        _comment(extras.get("description") if isinstance(extras, dict) else None, lines, inner)
        entry = entries.get(field.type_name.rsplit(".", 1)[-1]) if field.type == F.TYPE_MESSAGE else None
        if entry is not None:
            kind = f"map<string, {PROTO_TYPES[entry.field[1].type]}>"
        else:
            kind = PROTO_TYPES.get(field.type) or field.type_name
            label = (
                "repeated "
                if field.label == F.LABEL_REPEATED
                else ("optional " if field.proto3_optional else "")
            )
            kind = label + kind
        options_text = (
            []
            if field.json_name == _default_json_name(field.name)
            else [f"json_name = {_literal(field.json_name)}"]
        )
        if schema:
            options_text.append(f"(protomcp.field_schema) = {_literal(schema)}")
        suffix = f" [{', '.join(options_text)}]" if options_text else ""
        lines.append(f"{inner}{kind} {field.name} = {field.number}{suffix};")
    for nested in message.nested_type:
        if not nested.options.map_entry:
            _render_message(nested, lines, inner)
    lines.append(f"{indent}}}")


def _comment(text: JSON, lines: list[str], indent: str) -> None:
    if isinstance(text, str) and text.strip():
        lines += [f"{indent}// {line}".rstrip() for line in text.strip().splitlines()]


def _literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _default_json_name(name: str) -> str:
    """protoc's json_name for a field name (lowerCamelCase)."""
    parts = name.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


# -- values --------------------------------------------------------------------------------


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


# -- back to JSON Schema ---------------------------------------------------------------------


def schema_from_message(descriptor: AnyDescriptor) -> JSONObject:
    """The JSON Schema a message stands for (the original one, for a message made here)."""
    defs: JSONObject = {}
    schema = _message_schema(descriptor, defs)
    defs.update(schema.pop(VALUE_DEFS, {}))
    for nested in descriptor.nested_types:
        key = _option(nested.GetOptions().Extensions[MESSAGE_SCHEMA]).get(DEF)
        if key is not None:
            defs[key] = _message_schema(nested, defs)
    if defs:
        schema["$defs"] = defs
    return schema


def _message_schema(descriptor: AnyDescriptor, defs: JSONObject) -> JSONObject:
    extras = _option(descriptor.GetOptions().Extensions[MESSAGE_SCHEMA])
    extras.pop(DEF, None)
    schema: JSONObject = {"type": "object", "properties": {}}
    for field in descriptor.fields:
        schema["properties"][field.json_name] = _field_schema(field, defs)
    if extras.pop(NO_PROPERTIES, False):
        del schema["properties"]
    schema.update(extras)
    return schema


def _field_schema(field: AnyDescriptor, defs: JSONObject) -> JSONObject:
    extras = _option(field.GetOptions().Extensions[FIELD_SCHEMA])
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
    key = _option(options.Extensions[MESSAGE_SCHEMA]).get(DEF)
    if key is not None:
        return {"$ref": f"#/$defs/{key}"}
    if not options.HasExtension(MESSAGE_SCHEMA):  # a message written by hand: by reference
        if message.full_name not in defs:
            defs[message.full_name] = {}  # taken before it is built: it may contain itself
            defs[message.full_name] = _message_schema(message, defs)
        return {"$ref": f"#/$defs/{message.full_name}"}
    return _message_schema(message, defs)


def _option(text: str) -> JSONObject:
    """The JSON object an option holds (empty when unset)."""
    return dict(orjson.loads(text)) if text else {}
