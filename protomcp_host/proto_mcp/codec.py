"""proto-mcp: binary MCPMessages translated to and from the JSON-RPC session core.

Sans-IO. `ProtoMcp.receive(message)` takes one decoded MCPMessage and returns the JSON-RPC
lines that carry it out in an ordinary stateful session (so the same catalogue, visibility, tool
processes, middleware, reload and supervision serve it), plus frames answered on the spot
(version refusals, bad arguments). `ProtoMcp.sent(line)` turns what that session writes back
into an MCPMessage (or None: nothing a proto-mcp client is told).

Every tool is described by protobuf messages: its JSON Schema converted once per tool object
(protomcp_sdk.wire.protoschema), listed inline as a FileDescriptorSet or, with a schema
registry, by reference. Arguments arrive as google.protobuf.Any of the tool's request message,
are checked against its type and decoded to the JSON arguments object; a structured result
goes back as the tool's response message in ToolContent.data.

A typed tool (its own message classes) is called without JSON where nothing else needs it: its
argument message goes to its process as it came, and its result message comes back as the bytes
its process serialized (unless a middleware reads the result: then as JSON, converted here).

Framing (`FrameReader`, `frame`): a 4-byte big-endian length, then the message.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from google.protobuf import any_pb2, descriptor_pb2, struct_pb2
from google.protobuf.json_format import ParseDict
from google.protobuf.message import DecodeError, Message

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.catalog import Catalog, Tool
from protomcp_host.protocol.records import PROTO_ARGUMENTS, PROTO_RESULT, STRUCTURED_PROTO
from protomcp_sdk.wire import proto_mcp_pb2 as pm
from protomcp_sdk.wire import protoschema
from protomcp_sdk.wire.varint import varint

VERSION = "1.0.0"
MAX_FRAME = 64 * 1024 * 1024  # bytes of one MCPMessage
TYPE_URL = "type.googleapis.com/"
# proto-mcp's own error codes
SCHEMA_VALIDATION, UNSUPPORTED_VERSION = -33001, -33002
LISTS = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}


# what a client that stops reading may lose (answers it never does)
NOTICES = frozenset({"progress", "log_message", "list_changed"})


Outgoing = pm.MCPMessage | bytes
"""What goes to a client: a message, or one already serialized (a listing with inline schemas,
spliced from each tool's serialized set: serializing megabytes of nested descriptors again for
every listing would cost far more)."""


def serialized(message: Outgoing) -> bytes:
    return message if isinstance(message, bytes) else message.SerializeToString()


def is_notice(message: Outgoing) -> bool:
    """A message a client that stops reading may lose (see NOTICES)."""
    return not isinstance(message, bytes) and message.WhichOneof("payload") in NOTICES


def frame(message: Outgoing) -> bytes:
    data = serialized(message)
    return len(data).to_bytes(4, "big") + data


def _field(tag: bytes, data: bytes) -> bytes:
    """A length-delimited field: its tag byte, its length, its bytes."""
    return tag + varint(len(data)) + data


# tag bytes of the length-delimited fields spliced (field number << 3 | 2)
_TOOLS_TAG, _CURSOR_TAG, _INLINE_SCHEMA_TAG, _LIST_TOOLS_RESPONSE_TAG = b"\x0a", b"\x12", b"\x22", b"\x2a"
_ID_TAG = b"\x08"  # MCPMessage.id, a varint


class ProtoMcpFrameError(ValueError):
    """A stream that cannot be read on: the connection ends after its error."""


class FrameReader:
    """Length-prefixed frames out of a byte stream."""

    def __init__(self, limit: int = MAX_FRAME) -> None:
        self.limit = limit
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        buffer = self._buffer
        buffer += data
        frames: list[bytes] = []
        at = 0  # consumed once at the end: many small frames in one read cost no quadratic shifting
        while len(buffer) - at >= 4:
            size = int.from_bytes(buffer[at : at + 4], "big")
            if size > self.limit:
                raise ProtoMcpFrameError(f"a frame of {size} bytes exceeds the limit of {self.limit} bytes")
            if len(buffer) - at - 4 < size:
                break
            frames.append(bytes(buffer[at + 4 : at + 4 + size]))
            at += 4 + size
        del buffer[:at]
        return frames

    @property
    def pending(self) -> int:
        """Bytes of an unfinished frame (a truncated one, at the end of the stream)."""
        return len(self._buffer)


def error_message(id_: int, code: int, text: str) -> pm.MCPMessage:
    return pm.MCPMessage(id=id_, error_response=pm.ErrorResponse(code=code, message=text))


@dataclass(slots=True)
class Described:
    """A tool as proto-mcp lists it: its messages and their descriptor set (built once)."""

    tool: Tool
    fds: descriptor_pb2.FileDescriptorSet
    input_message: str
    output_message: str
    ref: str  # its reference in a schema registry ("protomcp/<tool>:<hash>")
    typed: bool = False  # a typed tool: its own messages, which its process parses itself
    classes: dict[str, type[Message]] = field(default_factory=dict)  # by full name, made once
    _inline: bytes = b""  # Tool.inline_schema as a serialized field, made once

    @property
    def inline_schema_field(self) -> bytes:
        if not self._inline:
            self._inline = _field(_INLINE_SCHEMA_TAG, self.fds.SerializeToString(deterministic=True))
        return self._inline

    def message_class(self, full_name: str) -> type[Message]:
        cls = self.classes.get(full_name)
        if cls is None:
            cls = self.classes[full_name] = protoschema.message_class(self.fds, full_name)
        return cls


class SchemaRegistry:
    """Descriptor sets by reference, as files in a directory (`--schema-registry DIR`): the
    host writes each tool's set once; a client reads them instead of listing them inline."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, ref: str) -> Path:
        name, _, digest = ref.partition(":")
        return self.folder / f"{name}@{digest}.pb"

    def put(self, ref: str, fds: descriptor_pb2.FileDescriptorSet) -> None:
        path = self.path(ref)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_suffix(".tmp")
            temporary.write_bytes(fds.SerializeToString(deterministic=True))
            temporary.replace(path)

    def get(self, ref: str) -> descriptor_pb2.FileDescriptorSet | None:
        try:
            return descriptor_pb2.FileDescriptorSet.FromString(self.path(ref).read_bytes())
        except (OSError, DecodeError):
            return None


class Descriptors:
    """Each tool's proto-mcp description, built when first asked for and again only when the
    tool object changes (a reload)."""

    def __init__(
        self,
        catalog: Catalog,
        registry: SchemaRegistry | None = None,
        direct: Callable[[], bool] = lambda: True,
    ) -> None:
        self.catalog = catalog
        self.registry = registry
        # whether a typed tool's argument message may go to its process as it came (no
        # middleware, which works on JSON arguments, is loaded)
        self.direct = direct
        self._built: dict[str, Described] = {}

    def of(self, name: str) -> Described | None:
        tool = self.catalog.get(name)
        if tool is None:
            return None
        described = self._built.get(name)
        if described is None or described.tool is not tool:
            described = self._built[name] = self._describe(tool)
        return described

    def _describe(self, tool: Tool) -> Described:
        if tool.messages is not None:  # a typed tool: the messages its function declares
            raw, request, response = tool.messages
            # what its files import, added when its process left it out: every set is whole
            fds = protoschema.self_contained(descriptor_pb2.FileDescriptorSet.FromString(raw))
        else:
            schema = tool.mcp.get("inputSchema") or {}
            file = protoschema.tool_messages(tool.name, schema, tool.mcp.get("outputSchema"))
            fds = protoschema.descriptor_set([file])
            request, response = protoschema.message_names(file)
        digest = hashlib.sha256(fds.SerializeToString(deterministic=True)).hexdigest()[:16]
        ref = f"protomcp/{tool.name}:{digest}"
        if self.registry is not None:
            self.registry.put(ref, fds)
        return Described(tool, fds, request, response, ref, typed=tool.messages is not None)


@dataclass(slots=True)
class Pending:
    """A client request in progress: how its JSON-RPC answer becomes an MCPMessage."""

    kind: str  # the oneof field of the request
    described: Described | None = None
    refs: bool = False  # list tools by reference
    only: frozenset[str] = frozenset()  # list only these references


class ProtoMcp:
    """One proto-mcp connection, in front of one stateful JSON-RPC session."""

    def __init__(self, descriptors: Descriptors) -> None:
        self.descriptors = descriptors
        self.pending: dict[int, Pending] = {}
        self.initialized = False
        self.client_refs = False  # the client resolves schema references (supports_bsr_refs)

    # -- client -> session ---------------------------------------------------------------
    def receive(self, data: bytes) -> tuple[list[bytes], list[pm.MCPMessage]]:
        """JSON-RPC lines for the session, and messages answered here."""
        try:
            message = pm.MCPMessage.FromString(data)
        except DecodeError:
            return [], [error_message(0, rpc.PARSE_ERROR, "Parse error: not an MCPMessage")]
        kind = message.WhichOneof("payload")
        handler = getattr(self, f"_{kind}", None) if kind else None
        if handler is None:
            return [], [
                error_message(
                    message.id,
                    rpc.INVALID_REQUEST,
                    f"Invalid Request: a client does not send {kind or 'an empty message'}",
                )
            ]
        if message.id in self.pending and kind != "cancel_request":
            return [], [
                error_message(message.id, rpc.INVALID_REQUEST, f"Invalid Request: id {message.id} is in use")
            ]
        if not self.initialized and kind != "initialize_request":
            return [], [error_message(message.id, rpc.INVALID_REQUEST, "Invalid Request: initialize first")]
        return handler(message.id, getattr(message, kind))

    def _request(
        self, id_: int, pending: Pending, method: str, params: dict[str, Any]
    ) -> tuple[list[bytes], list[pm.MCPMessage]]:
        self.pending[id_] = pending
        return [rpc.request(id_, method, params)], []

    def _initialize_request(
        self, id_: int, request: pm.InitializeRequest
    ) -> tuple[list[bytes], list[pm.MCPMessage]]:
        major = request.protocol_version.split(".", 1)[0]
        if major != VERSION.split(".", 1)[0]:
            text = f"Unsupported protocol version {request.protocol_version!r}: this server speaks {VERSION}"
            return [], [error_message(id_, UNSUPPORTED_VERSION, text)]
        if self.initialized:
            return [], [error_message(id_, rpc.INVALID_REQUEST, "Invalid Request: already initialized")]
        self.initialized = True
        client = {
            "name": request.metadata.get("name", "proto-mcp client"),
            "version": request.metadata.get("version", "0"),
        }
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client}
        lines, answers = self._request(
            id_,
            Pending("initialize_request", refs=request.capabilities.supports_bsr_refs),
            "initialize",
            params,
        )
        return [*lines, rpc.notification("notifications/initialized")], answers

    def _list_tools_request(
        self, id_: int, request: pm.ListToolsRequest
    ) -> tuple[list[bytes], list[pm.MCPMessage]]:
        refs = self.descriptors.registry is not None and not request.include_schemas and self.client_refs
        pending = Pending("list_tools_request", refs=refs, only=frozenset(request.bsr_refs))
        return self._request(id_, pending, "tools/list", {"cursor": request.cursor} if request.cursor else {})

    def _call_tool_request(
        self, id_: int, request: pm.CallToolRequest
    ) -> tuple[list[bytes], list[pm.MCPMessage]]:
        described = self.descriptors.of(request.name)
        if described is None:  # the session answers unknown tools itself, as JSON-RPC does
            return self._request(
                id_, Pending("call_tool_request"), "tools/call", {"name": request.name, "arguments": {}}
            )
        params: dict[str, Any] = {"name": request.name}
        meta: dict[str, Any] = {"progressToken": id_} if request.report_progress else {}
        problem = _wrong_type(request.arguments, described)
        if not problem and described.typed and described.output_message:
            meta[PROTO_RESULT] = True  # its result message comes back as its process wrote it
        if not problem and described.typed and request.arguments.value and self.descriptors.direct():
            params["arguments"] = {}  # the message goes as it came; its process parses it
            meta[PROTO_ARGUMENTS] = base64.b64encode(request.arguments.value).decode()
        elif not problem:
            params["arguments"], problem = self._arguments(request.arguments, described)
        if problem:
            error = pm.Error(code=SCHEMA_VALIDATION, message=problem)
            return [], [pm.MCPMessage(id=id_, call_tool_response=pm.CallToolResponse(error=error))]
        if meta:
            params["_meta"] = meta
        return self._request(id_, Pending("call_tool_request", described), "tools/call", params)

    def _arguments(self, packed: any_pb2.Any, described: Described) -> tuple[dict[str, Any], str]:
        if not packed.value:
            return {}, ""
        cls = described.message_class(described.input_message)
        try:
            return protoschema.message_to_json(cls.FromString(packed.value)), ""
        except DecodeError as exc:
            wanted = described.input_message
            return {}, f"Invalid arguments for tool '{described.tool.name}': not a {wanted} ({exc})"

    def _list_resources_request(
        self, id_: int, request: pm.ListResourcesRequest
    ) -> tuple[list[bytes], list[pm.MCPMessage]]:
        return self._request(
            id_,
            Pending("list_resources_request"),
            "resources/list",
            {"cursor": request.cursor} if request.cursor else {},
        )

    def _read_resource_request(
        self, id_: int, request: pm.ReadResourceRequest
    ) -> tuple[list[bytes], list[pm.MCPMessage]]:
        return self._request(id_, Pending("read_resource_request"), "resources/read", {"uri": request.uri})

    def _list_prompts_request(
        self, id_: int, request: pm.ListPromptsRequest
    ) -> tuple[list[bytes], list[pm.MCPMessage]]:
        return self._request(
            id_,
            Pending("list_prompts_request"),
            "prompts/list",
            {"cursor": request.cursor} if request.cursor else {},
        )

    def _get_prompt_request(
        self, id_: int, request: pm.GetPromptRequest
    ) -> tuple[list[bytes], list[pm.MCPMessage]]:
        return self._request(
            id_,
            Pending("get_prompt_request"),
            "prompts/get",
            {"name": request.name, "arguments": dict(request.arguments)},
        )

    def _cancel_request(self, id_: int, request: pm.CancelRequest) -> tuple[list[bytes], list[pm.MCPMessage]]:
        if self.pending.pop(id_, None) is None:
            return [], []
        params = {"requestId": id_, **({"reason": request.reason} if request.reason else {})}
        return [rpc.notification("notifications/cancelled", params)], []

    # -- session -> client ---------------------------------------------------------------
    def sent(self, line: bytes) -> Outgoing | None:
        message = orjson.loads(line)
        if "method" in message:
            return self._notification(message)
        id_ = message.get("id")
        pending = self.pending.pop(id_, None) if isinstance(id_, int) else None
        if pending is None:
            return None  # cancelled meanwhile, or the answer to our own request
        error = message.get("error")
        if error is not None:
            code, text = error.get("code", rpc.INTERNAL_ERROR), error.get("message", "")
            if pending.kind == "call_tool_request":
                answer = pm.CallToolResponse(error=pm.Error(code=code, message=text))
                return pm.MCPMessage(id=id_, call_tool_response=answer)
            return error_message(id_, code, text)
        return getattr(self, f"_answer_{pending.kind}")(id_, pending, message["result"])

    def _notification(self, message: dict[str, Any]) -> pm.MCPMessage | None:
        method, params = message["method"], message.get("params") or {}
        if method in LISTS:
            return pm.MCPMessage(list_changed=pm.ListChangedNotification(list=LISTS[method]))
        if method == "notifications/progress" and isinstance(params.get("progressToken"), int):
            progress = pm.ProgressNotification(
                progress=params.get("progress", 0),
                total=params.get("total") or 0,
                message=params.get("message") or "",
            )
            return pm.MCPMessage(id=params["progressToken"], progress=progress)
        if method == "notifications/message":
            log = pm.LogMessage(
                level=params.get("level", "info"),
                logger=params.get("logger") or "",
                data_json=orjson.dumps(params.get("data")).decode(),
            )
            return pm.MCPMessage(log_message=log)
        return None  # requests to the client: a proto-mcp client declares no capabilities

    def _answer_initialize_request(self, id_: int, pending: Pending, result: dict[str, Any]) -> pm.MCPMessage:
        self.client_refs = pending.refs
        offered = result.get("capabilities") or {}
        capabilities = pm.ServerCapabilities(
            supports_bsr_refs=self.descriptors.registry is not None,
            tools=pm.ToolCapabilities(supports_list_changed=True),
            resources=pm.ResourceCapabilities(supports_list_changed="resources" in offered),
            prompts=pm.PromptCapabilities(supports_list_changed="prompts" in offered),
        )
        info = result.get("serverInfo") or {}
        metadata = {"name": str(info.get("name", "")), "version": str(info.get("version", ""))}
        if result.get("instructions"):
            metadata["instructions"] = result["instructions"]
        answer = pm.InitializeResponse(protocol_version=VERSION, capabilities=capabilities, metadata=metadata)
        return pm.MCPMessage(id=id_, initialize_response=answer)

    def _answer_list_tools_request(self, id_: int, pending: Pending, result: dict[str, Any]) -> Outgoing:
        answer = pm.ListToolsResponse(next_cursor=result.get("nextCursor") or "")
        inline: list[bytes] = []  # each listed tool's inline_schema field, spliced in below
        for shown in result.get("tools") or []:
            described = self.descriptors.of(shown["name"])
            if described is None:
                continue
            if pending.only and described.ref not in pending.only:
                continue
            tool = answer.tools.add(name=shown["name"], description=shown.get("description") or "")
            tool.input_message, tool.output_message = described.input_message, described.output_message
            if pending.refs:
                tool.bsr_ref = described.ref
            else:
                inline.append(described.inline_schema_field)
            _put_metadata(tool.metadata, shown, ("title", "annotations", "_meta", "icons"))
        if not inline:
            return pm.MCPMessage(id=id_, list_tools_response=answer)
        # The same bytes as setting each inline_schema and serializing the whole (a field may
        # come in any order): each set is serialized once per tool object, not per listing.
        parts = [
            _field(_TOOLS_TAG, tool.SerializeToString() + schema)
            for tool, schema in zip(answer.tools, inline, strict=True)
        ]
        if answer.next_cursor:
            parts.append(_field(_CURSOR_TAG, answer.next_cursor.encode()))
        listing = _field(_LIST_TOOLS_RESPONSE_TAG, b"".join(parts))
        return (_ID_TAG + varint(id_) if id_ else b"") + listing

    def _answer_call_tool_request(self, id_: int, pending: Pending, result: dict[str, Any]) -> pm.MCPMessage:
        answer = pm.ToolResult(is_error=bool(result.get("isError")))
        for block in result.get("content") or []:
            answer.content.append(_content(block))
        structured = result.get("structuredContent")
        if structured is not None:
            answer.content.append(pm.ToolContent(data=_pack_structured(structured, pending.described)))
        elif STRUCTURED_PROTO in result and pending.described is not None:
            data = any_pb2.Any(
                type_url=TYPE_URL + pending.described.output_message,
                value=base64.b64decode(result[STRUCTURED_PROTO]),
            )
            answer.content.append(pm.ToolContent(data=data))
        response = pm.CallToolResponse(success=answer)
        _put_metadata(response.metadata, result, ("_meta",))
        return pm.MCPMessage(id=id_, call_tool_response=response)

    def _answer_list_resources_request(
        self, id_: int, pending: Pending, result: dict[str, Any]
    ) -> pm.MCPMessage:
        answer = pm.ListResourcesResponse(next_cursor=result.get("nextCursor") or "")
        for shown in result.get("resources") or []:
            resource = answer.resources.add(
                uri=shown["uri"],
                name=shown.get("name") or "",
                description=shown.get("description") or "",
                mime_type=shown.get("mimeType") or "",
            )
            _put_metadata(resource.metadata, shown, ("title", "annotations", "_meta", "icons"))
        return pm.MCPMessage(id=id_, list_resources_response=answer)

    def _answer_read_resource_request(
        self, id_: int, pending: Pending, result: dict[str, Any]
    ) -> pm.MCPMessage:
        answer = pm.ReadResourceResponse()
        for item in result.get("contents") or []:
            content = answer.contents.add(uri=item.get("uri", ""), mime_type=item.get("mimeType") or "")
            if "blob" in item:
                content.blob = base64.b64decode(item["blob"])
            else:
                content.text = item.get("text", "")
        return pm.MCPMessage(id=id_, read_resource_response=answer)

    def _answer_list_prompts_request(
        self, id_: int, pending: Pending, result: dict[str, Any]
    ) -> pm.MCPMessage:
        answer = pm.ListPromptsResponse(next_cursor=result.get("nextCursor") or "")
        for shown in result.get("prompts") or []:
            prompt = answer.prompts.add(name=shown["name"], description=shown.get("description") or "")
            _put_metadata(prompt.metadata, shown, ("title", "_meta", "icons"))
            for argument in shown.get("arguments") or []:
                prompt.arguments.add(
                    name=argument["name"],
                    description=argument.get("description") or "",
                    required=bool(argument.get("required")),
                )
        return pm.MCPMessage(id=id_, list_prompts_response=answer)

    def _answer_get_prompt_request(self, id_: int, pending: Pending, result: dict[str, Any]) -> pm.MCPMessage:
        answer = pm.GetPromptResponse(description=result.get("description") or "")
        for item in result.get("messages") or []:
            answer.messages.add(role=item.get("role", "user"), content=_content(item.get("content") or {}))
        return pm.MCPMessage(id=id_, get_prompt_response=answer)


def _put_metadata(metadata: Any, shown: dict[str, Any], keys: tuple[str, ...]) -> None:
    """MCP fields proto-mcp has no field for, as JSON in a `metadata` map."""
    for key in keys:
        if key in shown:
            metadata[key] = orjson.dumps(shown[key]).decode()


def _wrong_type(packed: any_pb2.Any, described: Described) -> str:
    """Why an Any cannot be the tool's argument message ("" if it can; empty means none)."""
    if (not packed.type_url and not packed.value) or packed.type_url.rsplit("/", 1)[
        -1
    ] == described.input_message:
        return ""
    wanted = TYPE_URL + described.input_message
    bad = f"Invalid arguments for tool '{described.tool.name}'"
    return f"{bad}: expected an Any of {wanted}, got {packed.type_url or 'no type'}"


def _content(block: dict[str, Any]) -> pm.ToolContent:
    kind = block.get("type")
    if kind == "text":
        return pm.ToolContent(text=block.get("text", ""), mime_type="text/plain")
    if kind in ("image", "audio"):
        return pm.ToolContent(
            image=base64.b64decode(block.get("data", "")), mime_type=block.get("mimeType") or ""
        )
    # resource links and embedded resources: their MCP JSON, said to be so by the MIME type
    return pm.ToolContent(text=orjson.dumps(block).decode(), mime_type=f"application/vnd.mcp.{kind}+json")


def _pack_structured(structured: Any, described: Described | None) -> any_pb2.Any:
    packed = any_pb2.Any()
    if described is not None and described.output_message and isinstance(structured, dict):
        cls = described.message_class(described.output_message)
        try:
            packed.Pack(protoschema.json_to_message(structured, cls))
            return packed
        except ValueError:
            pass  # not the declared shape (the host reports that to JSON-RPC clients as well)
    value = struct_pb2.Value()
    ParseDict(structured, value)
    packed.Pack(value)
    return packed
