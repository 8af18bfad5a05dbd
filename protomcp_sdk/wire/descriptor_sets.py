"""Descriptor sets of tools' messages: self-contained as ``protoc --include_imports`` writes
them, and the message classes they define (one descriptor pool per set: never clashes)."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable
from functools import lru_cache

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from protomcp_sdk.wire import options_pb2
from protomcp_sdk.wire.schema_options import OPTIONS_FILE, WELL_KNOWN, AnyDescriptor, SchemaError


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
