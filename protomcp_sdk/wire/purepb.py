"""protomcp.proto's messages in pure Python: the tool process's Envelope without upb.

protobuf's upb backend costs each process about 2.5 MB of resident memory (the extension
with libstdc++, its descriptor pool, and the ``well_known_types``, ``datetime`` and
``calendar`` modules any upb message class imports). A tool process only builds and reads a
few small messages per call; with ``PROTOMCP_ENVELOPE=python`` it takes its classes from here
instead (see ``protomcp_sdk.__main__``), for about 2 MB less memory and a few microseconds more CPU
per call (pure-Python parsing and writing). The host keeps upb. Both speak the same bytes.

The classes are made at import from the generated module's own serialized
``FileDescriptorProto`` (read from its code object by :func:`leanpb.serialized_descriptor`): the .proto stays
the one source of truth. They cover what protomcp.proto uses, which is all the SDK needs:
proto3 scalars (string, bytes, bool, int32, int64, uint32, double), singular and repeated
messages, repeated strings, and oneofs. A file using anything else is refused at build time
(``Unsupported``), and the caller keeps upb.

The subset of protobuf's Python API the SDK uses, with the same meaning: keyword
construction, field reads with proto3 defaults, sub-messages made on first read and present
once set (``SetInParent``, ``CopyFrom``, a field set inside them, or decoded), ``WhichOneof``,
``HasField``, ``ClearField``, repeated fields with ``add``/``append``/``extend``,
``SerializeToString``, ``ParseFromString``, ``FromString``, ``MergeFrom``, equality. Two
differences: a message given to a constructor or a repeated field is adopted, not copied;
and a value of the wrong type is refused when the message is serialized, not when it is set.
"""

from __future__ import annotations

import math
import struct
import sys
import weakref
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, ClassVar, TypeAlias

from protomcp_sdk.wire.leanpb import serialized_descriptor
from protomcp_sdk.wire.varint import varint as _varint

# FieldDescriptorProto.Type values this module handles (descriptor.proto's numbering)
DOUBLE, INT64, INT32, BOOL, STRING, MESSAGE, BYTES, UINT32 = 1, 3, 5, 8, 9, 11, 12, 13
LABEL_REPEATED = 3
FieldValue: TypeAlias = Any
"""A field's value: str, bytes, bool, int, float, a Message, or a Repeated of them. Set as
protobuf's Python API allows, by name at run time; each field's encoder takes its own kind."""

_DEFAULTS: dict[int, FieldValue] = {
    DOUBLE: 0.0,
    INT64: 0,
    INT32: 0,
    BOOL: False,
    STRING: "",
    BYTES: b"",
    UINT32: 0,
}
_WIRE_TYPE = {DOUBLE: 1, INT64: 0, INT32: 0, BOOL: 0, UINT32: 0, STRING: 2, BYTES: 2, MESSAGE: 2}
_DOUBLE = struct.Struct("<d")
_U64 = 1 << 64


class DecodeError(Exception):
    """Bytes that are not a valid message of the class asked for."""


class Unsupported(Exception):
    """The .proto file uses a feature this module does not implement."""


def _read_varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        try:
            byte = data[pos]
        except IndexError:
            raise DecodeError("truncated varint") from None
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise DecodeError("varint too long")


class Field:
    """One field of a message class: how it is named, numbered, typed and written."""

    __slots__ = ("decoding", "kind", "message", "name", "number", "oneof", "repeated", "tag")

    def __init__(self, name: str, number: int, kind: int, repeated: bool, oneof: str | None) -> None:
        self.name = name
        self.number = number
        self.kind = kind
        self.repeated = repeated
        self.message: type[Message] | None = None  # the class of a message field (set once all exist)
        self.oneof = oneof
        self.tag = _varint(number << 3 | _WIRE_TYPE[kind])
        # what decoding needs, in one tuple: name, kind, repeated, message class, oneof members
        self.decoding: tuple[str, int, bool, type[Message] | None, frozenset[str] | None] = (
            name,
            kind,
            repeated,
            None,
            None,
        )


class Repeated(list[FieldValue]):
    """A repeated field: a list; ``add(**fields)`` appends a new message of its class."""

    __slots__ = ("_element",)

    def __init__(self, element: type[Message] | None, items: Iterable[FieldValue] = ()) -> None:
        super().__init__(items)
        self._element = element

    def add(self, **fields: FieldValue) -> Message:
        if self._element is None:
            raise AttributeError("add() is for repeated message fields; use append()")
        item = self._element(**fields)
        self.append(item)
        return item


class Message:
    """Base of the generated classes. A field set lives in the instance's ``__dict__``; an unset
    scalar reads as its class attribute (the proto3 default); an unset message or repeated
    field is made on first read (:meth:`__getattr__`)."""

    __slots__ = ("__dict__", "__weakref__", "_pb_here", "_pb_parent")
    _pb_fields: ClassVar[dict[str, Field]] = {}
    _pb_numbers: ClassVar[dict[int, Field]] = {}
    _pb_oneofs: ClassVar[dict[str, frozenset[str]]] = {}
    _pb_name: ClassVar[str] = ""
    _pb_encoders: ClassVar[dict[str, Callable[[FieldValue], bytes]]] = {}

    def __init__(self, **fields: FieldValue) -> None:
        # the message this one was made for on a read, until it is present there (weakly: a
        # cycle would leave every call's messages to the cyclic GC)
        self._pb_parent: tuple[weakref.ref[Message], str] | None = None
        self._pb_here = False  # present in its parent even if empty (set, decoded, SetInParent)
        if fields:
            self._pb_init(fields)

    def _pb_init(self, fields: dict[str, FieldValue]) -> None:
        spec = self._pb_fields
        for name, value in fields.items():
            field = spec.get(name)
            if field is None:
                raise ValueError(f'Protocol message {self._pb_name} has no "{name}" field.')
            if value is None:
                continue
            if field.repeated:
                self.__dict__[name] = Repeated(field.message, value)
            elif field.message is not None:
                self._adopt(name, value)
            else:
                self.__dict__[name] = value

    def __getattr__(self, name: str) -> FieldValue:
        field = self._pb_fields.get(name)
        if field is None:
            raise AttributeError(f"{self._pb_name} has no field {name!r}")
        if field.repeated:
            value: FieldValue = Repeated(field.message)
        else:
            # (a scalar reads as its class's default: only message fields come here)
            value = field.message()  # type: ignore[misc]
            value._pb_parent = (weakref.ref(self), name)
        self.__dict__[name] = value
        return value

    def _adopt(self, name: str, child: Message) -> None:
        """`child` is the value of message field `name`, present from now on."""
        if getattr(child, "_pb_parent", None) is not None or child._pb_here:
            child = type(child).FromString(child.SerializeToString())  # it belongs elsewhere: a copy
        field = self._pb_fields[name]
        if field.oneof is not None:
            _keep_one(self.__dict__, self._pb_oneofs[field.oneof], name)
        self.__dict__[name] = child
        child._pb_here = True

    # -- presence ---------------------------------------------------------------------
    def SetInParent(self) -> None:
        if self._pb_here:
            return
        self._pb_here = True
        link = getattr(self, "_pb_parent", None)
        if link is not None:
            self._pb_parent = None
            parent = link[0]()
            if parent is None or parent.__dict__.get(link[1]) is not self:
                return
            name = link[1]
            oneof = parent._pb_fields[name].oneof
            if oneof is not None:
                _keep_one(parent.__dict__, parent._pb_oneofs[oneof], name)
            parent.SetInParent()

    def _present(self, name: str) -> Message | None:
        """The value of message field `name` if it is present, else None."""
        value = self.__dict__.get(name)
        if value is None or value._pb_here or value.SerializeToString():
            return value
        return None

    def WhichOneof(self, oneof: str) -> str | None:
        members = self._pb_oneofs.get(oneof)
        if members is None:
            raise ValueError(f'Protocol message has no oneof "{oneof}" field.')
        here = self.__dict__
        found = None
        for name in [name for name in here if name in members]:
            if here[name]._pb_here:
                return name
            if found is None and self._present(name) is not None:
                found = name
        return found

    def HasField(self, name: str) -> bool:
        if name in self._pb_oneofs:
            return self.WhichOneof(name) is not None
        field = self._pb_fields.get(name)
        if field is None or field.message is None or field.repeated:
            raise ValueError(f'Protocol message {self._pb_name} has no singular message field "{name}"')
        if field.oneof is not None:
            return self.WhichOneof(field.oneof) == name
        return self._present(name) is not None

    def ClearField(self, name: str) -> None:
        for member in self._pb_oneofs.get(name, (name,)):
            self.__dict__.pop(member, None)

    # -- whole messages ---------------------------------------------------------------
    def SerializeToString(self, **_: object) -> bytes:
        """The fields in the order they were set (any order is valid protobuf); a oneof's
        members other than its set one are empty sub-messages made by reading, not written."""
        encoders = self._pb_encoders
        return b"".join([encoders[name](value) for name, value in self.__dict__.items()])

    def ParseFromString(self, data: bytes | bytearray | memoryview) -> int:
        self.__dict__.clear()
        self.MergeFromString(data)
        return len(data)

    def MergeFromString(self, data: bytes | bytearray | memoryview) -> int:
        _decode_into(self, data if isinstance(data, bytes) else bytes(data), 0, len(data))
        return len(data)

    @classmethod
    def FromString(cls, data: bytes | bytearray | memoryview) -> Message:
        message = cls()
        message.MergeFromString(data)
        return message

    def CopyFrom(self, other: Message) -> None:
        if other is not self:
            self.ParseFromString(other.SerializeToString())
        self.SetInParent()

    def MergeFrom(self, other: Message) -> None:
        self.MergeFromString(other.SerializeToString())
        self.SetInParent()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._pb_set() == other._pb_set()

    def _pb_set(self) -> dict[str, FieldValue]:
        """The fields that would be written, by name."""
        encoders = self._pb_encoders
        return {name: value for name, value in self.__dict__.items() if encoders[name](value)}

    __hash__ = None  # type: ignore[assignment]  # mutable, as protobuf's messages

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self.__dict__.items())
        return f"{self._pb_name}({shown})"


_new = object.__new__


def _keep_one(fields: dict[str, FieldValue], members: frozenset[str], name: str) -> None:
    """Field `name` of a oneof is set: the oneof's other members go."""
    for other in [other for other in fields if other in members and other != name]:
        del fields[other]


def _length(size: int) -> bytes:
    return _SMALL[size] if size < 0x80 else _varint(size)


_SMALL = [bytes((n,)) for n in range(0x80)]


def _encoder(field: Field) -> Callable[[FieldValue], bytes]:
    """The function that writes one value of `field` (b"" for a proto3 default)."""
    tag, kind = field.tag, field.kind
    if field.repeated:
        one = _encoder(Field(field.name, field.number, kind, False, None))
        if kind == MESSAGE:

            def each(values: list[Message]) -> bytes:
                bodies = [value.SerializeToString() for value in values]
                return b"".join([tag + _length(len(body)) + body for body in bodies])

            return each
        return lambda values: b"".join([one(value) or tag + b"\x00" for value in values])
    if kind == STRING:

        def string(value: FieldValue) -> bytes:
            if not value:
                return b""
            data = value.encode() if type(value) is str else bytes(value)
            return tag + _length(len(data)) + data

        return string
    if kind == BYTES:
        return lambda value: tag + _length(len(value)) + bytes(value) if value else b""
    if kind == MESSAGE:

        def message(value: Message) -> bytes:
            body = value.SerializeToString()
            return tag + _length(len(body)) + body if body or value._pb_here else b""

        return message
    if kind == BOOL:
        return lambda value: tag + b"\x01" if value else b""
    if kind == DOUBLE:
        return lambda value: (
            tag + _DOUBLE.pack(value) if value or math.copysign(1.0, value) < 0 or value != value else b""
        )
    return lambda value: tag + _varint(value + _U64 if value < 0 else value) if value else b""


def _from_varint(raw: int, kind: int, name: str) -> bool | int:
    """A varint field's value: bool, or an integer of the field's width and sign."""
    if kind == BOOL:
        return raw != 0
    if kind == INT64:
        raw &= _U64 - 1
        return raw - _U64 if raw >> 63 else raw
    if kind == INT32:
        raw &= 0xFFFFFFFF
        return raw - (1 << 32) if raw >> 31 else raw
    if kind == UINT32:
        return raw & 0xFFFFFFFF
    raise DecodeError(f"field {name}: unexpected varint")


def _decode_into(message: Message, data: bytes, pos: int, end: int) -> None:
    fields = message._pb_numbers
    here = message.__dict__
    while pos < end:
        tag = data[pos]
        if tag < 0x80:
            pos += 1
        else:
            tag, pos = _read_varint(data, pos)
        wire = tag & 7
        field = fields.get(tag >> 3)
        if wire == 2:
            size = data[pos] if pos < end else 0x80
            if size < 0x80:
                pos += 1
            else:
                size, pos = _read_varint(data, pos)
            start = pos
            pos += size
            if pos > end:
                raise DecodeError("truncated length-delimited field")
            if field is None:
                continue
            name, kind, repeated, cls, oneof = field.decoding
            if kind == STRING:
                try:
                    value: FieldValue = data[start:pos].decode()
                except UnicodeDecodeError:
                    raise DecodeError(f"field {name} is not valid UTF-8") from None
            elif kind == MESSAGE:
                value = here.get(name) if not repeated else None  # a message seen twice is merged
                if value is None:
                    # no parent link: a decoded message is present already (a message field has its class)
                    value = _new(cls)  # type: ignore[arg-type]
                value._pb_here = True
                _decode_into(value, data, start, pos)
            elif kind == BYTES:
                value = data[start:pos]
            else:
                raise DecodeError(f"field {name}: unexpected length-delimited value")
        elif wire == 0:
            raw, pos = _read_varint(data, pos)
            if field is None:
                continue
            name, kind, repeated, cls, oneof = field.decoding
            value = _from_varint(raw, kind, name)
        elif wire == 1:
            start = pos
            pos += 8
            if pos > end:
                raise DecodeError("truncated 64-bit field")
            if field is None:
                continue
            name, kind, repeated, cls, oneof = field.decoding
            if kind != DOUBLE:
                raise DecodeError(f"field {name}: unexpected 64-bit value")
            value = _DOUBLE.unpack_from(data, start)[0]
        elif wire == 5:
            pos += 4
            if pos > end:
                raise DecodeError("truncated 32-bit field")
            if field is not None:
                raise DecodeError(f"field {field.name}: unexpected 32-bit value")
            continue
        else:
            raise DecodeError(f"unsupported wire type {wire}")
        if repeated:
            values = here.get(name)
            if values is None:
                values = here[name] = Repeated(cls)
            values.append(value)
            continue
        if oneof is not None and len(here) > 1:
            _keep_one(here, oneof, name)
        here[name] = value
    if pos != end:
        raise DecodeError("a field runs past the end of the message")


# -- building the classes from a FileDescriptorProto ---------------------------------------


def _read_fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """The (number, value) pairs of a serialized message: varints as ints, the rest as bytes."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        tag, pos = _read_varint(data, pos)
        wire = tag & 7
        if wire == 0:
            value, pos = _read_varint(data, pos)
            out.append((tag >> 3, value))
        elif wire == 2:
            size, pos = _read_varint(data, pos)
            out.append((tag >> 3, data[pos : pos + size]))
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise Unsupported(f"wire type {wire} in a descriptor")
    return out


def _bytes(value: int | bytes) -> bytes:
    """A length-delimited value of a descriptor (a string or a message)."""
    if isinstance(value, int):
        raise DecodeError("a varint where a descriptor has a string or a message")
    return value


def _number(value: int | bytes) -> int:
    """A varint value of a descriptor."""
    if not isinstance(value, int):
        raise DecodeError("a string or a message where a descriptor has a varint")
    return value


def build(serialized_file: bytes, module_name: str) -> dict[str, type[Message]]:
    """The message classes of a serialized FileDescriptorProto, by name."""
    file = _read_fields(serialized_file)
    package = next((_bytes(value).decode() for number, value in file if number == 2), "")
    if any(number == 3 for number, _ in file):
        raise Unsupported("imports of other .proto files")
    if any(number == 5 for number, _ in file):
        raise Unsupported("enums")
    pending: list[tuple[type[Message], list[tuple[Field, str]]]] = []
    classes: dict[str, type[Message]] = {}
    for number, value in file:
        if number != 4:  # message_type
            continue
        message = _read_fields(_bytes(value))
        name = next(_bytes(v).decode() for n, v in message if n == 1)
        if any(n in (3, 4) for n, _ in message):
            raise Unsupported(f"nested types in {name}")
        oneofs = [_bytes(_read_fields(_bytes(v))[0][1]).decode() for n, v in message if n == 8]
        fields: list[tuple[Field, str]] = []
        for n, v in message:
            if n != 2:
                continue
            spec = dict(_read_fields(_bytes(v)))
            field_name, kind = _bytes(spec[1]).decode(), _number(spec[5])
            if kind not in _WIRE_TYPE or spec.get(17):  # proto3 optional: explicit presence
                raise Unsupported(f"field {name}.{field_name} of type {kind}")
            repeated = spec.get(4) == LABEL_REPEATED
            if repeated and kind not in (STRING, BYTES, MESSAGE):
                raise Unsupported(f"packed repeated field {name}.{field_name}")
            oneof = oneofs[_number(spec[9])] if 9 in spec else None
            field = Field(field_name, _number(spec[3]), kind, repeated, oneof)
            fields.append((field, _bytes(spec.get(6, b"")).decode()))
        body: dict[str, object] = {
            "__slots__": (),
            "__module__": module_name,
            "__qualname__": name,
            "_pb_name": f"{package}.{name}" if package else name,
            "_pb_fields": {field.name: field for field, _ in fields},
            "_pb_numbers": {field.number: field for field, _ in fields},
            "_pb_oneofs": {o: frozenset(f.name for f, _ in fields if f.oneof == o) for o in oneofs},
        }
        body.update({f.name: _DEFAULTS[f.kind] for f, _ in fields if f.kind != MESSAGE and not f.repeated})
        cls = classes[name] = type(name, (Message,), body)
        pending.append((cls, fields))
    prefix = f".{package}." if package else "."
    for cls, fields in pending:
        for field, type_name in fields:
            if field.kind == MESSAGE:
                field.message = classes[type_name.removeprefix(prefix)]
        cls._pb_encoders = {field.name: _encoder(field) for field, _ in fields}
        for field, _ in fields:
            members = cls._pb_oneofs[field.oneof] if field.oneof is not None else None
            field.decoding = (field.name, field.kind, field.repeated, field.message, members)
    return classes


def install(module_name: str = "protomcp_sdk.wire.envelope_pb2") -> ModuleType | None:
    """Make `module_name` (not imported yet) a module of pure-Python classes, for every importer
    in this process. None, leaving the module to be imported as usual, when its file uses
    something this module does not implement or it was imported already."""
    if module_name in sys.modules:
        return None
    serialized = serialized_descriptor(module_name)
    if serialized is None:
        return None
    try:
        classes = build(serialized, module_name)
    except (Unsupported, DecodeError, KeyError, StopIteration, IndexError):
        return None
    module = ModuleType(module_name, "protomcp.proto's messages (pure Python: protomcp_sdk.wire.purepb)")
    module.__dict__.update(classes)
    module.DecodeError = DecodeError  # type: ignore[attr-defined]  # as the generated module has
    sys.modules[module_name] = module
    parent, _, child = module_name.rpartition(".")
    setattr(sys.modules[parent], child, module)
    return module
