"""Load a generated ``_pb2`` module's message classes straight through upb.

A generated module runs ``google.protobuf.internal.builder``, which imports the pure-Python
protobuf machinery (``python_message``, ``text_format``, ``decoder``/``encoder``, the Python
``descriptor_pool``...) that the upb backend never uses: about 1.2 MB of resident memory in
each process (host and tool process) for nothing. Here the serialized descriptor is taken from
the generated module's own code object (its compiled ``.pyc``), added to upb's default pool,
and each message class is made by upb's metaclass, as the builder does: the generated file
stays the one source of truth, and the module object is registered under its name, so every
importer gets the same classes.

One difference: the classes are not registered in the deprecated ``symbol_database`` (that
would import the Python machinery again); nothing here looks classes up there.

Anything unexpected (another backend, a file with dependencies, a module that does not look
generated) falls back to importing the generated module as usual.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from types import CodeType, ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from google._upb._message import Descriptor, FileDescriptor

_lock = threading.Lock()


def load(name: str) -> ModuleType:
    """The generated module `name` (``protomcp_sdk.wire.envelope_pb2``), loaded through upb
    when possible, else imported as usual."""
    with _lock:
        module = sys.modules.get(name)
        if module is None:
            module = _through_upb(name)
        if module is None:
            return importlib.import_module(name)
        return module


def _through_upb(name: str) -> ModuleType | None:
    try:
        from google._upb import _message
    except ImportError:  # another backend: its builder is the way
        return None
    from google.protobuf.internal import api_implementation

    if api_implementation.Type() != "upb":
        return None
    serialized = serialized_descriptor(name)
    if serialized is None:
        return None
    spec = importlib.util.find_spec(name)
    assert spec is not None
    try:
        file = _message.default_pool.AddSerializedFile(serialized)
        if file.dependencies or file.extensions_by_name or file.services_by_name:
            return None  # not needed by our files: the builder knows those
        module = importlib.util.module_from_spec(spec)
        # the classes' __module__ as protoc writes it: from the .proto's name, not the module's
        _build(module.__dict__, file, _message.MessageMeta, file.name.removesuffix(".proto") + "_pb2")
    except Exception:  # an API that moved: the generated module still works
        return None
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    setattr(sys.modules[parent], child, module)
    return module


def serialized_descriptor(name: str) -> bytes | None:
    """The FileDescriptorProto the generated module `name` hands to ``AddSerializedFile``: its
    code's one bytes constant, read without running it (None if it does not have that shape)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        return None
    code = getattr(spec.loader, "get_code", lambda _: None)(name)
    return _serialized_descriptor(code) if isinstance(code, CodeType) else None


def _serialized_descriptor(code: CodeType) -> bytes | None:
    if not {"AddSerializedFile", "BuildTopDescriptorsAndMessages"} <= set(code.co_names):
        return None
    found = [const for const in code.co_consts if isinstance(const, bytes)]
    return found[0] if len(found) == 1 else None


def _build(namespace: dict[str, object], file: FileDescriptor, meta: type, module_name: str) -> None:
    """What the generated module's globals hold: DESCRIPTOR, ``_NAME`` descriptors (nested
    ones ``_OUTER_INNER``), the message classes (nested ones as class attributes) and the
    top-level enums (wrapper, and each value by name)."""
    from google.protobuf import message
    from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

    namespace["DESCRIPTOR"] = file

    def descriptors(descriptor: Descriptor, key: str) -> None:
        namespace[key] = descriptor
        for nested in descriptor.nested_types:
            descriptors(nested, f"{key}_{nested.name.upper()}")
        for enum in descriptor.enum_types:
            namespace[f"{key}_{enum.name.upper()}"] = enum

    def message_class(descriptor: Descriptor, outer: str) -> type:
        body: dict[str, object] = {
            nested.name: message_class(nested, f"{outer}{descriptor.name}.")
            for nested in descriptor.nested_types
        }
        body.update(DESCRIPTOR=descriptor, __module__=module_name, __qualname__=outer + descriptor.name)
        made: type = meta(descriptor.name, (message.Message,), body)
        return made

    for descriptor in file.message_types_by_name.values():
        descriptors(descriptor, "_" + descriptor.name.upper())
    for enum in file.enum_types_by_name.values():
        namespace["_" + enum.name.upper()] = enum
        namespace[enum.name] = EnumTypeWrapper(enum)  # type: ignore[arg-type]  # upb's own descriptor class
        for value in enum.values:
            namespace[value.name] = value.number
    for descriptor in file.message_types_by_name.values():
        namespace[descriptor.name] = message_class(descriptor, "")
