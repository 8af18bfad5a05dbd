from google.protobuf import descriptor_pb2 as _descriptor_pb2
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor
FIELD_SCHEMA_FIELD_NUMBER: _ClassVar[int]
field_schema: _descriptor.FieldDescriptor
MESSAGE_SCHEMA_FIELD_NUMBER: _ClassVar[int]
message_schema: _descriptor.FieldDescriptor
