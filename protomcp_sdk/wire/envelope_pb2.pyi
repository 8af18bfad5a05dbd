from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Envelope(_message.Message):
    __slots__ = ("reload", "list_tools", "call_tool", "reload_response", "tool_list", "call_result", "enable_tools", "disable_tools", "set_allowed", "set_blocked", "get_active_tools", "batch", "active_tools", "progress", "cancel", "log", "create_task", "task_status", "task_status_response", "task_result", "task_cancel", "register_middleware", "register_middleware_response", "middleware_intercept", "middleware_intercept_response", "stream_header", "stream_chunk", "raw_header", "list_resources_request", "resource_list_response", "list_resource_templates_request", "resource_template_list_response", "read_resource_request", "read_resource_response", "resource_changed", "list_prompts_request", "prompt_list_response", "get_prompt_request", "get_prompt_response", "completion_request", "completion_response", "sampling_request", "sampling_response", "list_roots_request", "list_roots_response", "hello", "heartbeat", "heartbeat_reply", "elicit_request", "elicit_response", "roots_changed", "user_state_request", "user_state_response", "request_id", "namespace", "call_id")
    RELOAD_FIELD_NUMBER: _ClassVar[int]
    LIST_TOOLS_FIELD_NUMBER: _ClassVar[int]
    CALL_TOOL_FIELD_NUMBER: _ClassVar[int]
    RELOAD_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    TOOL_LIST_FIELD_NUMBER: _ClassVar[int]
    CALL_RESULT_FIELD_NUMBER: _ClassVar[int]
    ENABLE_TOOLS_FIELD_NUMBER: _ClassVar[int]
    DISABLE_TOOLS_FIELD_NUMBER: _ClassVar[int]
    SET_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    SET_BLOCKED_FIELD_NUMBER: _ClassVar[int]
    GET_ACTIVE_TOOLS_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_TOOLS_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    LOG_FIELD_NUMBER: _ClassVar[int]
    CREATE_TASK_FIELD_NUMBER: _ClassVar[int]
    TASK_STATUS_FIELD_NUMBER: _ClassVar[int]
    TASK_STATUS_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    TASK_RESULT_FIELD_NUMBER: _ClassVar[int]
    TASK_CANCEL_FIELD_NUMBER: _ClassVar[int]
    REGISTER_MIDDLEWARE_FIELD_NUMBER: _ClassVar[int]
    REGISTER_MIDDLEWARE_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    MIDDLEWARE_INTERCEPT_FIELD_NUMBER: _ClassVar[int]
    MIDDLEWARE_INTERCEPT_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    STREAM_HEADER_FIELD_NUMBER: _ClassVar[int]
    STREAM_CHUNK_FIELD_NUMBER: _ClassVar[int]
    RAW_HEADER_FIELD_NUMBER: _ClassVar[int]
    LIST_RESOURCES_REQUEST_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_LIST_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    LIST_RESOURCE_TEMPLATES_REQUEST_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_TEMPLATE_LIST_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    READ_RESOURCE_REQUEST_FIELD_NUMBER: _ClassVar[int]
    READ_RESOURCE_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CHANGED_FIELD_NUMBER: _ClassVar[int]
    LIST_PROMPTS_REQUEST_FIELD_NUMBER: _ClassVar[int]
    PROMPT_LIST_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    GET_PROMPT_REQUEST_FIELD_NUMBER: _ClassVar[int]
    GET_PROMPT_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_REQUEST_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    SAMPLING_REQUEST_FIELD_NUMBER: _ClassVar[int]
    SAMPLING_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    LIST_ROOTS_REQUEST_FIELD_NUMBER: _ClassVar[int]
    LIST_ROOTS_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    HELLO_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_REPLY_FIELD_NUMBER: _ClassVar[int]
    ELICIT_REQUEST_FIELD_NUMBER: _ClassVar[int]
    ELICIT_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    ROOTS_CHANGED_FIELD_NUMBER: _ClassVar[int]
    USER_STATE_REQUEST_FIELD_NUMBER: _ClassVar[int]
    USER_STATE_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    reload: ReloadRequest
    list_tools: ListToolsRequest
    call_tool: CallToolRequest
    reload_response: ReloadResponse
    tool_list: ToolListResponse
    call_result: CallToolResponse
    enable_tools: EnableToolsRequest
    disable_tools: DisableToolsRequest
    set_allowed: SetAllowedRequest
    set_blocked: SetBlockedRequest
    get_active_tools: GetActiveToolsRequest
    batch: BatchUpdateRequest
    active_tools: ActiveToolsResponse
    progress: ProgressNotification
    cancel: CancelRequest
    log: LogMessage
    create_task: CreateTaskResponse
    task_status: TaskStatusRequest
    task_status_response: TaskStatusResponse
    task_result: TaskResultRequest
    task_cancel: TaskCancelRequest
    register_middleware: RegisterMiddlewareRequest
    register_middleware_response: RegisterMiddlewareResponse
    middleware_intercept: MiddlewareInterceptRequest
    middleware_intercept_response: MiddlewareInterceptResponse
    stream_header: StreamHeader
    stream_chunk: StreamChunk
    raw_header: RawHeader
    list_resources_request: ListResourcesRequest
    resource_list_response: ResourceListResponse
    list_resource_templates_request: ListResourceTemplatesRequest
    resource_template_list_response: ResourceTemplateListResponse
    read_resource_request: ReadResourceRequest
    read_resource_response: ReadResourceResponse
    resource_changed: ResourceChangedNotification
    list_prompts_request: ListPromptsRequest
    prompt_list_response: PromptListResponse
    get_prompt_request: GetPromptRequest
    get_prompt_response: GetPromptResponse
    completion_request: CompletionRequest
    completion_response: CompletionResponse
    sampling_request: SamplingRequest
    sampling_response: SamplingResponse
    list_roots_request: ListRootsRequest
    list_roots_response: ListRootsResponse
    hello: Hello
    heartbeat: Heartbeat
    heartbeat_reply: HeartbeatReply
    elicit_request: ElicitRequest
    elicit_response: ElicitResponse
    roots_changed: RootsChangedNotification
    user_state_request: UserStateRequest
    user_state_response: UserStateResponse
    request_id: str
    namespace: str
    call_id: str
    def __init__(self, reload: _Optional[_Union[ReloadRequest, _Mapping]] = ..., list_tools: _Optional[_Union[ListToolsRequest, _Mapping]] = ..., call_tool: _Optional[_Union[CallToolRequest, _Mapping]] = ..., reload_response: _Optional[_Union[ReloadResponse, _Mapping]] = ..., tool_list: _Optional[_Union[ToolListResponse, _Mapping]] = ..., call_result: _Optional[_Union[CallToolResponse, _Mapping]] = ..., enable_tools: _Optional[_Union[EnableToolsRequest, _Mapping]] = ..., disable_tools: _Optional[_Union[DisableToolsRequest, _Mapping]] = ..., set_allowed: _Optional[_Union[SetAllowedRequest, _Mapping]] = ..., set_blocked: _Optional[_Union[SetBlockedRequest, _Mapping]] = ..., get_active_tools: _Optional[_Union[GetActiveToolsRequest, _Mapping]] = ..., batch: _Optional[_Union[BatchUpdateRequest, _Mapping]] = ..., active_tools: _Optional[_Union[ActiveToolsResponse, _Mapping]] = ..., progress: _Optional[_Union[ProgressNotification, _Mapping]] = ..., cancel: _Optional[_Union[CancelRequest, _Mapping]] = ..., log: _Optional[_Union[LogMessage, _Mapping]] = ..., create_task: _Optional[_Union[CreateTaskResponse, _Mapping]] = ..., task_status: _Optional[_Union[TaskStatusRequest, _Mapping]] = ..., task_status_response: _Optional[_Union[TaskStatusResponse, _Mapping]] = ..., task_result: _Optional[_Union[TaskResultRequest, _Mapping]] = ..., task_cancel: _Optional[_Union[TaskCancelRequest, _Mapping]] = ..., register_middleware: _Optional[_Union[RegisterMiddlewareRequest, _Mapping]] = ..., register_middleware_response: _Optional[_Union[RegisterMiddlewareResponse, _Mapping]] = ..., middleware_intercept: _Optional[_Union[MiddlewareInterceptRequest, _Mapping]] = ..., middleware_intercept_response: _Optional[_Union[MiddlewareInterceptResponse, _Mapping]] = ..., stream_header: _Optional[_Union[StreamHeader, _Mapping]] = ..., stream_chunk: _Optional[_Union[StreamChunk, _Mapping]] = ..., raw_header: _Optional[_Union[RawHeader, _Mapping]] = ..., list_resources_request: _Optional[_Union[ListResourcesRequest, _Mapping]] = ..., resource_list_response: _Optional[_Union[ResourceListResponse, _Mapping]] = ..., list_resource_templates_request: _Optional[_Union[ListResourceTemplatesRequest, _Mapping]] = ..., resource_template_list_response: _Optional[_Union[ResourceTemplateListResponse, _Mapping]] = ..., read_resource_request: _Optional[_Union[ReadResourceRequest, _Mapping]] = ..., read_resource_response: _Optional[_Union[ReadResourceResponse, _Mapping]] = ..., resource_changed: _Optional[_Union[ResourceChangedNotification, _Mapping]] = ..., list_prompts_request: _Optional[_Union[ListPromptsRequest, _Mapping]] = ..., prompt_list_response: _Optional[_Union[PromptListResponse, _Mapping]] = ..., get_prompt_request: _Optional[_Union[GetPromptRequest, _Mapping]] = ..., get_prompt_response: _Optional[_Union[GetPromptResponse, _Mapping]] = ..., completion_request: _Optional[_Union[CompletionRequest, _Mapping]] = ..., completion_response: _Optional[_Union[CompletionResponse, _Mapping]] = ..., sampling_request: _Optional[_Union[SamplingRequest, _Mapping]] = ..., sampling_response: _Optional[_Union[SamplingResponse, _Mapping]] = ..., list_roots_request: _Optional[_Union[ListRootsRequest, _Mapping]] = ..., list_roots_response: _Optional[_Union[ListRootsResponse, _Mapping]] = ..., hello: _Optional[_Union[Hello, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ..., heartbeat_reply: _Optional[_Union[HeartbeatReply, _Mapping]] = ..., elicit_request: _Optional[_Union[ElicitRequest, _Mapping]] = ..., elicit_response: _Optional[_Union[ElicitResponse, _Mapping]] = ..., roots_changed: _Optional[_Union[RootsChangedNotification, _Mapping]] = ..., user_state_request: _Optional[_Union[UserStateRequest, _Mapping]] = ..., user_state_response: _Optional[_Union[UserStateResponse, _Mapping]] = ..., request_id: _Optional[str] = ..., namespace: _Optional[str] = ..., call_id: _Optional[str] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ("protocol_version", "sdk_name", "sdk_version", "tool_file", "pid", "python_version", "error", "completions", "declared_files", "warnings")
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    SDK_NAME_FIELD_NUMBER: _ClassVar[int]
    SDK_VERSION_FIELD_NUMBER: _ClassVar[int]
    TOOL_FILE_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    PYTHON_VERSION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    COMPLETIONS_FIELD_NUMBER: _ClassVar[int]
    DECLARED_FILES_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    protocol_version: int
    sdk_name: str
    sdk_version: str
    tool_file: str
    pid: int
    python_version: str
    error: str
    completions: bool
    declared_files: _containers.RepeatedScalarFieldContainer[str]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, protocol_version: _Optional[int] = ..., sdk_name: _Optional[str] = ..., sdk_version: _Optional[str] = ..., tool_file: _Optional[str] = ..., pid: _Optional[int] = ..., python_version: _Optional[str] = ..., error: _Optional[str] = ..., completions: _Optional[bool] = ..., declared_files: _Optional[_Iterable[str]] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class HeartbeatReply(_message.Message):
    __slots__ = ("threads_busy", "threads_limit", "stuck_tools", "starving", "blocked_tool", "blocked_seconds")
    THREADS_BUSY_FIELD_NUMBER: _ClassVar[int]
    THREADS_LIMIT_FIELD_NUMBER: _ClassVar[int]
    STUCK_TOOLS_FIELD_NUMBER: _ClassVar[int]
    STARVING_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_TOOL_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_SECONDS_FIELD_NUMBER: _ClassVar[int]
    threads_busy: int
    threads_limit: int
    stuck_tools: _containers.RepeatedScalarFieldContainer[str]
    starving: bool
    blocked_tool: str
    blocked_seconds: float
    def __init__(self, threads_busy: _Optional[int] = ..., threads_limit: _Optional[int] = ..., stuck_tools: _Optional[_Iterable[str]] = ..., starving: _Optional[bool] = ..., blocked_tool: _Optional[str] = ..., blocked_seconds: _Optional[float] = ...) -> None: ...

class ReloadRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListToolsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CallToolRequest(_message.Message):
    __slots__ = ("name", "arguments_json", "progress_token", "task_id", "auth_json", "client_capabilities_json", "input_answers_json", "trace_parent", "trace_state", "arguments_proto", "middleware", "middleware_owner", "result_proto")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    AUTH_JSON_FIELD_NUMBER: _ClassVar[int]
    CLIENT_CAPABILITIES_JSON_FIELD_NUMBER: _ClassVar[int]
    INPUT_ANSWERS_JSON_FIELD_NUMBER: _ClassVar[int]
    TRACE_PARENT_FIELD_NUMBER: _ClassVar[int]
    TRACE_STATE_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_PROTO_FIELD_NUMBER: _ClassVar[int]
    MIDDLEWARE_FIELD_NUMBER: _ClassVar[int]
    MIDDLEWARE_OWNER_FIELD_NUMBER: _ClassVar[int]
    RESULT_PROTO_FIELD_NUMBER: _ClassVar[int]
    name: str
    arguments_json: str
    progress_token: str
    task_id: str
    auth_json: str
    client_capabilities_json: str
    input_answers_json: str
    trace_parent: str
    trace_state: str
    arguments_proto: bytes
    middleware: _containers.RepeatedScalarFieldContainer[str]
    middleware_owner: str
    result_proto: bool
    def __init__(self, name: _Optional[str] = ..., arguments_json: _Optional[str] = ..., progress_token: _Optional[str] = ..., task_id: _Optional[str] = ..., auth_json: _Optional[str] = ..., client_capabilities_json: _Optional[str] = ..., input_answers_json: _Optional[str] = ..., trace_parent: _Optional[str] = ..., trace_state: _Optional[str] = ..., arguments_proto: _Optional[bytes] = ..., middleware: _Optional[_Iterable[str]] = ..., middleware_owner: _Optional[str] = ..., result_proto: _Optional[bool] = ...) -> None: ...

class ReloadResponse(_message.Message):
    __slots__ = ("success", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: bool
    error: str
    def __init__(self, success: _Optional[bool] = ..., error: _Optional[str] = ...) -> None: ...

class ToolListResponse(_message.Message):
    __slots__ = ("tools",)
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[ToolDefinition]
    def __init__(self, tools: _Optional[_Iterable[_Union[ToolDefinition, _Mapping]]] = ...) -> None: ...

class ToolDefinition(_message.Message):
    __slots__ = ("name", "description", "input_schema_json", "output_schema_json", "title", "read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint", "task_support", "annotations_json", "hidden", "tags", "timeout", "task_support_mode", "input_before_task", "pinned", "message_descriptors", "input_message", "output_message", "meta_json", "icons_json", "scopes", "rate_limit")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_HINT_FIELD_NUMBER: _ClassVar[int]
    DESTRUCTIVE_HINT_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENT_HINT_FIELD_NUMBER: _ClassVar[int]
    OPEN_WORLD_HINT_FIELD_NUMBER: _ClassVar[int]
    TASK_SUPPORT_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_JSON_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    TASK_SUPPORT_MODE_FIELD_NUMBER: _ClassVar[int]
    INPUT_BEFORE_TASK_FIELD_NUMBER: _ClassVar[int]
    PINNED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_DESCRIPTORS_FIELD_NUMBER: _ClassVar[int]
    INPUT_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    META_JSON_FIELD_NUMBER: _ClassVar[int]
    ICONS_JSON_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    RATE_LIMIT_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    input_schema_json: str
    output_schema_json: str
    title: str
    read_only_hint: bool
    destructive_hint: bool
    idempotent_hint: bool
    open_world_hint: bool
    task_support: bool
    annotations_json: str
    hidden: bool
    tags: _containers.RepeatedScalarFieldContainer[str]
    timeout: float
    task_support_mode: str
    input_before_task: bool
    pinned: bool
    message_descriptors: bytes
    input_message: str
    output_message: str
    meta_json: str
    icons_json: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    rate_limit: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., input_schema_json: _Optional[str] = ..., output_schema_json: _Optional[str] = ..., title: _Optional[str] = ..., read_only_hint: _Optional[bool] = ..., destructive_hint: _Optional[bool] = ..., idempotent_hint: _Optional[bool] = ..., open_world_hint: _Optional[bool] = ..., task_support: _Optional[bool] = ..., annotations_json: _Optional[str] = ..., hidden: _Optional[bool] = ..., tags: _Optional[_Iterable[str]] = ..., timeout: _Optional[float] = ..., task_support_mode: _Optional[str] = ..., input_before_task: _Optional[bool] = ..., pinned: _Optional[bool] = ..., message_descriptors: _Optional[bytes] = ..., input_message: _Optional[str] = ..., output_message: _Optional[str] = ..., meta_json: _Optional[str] = ..., icons_json: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ..., rate_limit: _Optional[str] = ...) -> None: ...

class CallToolResponse(_message.Message):
    __slots__ = ("is_error", "result_json", "enable_tools", "disable_tools", "error", "structured_content_json", "meta_json", "structured_content_proto")
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    ENABLE_TOOLS_FIELD_NUMBER: _ClassVar[int]
    DISABLE_TOOLS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_CONTENT_JSON_FIELD_NUMBER: _ClassVar[int]
    META_JSON_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_CONTENT_PROTO_FIELD_NUMBER: _ClassVar[int]
    is_error: bool
    result_json: str
    enable_tools: _containers.RepeatedScalarFieldContainer[str]
    disable_tools: _containers.RepeatedScalarFieldContainer[str]
    error: ToolError
    structured_content_json: str
    meta_json: str
    structured_content_proto: bytes
    def __init__(self, is_error: _Optional[bool] = ..., result_json: _Optional[str] = ..., enable_tools: _Optional[_Iterable[str]] = ..., disable_tools: _Optional[_Iterable[str]] = ..., error: _Optional[_Union[ToolError, _Mapping]] = ..., structured_content_json: _Optional[str] = ..., meta_json: _Optional[str] = ..., structured_content_proto: _Optional[bytes] = ...) -> None: ...

class ToolError(_message.Message):
    __slots__ = ("error_code", "message", "suggestion", "retryable")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SUGGESTION_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    error_code: str
    message: str
    suggestion: str
    retryable: bool
    def __init__(self, error_code: _Optional[str] = ..., message: _Optional[str] = ..., suggestion: _Optional[str] = ..., retryable: _Optional[bool] = ...) -> None: ...

class EnableToolsRequest(_message.Message):
    __slots__ = ("tool_names",)
    TOOL_NAMES_FIELD_NUMBER: _ClassVar[int]
    tool_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, tool_names: _Optional[_Iterable[str]] = ...) -> None: ...

class DisableToolsRequest(_message.Message):
    __slots__ = ("tool_names",)
    TOOL_NAMES_FIELD_NUMBER: _ClassVar[int]
    tool_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, tool_names: _Optional[_Iterable[str]] = ...) -> None: ...

class SetAllowedRequest(_message.Message):
    __slots__ = ("tool_names",)
    TOOL_NAMES_FIELD_NUMBER: _ClassVar[int]
    tool_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, tool_names: _Optional[_Iterable[str]] = ...) -> None: ...

class SetBlockedRequest(_message.Message):
    __slots__ = ("tool_names",)
    TOOL_NAMES_FIELD_NUMBER: _ClassVar[int]
    tool_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, tool_names: _Optional[_Iterable[str]] = ...) -> None: ...

class GetActiveToolsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BatchUpdateRequest(_message.Message):
    __slots__ = ("enable", "disable", "allow", "block")
    ENABLE_FIELD_NUMBER: _ClassVar[int]
    DISABLE_FIELD_NUMBER: _ClassVar[int]
    ALLOW_FIELD_NUMBER: _ClassVar[int]
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    enable: _containers.RepeatedScalarFieldContainer[str]
    disable: _containers.RepeatedScalarFieldContainer[str]
    allow: _containers.RepeatedScalarFieldContainer[str]
    block: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, enable: _Optional[_Iterable[str]] = ..., disable: _Optional[_Iterable[str]] = ..., allow: _Optional[_Iterable[str]] = ..., block: _Optional[_Iterable[str]] = ...) -> None: ...

class ActiveToolsResponse(_message.Message):
    __slots__ = ("tool_names", "error")
    TOOL_NAMES_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    tool_names: _containers.RepeatedScalarFieldContainer[str]
    error: str
    def __init__(self, tool_names: _Optional[_Iterable[str]] = ..., error: _Optional[str] = ...) -> None: ...

class ProgressNotification(_message.Message):
    __slots__ = ("progress_token", "progress", "total", "message", "progress_value", "total_value")
    PROGRESS_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_VALUE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_VALUE_FIELD_NUMBER: _ClassVar[int]
    progress_token: str
    progress: int
    total: int
    message: str
    progress_value: float
    total_value: float
    def __init__(self, progress_token: _Optional[str] = ..., progress: _Optional[int] = ..., total: _Optional[int] = ..., message: _Optional[str] = ..., progress_value: _Optional[float] = ..., total_value: _Optional[float] = ...) -> None: ...

class CancelRequest(_message.Message):
    __slots__ = ("request_id",)
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    def __init__(self, request_id: _Optional[str] = ...) -> None: ...

class LogMessage(_message.Message):
    __slots__ = ("level", "logger", "data_json", "output")
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    LOGGER_FIELD_NUMBER: _ClassVar[int]
    DATA_JSON_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    level: str
    logger: str
    data_json: str
    output: bool
    def __init__(self, level: _Optional[str] = ..., logger: _Optional[str] = ..., data_json: _Optional[str] = ..., output: _Optional[bool] = ...) -> None: ...

class CreateTaskResponse(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class TaskStatusRequest(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class TaskStatusResponse(_message.Message):
    __slots__ = ("task_id", "state", "progress", "total", "message")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    state: str
    progress: int
    total: int
    message: str
    def __init__(self, task_id: _Optional[str] = ..., state: _Optional[str] = ..., progress: _Optional[int] = ..., total: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class TaskResultRequest(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class TaskCancelRequest(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class RegisterMiddlewareRequest(_message.Message):
    __slots__ = ("name", "priority", "methods", "before_only", "composes")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    METHODS_FIELD_NUMBER: _ClassVar[int]
    BEFORE_ONLY_FIELD_NUMBER: _ClassVar[int]
    COMPOSES_FIELD_NUMBER: _ClassVar[int]
    name: str
    priority: int
    methods: _containers.RepeatedScalarFieldContainer[str]
    before_only: bool
    composes: bool
    def __init__(self, name: _Optional[str] = ..., priority: _Optional[int] = ..., methods: _Optional[_Iterable[str]] = ..., before_only: _Optional[bool] = ..., composes: _Optional[bool] = ...) -> None: ...

class RegisterMiddlewareResponse(_message.Message):
    __slots__ = ("success", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: bool
    error: str
    def __init__(self, success: _Optional[bool] = ..., error: _Optional[str] = ...) -> None: ...

class MiddlewareInterceptRequest(_message.Message):
    __slots__ = ("middleware_name", "phase", "method", "params_json", "chain", "owner")
    MIDDLEWARE_NAME_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    PARAMS_JSON_FIELD_NUMBER: _ClassVar[int]
    CHAIN_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    middleware_name: str
    phase: str
    method: str
    params_json: str
    chain: _containers.RepeatedScalarFieldContainer[str]
    owner: str
    def __init__(self, middleware_name: _Optional[str] = ..., phase: _Optional[str] = ..., method: _Optional[str] = ..., params_json: _Optional[str] = ..., chain: _Optional[_Iterable[str]] = ..., owner: _Optional[str] = ...) -> None: ...

class MiddlewareInterceptResponse(_message.Message):
    __slots__ = ("params_json", "reject", "reject_reason", "result_json", "failed")
    PARAMS_JSON_FIELD_NUMBER: _ClassVar[int]
    REJECT_FIELD_NUMBER: _ClassVar[int]
    REJECT_REASON_FIELD_NUMBER: _ClassVar[int]
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    params_json: str
    reject: bool
    reject_reason: str
    result_json: str
    failed: bool
    def __init__(self, params_json: _Optional[str] = ..., reject: _Optional[bool] = ..., reject_reason: _Optional[str] = ..., result_json: _Optional[str] = ..., failed: _Optional[bool] = ...) -> None: ...

class StreamHeader(_message.Message):
    __slots__ = ("stream_id", "content_type", "total_size")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    content_type: str
    total_size: int
    def __init__(self, stream_id: _Optional[str] = ..., content_type: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...

class StreamChunk(_message.Message):
    __slots__ = ("stream_id", "data", "final")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    data: bytes
    final: bool
    def __init__(self, stream_id: _Optional[str] = ..., data: _Optional[bytes] = ..., final: _Optional[bool] = ...) -> None: ...

class RawHeader(_message.Message):
    __slots__ = ("transfer_id", "size", "content_type", "path", "encoding")
    TRANSFER_ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    ENCODING_FIELD_NUMBER: _ClassVar[int]
    transfer_id: str
    size: int
    content_type: str
    path: str
    encoding: str
    def __init__(self, transfer_id: _Optional[str] = ..., size: _Optional[int] = ..., content_type: _Optional[str] = ..., path: _Optional[str] = ..., encoding: _Optional[str] = ...) -> None: ...

class ListResourcesRequest(_message.Message):
    __slots__ = ("cursor",)
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    cursor: str
    def __init__(self, cursor: _Optional[str] = ...) -> None: ...

class ResourceDefinition(_message.Message):
    __slots__ = ("uri", "name", "title", "description", "mime_type", "size", "annotations_json", "meta_json", "icons_json", "scopes")
    URI_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_JSON_FIELD_NUMBER: _ClassVar[int]
    META_JSON_FIELD_NUMBER: _ClassVar[int]
    ICONS_JSON_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    uri: str
    name: str
    title: str
    description: str
    mime_type: str
    size: int
    annotations_json: str
    meta_json: str
    icons_json: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, uri: _Optional[str] = ..., name: _Optional[str] = ..., title: _Optional[str] = ..., description: _Optional[str] = ..., mime_type: _Optional[str] = ..., size: _Optional[int] = ..., annotations_json: _Optional[str] = ..., meta_json: _Optional[str] = ..., icons_json: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ...) -> None: ...

class ResourceListResponse(_message.Message):
    __slots__ = ("resources", "next_cursor")
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[ResourceDefinition]
    next_cursor: str
    def __init__(self, resources: _Optional[_Iterable[_Union[ResourceDefinition, _Mapping]]] = ..., next_cursor: _Optional[str] = ...) -> None: ...

class ListResourceTemplatesRequest(_message.Message):
    __slots__ = ("cursor",)
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    cursor: str
    def __init__(self, cursor: _Optional[str] = ...) -> None: ...

class ResourceTemplateDefinition(_message.Message):
    __slots__ = ("uri_template", "name", "title", "description", "mime_type", "annotations_json", "meta_json", "icons_json", "scopes")
    URI_TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_JSON_FIELD_NUMBER: _ClassVar[int]
    META_JSON_FIELD_NUMBER: _ClassVar[int]
    ICONS_JSON_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    uri_template: str
    name: str
    title: str
    description: str
    mime_type: str
    annotations_json: str
    meta_json: str
    icons_json: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, uri_template: _Optional[str] = ..., name: _Optional[str] = ..., title: _Optional[str] = ..., description: _Optional[str] = ..., mime_type: _Optional[str] = ..., annotations_json: _Optional[str] = ..., meta_json: _Optional[str] = ..., icons_json: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ...) -> None: ...

class ResourceTemplateListResponse(_message.Message):
    __slots__ = ("templates", "next_cursor")
    TEMPLATES_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    templates: _containers.RepeatedCompositeFieldContainer[ResourceTemplateDefinition]
    next_cursor: str
    def __init__(self, templates: _Optional[_Iterable[_Union[ResourceTemplateDefinition, _Mapping]]] = ..., next_cursor: _Optional[str] = ...) -> None: ...

class ReadResourceRequest(_message.Message):
    __slots__ = ("uri", "client_capabilities_json", "input_answers_json", "auth_json")
    URI_FIELD_NUMBER: _ClassVar[int]
    CLIENT_CAPABILITIES_JSON_FIELD_NUMBER: _ClassVar[int]
    INPUT_ANSWERS_JSON_FIELD_NUMBER: _ClassVar[int]
    AUTH_JSON_FIELD_NUMBER: _ClassVar[int]
    uri: str
    client_capabilities_json: str
    input_answers_json: str
    auth_json: str
    def __init__(self, uri: _Optional[str] = ..., client_capabilities_json: _Optional[str] = ..., input_answers_json: _Optional[str] = ..., auth_json: _Optional[str] = ...) -> None: ...

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

class ReadResourceResponse(_message.Message):
    __slots__ = ("contents", "is_error", "error", "contents_json", "error_code")
    CONTENTS_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONTENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    contents: _containers.RepeatedCompositeFieldContainer[ResourceContent]
    is_error: bool
    error: str
    contents_json: str
    error_code: int
    def __init__(self, contents: _Optional[_Iterable[_Union[ResourceContent, _Mapping]]] = ..., is_error: _Optional[bool] = ..., error: _Optional[str] = ..., contents_json: _Optional[str] = ..., error_code: _Optional[int] = ...) -> None: ...

class ResourceChangedNotification(_message.Message):
    __slots__ = ("uri",)
    URI_FIELD_NUMBER: _ClassVar[int]
    uri: str
    def __init__(self, uri: _Optional[str] = ...) -> None: ...

class ListPromptsRequest(_message.Message):
    __slots__ = ("cursor",)
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    cursor: str
    def __init__(self, cursor: _Optional[str] = ...) -> None: ...

class PromptArgument(_message.Message):
    __slots__ = ("name", "description", "required")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    required: bool
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., required: _Optional[bool] = ...) -> None: ...

class PromptDefinition(_message.Message):
    __slots__ = ("name", "title", "description", "arguments", "meta_json", "icons_json", "scopes")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    META_JSON_FIELD_NUMBER: _ClassVar[int]
    ICONS_JSON_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    name: str
    title: str
    description: str
    arguments: _containers.RepeatedCompositeFieldContainer[PromptArgument]
    meta_json: str
    icons_json: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., title: _Optional[str] = ..., description: _Optional[str] = ..., arguments: _Optional[_Iterable[_Union[PromptArgument, _Mapping]]] = ..., meta_json: _Optional[str] = ..., icons_json: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ...) -> None: ...

class PromptListResponse(_message.Message):
    __slots__ = ("prompts", "next_cursor")
    PROMPTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    prompts: _containers.RepeatedCompositeFieldContainer[PromptDefinition]
    next_cursor: str
    def __init__(self, prompts: _Optional[_Iterable[_Union[PromptDefinition, _Mapping]]] = ..., next_cursor: _Optional[str] = ...) -> None: ...

class GetPromptRequest(_message.Message):
    __slots__ = ("name", "arguments_json", "client_capabilities_json", "input_answers_json", "auth_json")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    CLIENT_CAPABILITIES_JSON_FIELD_NUMBER: _ClassVar[int]
    INPUT_ANSWERS_JSON_FIELD_NUMBER: _ClassVar[int]
    AUTH_JSON_FIELD_NUMBER: _ClassVar[int]
    name: str
    arguments_json: str
    client_capabilities_json: str
    input_answers_json: str
    auth_json: str
    def __init__(self, name: _Optional[str] = ..., arguments_json: _Optional[str] = ..., client_capabilities_json: _Optional[str] = ..., input_answers_json: _Optional[str] = ..., auth_json: _Optional[str] = ...) -> None: ...

class GetPromptResponse(_message.Message):
    __slots__ = ("description", "messages_json", "is_error", "error", "error_code")
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_JSON_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    description: str
    messages_json: str
    is_error: bool
    error: str
    error_code: int
    def __init__(self, description: _Optional[str] = ..., messages_json: _Optional[str] = ..., is_error: _Optional[bool] = ..., error: _Optional[str] = ..., error_code: _Optional[int] = ...) -> None: ...

class CompletionRequest(_message.Message):
    __slots__ = ("ref_type", "ref_name", "argument_name", "argument_value", "context_arguments_json")
    REF_TYPE_FIELD_NUMBER: _ClassVar[int]
    REF_NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENT_VALUE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    ref_type: str
    ref_name: str
    argument_name: str
    argument_value: str
    context_arguments_json: str
    def __init__(self, ref_type: _Optional[str] = ..., ref_name: _Optional[str] = ..., argument_name: _Optional[str] = ..., argument_value: _Optional[str] = ..., context_arguments_json: _Optional[str] = ...) -> None: ...

class CompletionResponse(_message.Message):
    __slots__ = ("values", "total", "has_more")
    VALUES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[str]
    total: int
    has_more: bool
    def __init__(self, values: _Optional[_Iterable[str]] = ..., total: _Optional[int] = ..., has_more: _Optional[bool] = ...) -> None: ...

class SamplingRequest(_message.Message):
    __slots__ = ("params_json", "timeout", "key")
    PARAMS_JSON_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    params_json: str
    timeout: float
    key: str
    def __init__(self, params_json: _Optional[str] = ..., timeout: _Optional[float] = ..., key: _Optional[str] = ...) -> None: ...

class SamplingResponse(_message.Message):
    __slots__ = ("result_json", "is_error", "error")
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    result_json: str
    is_error: bool
    error: str
    def __init__(self, result_json: _Optional[str] = ..., is_error: _Optional[bool] = ..., error: _Optional[str] = ...) -> None: ...

class ListRootsRequest(_message.Message):
    __slots__ = ("timeout", "key")
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    timeout: float
    key: str
    def __init__(self, timeout: _Optional[float] = ..., key: _Optional[str] = ...) -> None: ...

class ListRootsResponse(_message.Message):
    __slots__ = ("roots_json", "is_error", "error")
    ROOTS_JSON_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    roots_json: str
    is_error: bool
    error: str
    def __init__(self, roots_json: _Optional[str] = ..., is_error: _Optional[bool] = ..., error: _Optional[str] = ...) -> None: ...

class ElicitRequest(_message.Message):
    __slots__ = ("params_json", "timeout", "key")
    PARAMS_JSON_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    params_json: str
    timeout: float
    key: str
    def __init__(self, params_json: _Optional[str] = ..., timeout: _Optional[float] = ..., key: _Optional[str] = ...) -> None: ...

class ElicitResponse(_message.Message):
    __slots__ = ("result_json", "is_error", "error")
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    result_json: str
    is_error: bool
    error: str
    def __init__(self, result_json: _Optional[str] = ..., is_error: _Optional[bool] = ..., error: _Optional[str] = ...) -> None: ...

class RootsChangedNotification(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UserStateRequest(_message.Message):
    __slots__ = ("op", "key", "value_json", "ttl")
    OP_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_JSON_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    op: str
    key: str
    value_json: str
    ttl: float
    def __init__(self, op: _Optional[str] = ..., key: _Optional[str] = ..., value_json: _Optional[str] = ..., ttl: _Optional[float] = ...) -> None: ...

class UserStateResponse(_message.Message):
    __slots__ = ("found", "value_json", "error")
    FOUND_FIELD_NUMBER: _ClassVar[int]
    VALUE_JSON_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    found: bool
    value_json: str
    error: str
    def __init__(self, found: _Optional[bool] = ..., value_json: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...
