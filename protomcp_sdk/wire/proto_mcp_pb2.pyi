from google.protobuf import any_pb2 as _any_pb2
from google.protobuf import descriptor_pb2 as _descriptor_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MCPMessage(_message.Message):
    __slots__ = ("id", "initialize_request", "initialize_response", "list_tools_request", "list_tools_response", "call_tool_request", "call_tool_response", "list_resources_request", "list_resources_response", "read_resource_request", "read_resource_response", "error_response", "list_prompts_request", "list_prompts_response", "get_prompt_request", "get_prompt_response", "list_changed", "progress", "cancel_request", "log_message")
    ID_FIELD_NUMBER: _ClassVar[int]
    INITIALIZE_REQUEST_FIELD_NUMBER: _ClassVar[int]
    INITIALIZE_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    LIST_TOOLS_REQUEST_FIELD_NUMBER: _ClassVar[int]
    LIST_TOOLS_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    CALL_TOOL_REQUEST_FIELD_NUMBER: _ClassVar[int]
    CALL_TOOL_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    LIST_RESOURCES_REQUEST_FIELD_NUMBER: _ClassVar[int]
    LIST_RESOURCES_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    READ_RESOURCE_REQUEST_FIELD_NUMBER: _ClassVar[int]
    READ_RESOURCE_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    ERROR_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    LIST_PROMPTS_REQUEST_FIELD_NUMBER: _ClassVar[int]
    LIST_PROMPTS_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    GET_PROMPT_REQUEST_FIELD_NUMBER: _ClassVar[int]
    GET_PROMPT_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    LIST_CHANGED_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    CANCEL_REQUEST_FIELD_NUMBER: _ClassVar[int]
    LOG_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    id: int
    initialize_request: InitializeRequest
    initialize_response: InitializeResponse
    list_tools_request: ListToolsRequest
    list_tools_response: ListToolsResponse
    call_tool_request: CallToolRequest
    call_tool_response: CallToolResponse
    list_resources_request: ListResourcesRequest
    list_resources_response: ListResourcesResponse
    read_resource_request: ReadResourceRequest
    read_resource_response: ReadResourceResponse
    error_response: ErrorResponse
    list_prompts_request: ListPromptsRequest
    list_prompts_response: ListPromptsResponse
    get_prompt_request: GetPromptRequest
    get_prompt_response: GetPromptResponse
    list_changed: ListChangedNotification
    progress: ProgressNotification
    cancel_request: CancelRequest
    log_message: LogMessage
    def __init__(self, id: _Optional[int] = ..., initialize_request: _Optional[_Union[InitializeRequest, _Mapping]] = ..., initialize_response: _Optional[_Union[InitializeResponse, _Mapping]] = ..., list_tools_request: _Optional[_Union[ListToolsRequest, _Mapping]] = ..., list_tools_response: _Optional[_Union[ListToolsResponse, _Mapping]] = ..., call_tool_request: _Optional[_Union[CallToolRequest, _Mapping]] = ..., call_tool_response: _Optional[_Union[CallToolResponse, _Mapping]] = ..., list_resources_request: _Optional[_Union[ListResourcesRequest, _Mapping]] = ..., list_resources_response: _Optional[_Union[ListResourcesResponse, _Mapping]] = ..., read_resource_request: _Optional[_Union[ReadResourceRequest, _Mapping]] = ..., read_resource_response: _Optional[_Union[ReadResourceResponse, _Mapping]] = ..., error_response: _Optional[_Union[ErrorResponse, _Mapping]] = ..., list_prompts_request: _Optional[_Union[ListPromptsRequest, _Mapping]] = ..., list_prompts_response: _Optional[_Union[ListPromptsResponse, _Mapping]] = ..., get_prompt_request: _Optional[_Union[GetPromptRequest, _Mapping]] = ..., get_prompt_response: _Optional[_Union[GetPromptResponse, _Mapping]] = ..., list_changed: _Optional[_Union[ListChangedNotification, _Mapping]] = ..., progress: _Optional[_Union[ProgressNotification, _Mapping]] = ..., cancel_request: _Optional[_Union[CancelRequest, _Mapping]] = ..., log_message: _Optional[_Union[LogMessage, _Mapping]] = ...) -> None: ...

class InitializeRequest(_message.Message):
    __slots__ = ("protocol_version", "capabilities", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    protocol_version: str
    capabilities: ClientCapabilities
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, protocol_version: _Optional[str] = ..., capabilities: _Optional[_Union[ClientCapabilities, _Mapping]] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ClientCapabilities(_message.Message):
    __slots__ = ("supports_bsr_refs", "supports_streaming", "encodings", "experimental")
    class ExperimentalEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bool
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bool] = ...) -> None: ...
    SUPPORTS_BSR_REFS_FIELD_NUMBER: _ClassVar[int]
    SUPPORTS_STREAMING_FIELD_NUMBER: _ClassVar[int]
    ENCODINGS_FIELD_NUMBER: _ClassVar[int]
    EXPERIMENTAL_FIELD_NUMBER: _ClassVar[int]
    supports_bsr_refs: bool
    supports_streaming: bool
    encodings: _containers.RepeatedScalarFieldContainer[str]
    experimental: _containers.ScalarMap[str, bool]
    def __init__(self, supports_bsr_refs: _Optional[bool] = ..., supports_streaming: _Optional[bool] = ..., encodings: _Optional[_Iterable[str]] = ..., experimental: _Optional[_Mapping[str, bool]] = ...) -> None: ...

class InitializeResponse(_message.Message):
    __slots__ = ("protocol_version", "capabilities", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    protocol_version: str
    capabilities: ServerCapabilities
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, protocol_version: _Optional[str] = ..., capabilities: _Optional[_Union[ServerCapabilities, _Mapping]] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ServerCapabilities(_message.Message):
    __slots__ = ("supports_bsr_refs", "supports_streaming", "tools", "resources", "prompts")
    SUPPORTS_BSR_REFS_FIELD_NUMBER: _ClassVar[int]
    SUPPORTS_STREAMING_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    PROMPTS_FIELD_NUMBER: _ClassVar[int]
    supports_bsr_refs: bool
    supports_streaming: bool
    tools: ToolCapabilities
    resources: ResourceCapabilities
    prompts: PromptCapabilities
    def __init__(self, supports_bsr_refs: _Optional[bool] = ..., supports_streaming: _Optional[bool] = ..., tools: _Optional[_Union[ToolCapabilities, _Mapping]] = ..., resources: _Optional[_Union[ResourceCapabilities, _Mapping]] = ..., prompts: _Optional[_Union[PromptCapabilities, _Mapping]] = ...) -> None: ...

class ToolCapabilities(_message.Message):
    __slots__ = ("supports_list_changed",)
    SUPPORTS_LIST_CHANGED_FIELD_NUMBER: _ClassVar[int]
    supports_list_changed: bool
    def __init__(self, supports_list_changed: _Optional[bool] = ...) -> None: ...

class ResourceCapabilities(_message.Message):
    __slots__ = ("supports_subscribe", "supports_list_changed")
    SUPPORTS_SUBSCRIBE_FIELD_NUMBER: _ClassVar[int]
    SUPPORTS_LIST_CHANGED_FIELD_NUMBER: _ClassVar[int]
    supports_subscribe: bool
    supports_list_changed: bool
    def __init__(self, supports_subscribe: _Optional[bool] = ..., supports_list_changed: _Optional[bool] = ...) -> None: ...

class PromptCapabilities(_message.Message):
    __slots__ = ("supports_list_changed",)
    SUPPORTS_LIST_CHANGED_FIELD_NUMBER: _ClassVar[int]
    supports_list_changed: bool
    def __init__(self, supports_list_changed: _Optional[bool] = ...) -> None: ...

class ListToolsRequest(_message.Message):
    __slots__ = ("bsr_refs", "include_schemas", "cursor")
    BSR_REFS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_SCHEMAS_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    bsr_refs: _containers.RepeatedScalarFieldContainer[str]
    include_schemas: bool
    cursor: str
    def __init__(self, bsr_refs: _Optional[_Iterable[str]] = ..., include_schemas: _Optional[bool] = ..., cursor: _Optional[str] = ...) -> None: ...

class ListToolsResponse(_message.Message):
    __slots__ = ("tools", "next_cursor")
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[Tool]
    next_cursor: str
    def __init__(self, tools: _Optional[_Iterable[_Union[Tool, _Mapping]]] = ..., next_cursor: _Optional[str] = ...) -> None: ...

class Tool(_message.Message):
    __slots__ = ("name", "description", "bsr_ref", "inline_schema", "metadata", "input_message", "output_message")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    BSR_REF_FIELD_NUMBER: _ClassVar[int]
    INLINE_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    INPUT_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    bsr_ref: str
    inline_schema: _descriptor_pb2.FileDescriptorSet
    metadata: _containers.ScalarMap[str, str]
    input_message: str
    output_message: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., bsr_ref: _Optional[str] = ..., inline_schema: _Optional[_Union[_descriptor_pb2.FileDescriptorSet, _Mapping]] = ..., metadata: _Optional[_Mapping[str, str]] = ..., input_message: _Optional[str] = ..., output_message: _Optional[str] = ...) -> None: ...

class CallToolRequest(_message.Message):
    __slots__ = ("name", "arguments", "metadata", "report_progress")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    REPORT_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    name: str
    arguments: _any_pb2.Any
    metadata: _containers.ScalarMap[str, str]
    report_progress: bool
    def __init__(self, name: _Optional[str] = ..., arguments: _Optional[_Union[_any_pb2.Any, _Mapping]] = ..., metadata: _Optional[_Mapping[str, str]] = ..., report_progress: _Optional[bool] = ...) -> None: ...

class CallToolResponse(_message.Message):
    __slots__ = ("success", "error", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    success: ToolResult
    error: Error
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, success: _Optional[_Union[ToolResult, _Mapping]] = ..., error: _Optional[_Union[Error, _Mapping]] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ToolResult(_message.Message):
    __slots__ = ("content", "is_error")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    content: _containers.RepeatedCompositeFieldContainer[ToolContent]
    is_error: bool
    def __init__(self, content: _Optional[_Iterable[_Union[ToolContent, _Mapping]]] = ..., is_error: _Optional[bool] = ...) -> None: ...

class ToolContent(_message.Message):
    __slots__ = ("text", "image", "data", "mime_type")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    text: str
    image: bytes
    data: _any_pb2.Any
    mime_type: str
    def __init__(self, text: _Optional[str] = ..., image: _Optional[bytes] = ..., data: _Optional[_Union[_any_pb2.Any, _Mapping]] = ..., mime_type: _Optional[str] = ...) -> None: ...

class ListResourcesRequest(_message.Message):
    __slots__ = ("cursor",)
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    cursor: str
    def __init__(self, cursor: _Optional[str] = ...) -> None: ...

class ListResourcesResponse(_message.Message):
    __slots__ = ("resources", "next_cursor")
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[Resource]
    next_cursor: str
    def __init__(self, resources: _Optional[_Iterable[_Union[Resource, _Mapping]]] = ..., next_cursor: _Optional[str] = ...) -> None: ...

class Resource(_message.Message):
    __slots__ = ("uri", "name", "description", "mime_type", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    URI_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    uri: str
    name: str
    description: str
    mime_type: str
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, uri: _Optional[str] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., mime_type: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ReadResourceRequest(_message.Message):
    __slots__ = ("uri",)
    URI_FIELD_NUMBER: _ClassVar[int]
    uri: str
    def __init__(self, uri: _Optional[str] = ...) -> None: ...

class ReadResourceResponse(_message.Message):
    __slots__ = ("contents",)
    CONTENTS_FIELD_NUMBER: _ClassVar[int]
    contents: _containers.RepeatedCompositeFieldContainer[ResourceContent]
    def __init__(self, contents: _Optional[_Iterable[_Union[ResourceContent, _Mapping]]] = ...) -> None: ...

class ResourceContent(_message.Message):
    __slots__ = ("uri", "mime_type", "text", "blob")
    URI_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    BLOB_FIELD_NUMBER: _ClassVar[int]
    uri: str
    mime_type: str
    text: str
    blob: bytes
    def __init__(self, uri: _Optional[str] = ..., mime_type: _Optional[str] = ..., text: _Optional[str] = ..., blob: _Optional[bytes] = ...) -> None: ...

class ErrorResponse(_message.Message):
    __slots__ = ("code", "message", "data")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    data: _struct_pb2.Struct
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ..., data: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class Error(_message.Message):
    __slots__ = ("code", "message", "data")
    class DataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    data: _containers.ScalarMap[str, str]
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ..., data: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ListPromptsRequest(_message.Message):
    __slots__ = ("cursor",)
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    cursor: str
    def __init__(self, cursor: _Optional[str] = ...) -> None: ...

class ListPromptsResponse(_message.Message):
    __slots__ = ("prompts", "next_cursor")
    PROMPTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    prompts: _containers.RepeatedCompositeFieldContainer[Prompt]
    next_cursor: str
    def __init__(self, prompts: _Optional[_Iterable[_Union[Prompt, _Mapping]]] = ..., next_cursor: _Optional[str] = ...) -> None: ...

class Prompt(_message.Message):
    __slots__ = ("name", "description", "arguments", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    arguments: _containers.RepeatedCompositeFieldContainer[PromptArgument]
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., arguments: _Optional[_Iterable[_Union[PromptArgument, _Mapping]]] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class PromptArgument(_message.Message):
    __slots__ = ("name", "description", "required")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    required: bool
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., required: _Optional[bool] = ...) -> None: ...

class GetPromptRequest(_message.Message):
    __slots__ = ("name", "arguments")
    class ArgumentsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    arguments: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., arguments: _Optional[_Mapping[str, str]] = ...) -> None: ...

class GetPromptResponse(_message.Message):
    __slots__ = ("description", "messages")
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    description: str
    messages: _containers.RepeatedCompositeFieldContainer[PromptMessage]
    def __init__(self, description: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[PromptMessage, _Mapping]]] = ...) -> None: ...

class PromptMessage(_message.Message):
    __slots__ = ("role", "content")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    role: str
    content: ToolContent
    def __init__(self, role: _Optional[str] = ..., content: _Optional[_Union[ToolContent, _Mapping]] = ...) -> None: ...

class ListChangedNotification(_message.Message):
    __slots__ = ("list",)
    LIST_FIELD_NUMBER: _ClassVar[int]
    list: str
    def __init__(self, list: _Optional[str] = ...) -> None: ...

class ProgressNotification(_message.Message):
    __slots__ = ("progress", "total", "message")
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    progress: float
    total: float
    message: str
    def __init__(self, progress: _Optional[float] = ..., total: _Optional[float] = ..., message: _Optional[str] = ...) -> None: ...

class CancelRequest(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class LogMessage(_message.Message):
    __slots__ = ("level", "logger", "data_json")
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    LOGGER_FIELD_NUMBER: _ClassVar[int]
    DATA_JSON_FIELD_NUMBER: _ClassVar[int]
    level: str
    logger: str
    data_json: str
    def __init__(self, level: _Optional[str] = ..., logger: _Optional[str] = ..., data_json: _Optional[str] = ...) -> None: ...
