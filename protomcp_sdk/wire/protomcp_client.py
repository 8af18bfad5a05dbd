"""A small proto-mcp client: binary MCPMessages to a protomcp host.

    async with ProtoMcpClient.stdio(["protomcp", "run", "tools.py"]) as client:
        tools = await client.list_tools()
        result = await client.call_tool("add", {"a": 1, "b": 2})
        result.structured  # {"result": 3}, from the tool's response message

Over HTTP the host serves proto-mcp as a binary WebSocket beside the MCP endpoint:
``ProtoMcpClient.websocket("ws://127.0.0.1:8000/proto-mcp", token=...)`` (needs ``websockets``).

Arguments may be a dict (packed into the tool's request message through its descriptor) or a
message of that type. Descriptors listed by reference (``bsr_ref``) are read from `registry`,
the host's ``--schema-registry`` directory.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import any_pb2, descriptor_pb2, struct_pb2
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from protomcp_sdk.wire import proto_mcp_pb2 as pm
from protomcp_sdk.wire.descriptor_sets import message_class
from protomcp_sdk.wire.jsontypes import JSON, JSONObject
from protomcp_sdk.wire.proto_json import json_to_message, message_to_json

VERSION = "1.0.0"
SCHEMA_RESOLUTION = -33000  # proto-mcp: a schema reference that cannot be resolved


class ProtoMcpError(Exception):
    """An ErrorResponse (or CallToolResponse.error) from the server."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message


@dataclass
class ToolInfo:
    name: str
    description: str
    fds: descriptor_pb2.FileDescriptorSet
    input_message: str
    output_message: str
    ref: str = ""
    metadata: dict[str, str] = field(default_factory=dict)

    def request_class(self) -> type[Message]:
        return message_class(self.fds, self.input_message)


@dataclass
class ProtoMcpCallResult:
    """One tools/call result over proto-mcp."""

    content: list[pm.ToolContent]
    is_error: bool
    structured: JSON = None  # the structured result as JSON (decoded from ToolContent.data)
    data: Message | None = None  # ... and as the tool's response message, when it has one
    metadata: dict[str, str] = field(default_factory=dict)  # e.g. "_meta": the result's, as JSON

    @property
    def text(self) -> str:
        return "\n".join(c.text for c in self.content if c.WhichOneof("content") == "text")


CallResult = ProtoMcpCallResult
"""The 0.1.0 name, still imported (by the host's `protomcp call --binary` among others); it said
less than the one above, beside protomcp_sdk.testing.CallResult."""

Send = Callable[[bytes], Awaitable[None]]


class ProtoMcpClient:
    def __init__(self, send: Send, registry: Path | None = None) -> None:
        self._send = send
        self.registry = registry
        self._ids = iter(range(1, 1 << 62))
        self._waiting: dict[int, asyncio.Future[pm.MCPMessage]] = {}
        self._progress: dict[int, Callable[[float, float, str], object]] = {}
        self.tools: dict[str, ToolInfo] = {}
        self.notifications: asyncio.Queue[pm.MCPMessage] = asyncio.Queue()  # list_changed, log_message
        self.errors: list[pm.ErrorResponse] = []  # error responses with no request (id 0)
        self.server: pm.InitializeResponse | None = None

    # -- connecting ----------------------------------------------------------------------
    @classmethod
    @contextlib.asynccontextmanager
    async def stdio(
        cls, command: list[str], registry: Path | None = None, env: dict[str, str] | None = None
    ) -> AsyncIterator[ProtoMcpClient]:
        """Start `command` (a protomcp host) and speak proto-mcp on its stdin/stdout."""
        process = await asyncio.create_subprocess_exec(
            *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env
        )
        assert process.stdin is not None and process.stdout is not None
        stdin, stdout = process.stdin, process.stdout

        async def send(data: bytes) -> None:
            stdin.write(len(data).to_bytes(4, "big") + data)
            await stdin.drain()

        client = cls(send, registry)
        reader = asyncio.create_task(client._read_stream(stdout))
        try:
            await client.initialize()
            yield client
        finally:
            reader.cancel()
            with contextlib.suppress(Exception):
                stdin.close()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()

    @classmethod
    @contextlib.asynccontextmanager
    async def websocket(
        cls, url: str, token: str = "", registry: Path | None = None
    ) -> AsyncIterator[ProtoMcpClient]:
        """Speak proto-mcp over the host's binary WebSocket (one MCPMessage per message)."""
        from websockets.asyncio.client import connect

        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with connect(url, additional_headers=headers, max_size=None, open_timeout=10) as ws:

            async def send(data: bytes) -> None:
                await ws.send(data)

            client = cls(send, registry)

            async def read() -> None:
                try:
                    async for message in ws:
                        client._dispatch(message if isinstance(message, bytes) else message.encode())
                finally:
                    client._fail_all("the connection closed")

            reader = asyncio.create_task(read())
            try:
                await client.initialize()
                yield client
            finally:
                reader.cancel()

    async def _read_stream(self, stream: asyncio.StreamReader) -> None:
        try:
            while True:
                head = await stream.readexactly(4)
                self._dispatch(await stream.readexactly(int.from_bytes(head, "big")))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._fail_all("the server closed the connection")

    def _dispatch(self, data: bytes) -> None:
        message = pm.MCPMessage.FromString(data)
        kind = message.WhichOneof("payload")
        if kind == "progress":
            callback = self._progress.get(message.id)
            if callback is not None:
                callback(message.progress.progress, message.progress.total, message.progress.message)
            return
        if kind in ("list_changed", "log_message"):
            self.notifications.put_nowait(message)
            return
        waiter = self._waiting.pop(message.id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(message)
        elif kind == "error_response":
            self.errors.append(message.error_response)
            self.notifications.put_nowait(message)

    def _fail_all(self, why: str) -> None:
        for waiter in self._waiting.values():
            if not waiter.done():
                waiter.set_exception(ConnectionError(why))
        self._waiting.clear()

    async def request(
        self, progress: Callable[[float, float, str], object] | None = None, **payload: Any
    ) -> pm.MCPMessage:
        """Send one request (its oneof field and message) and wait for its answer."""
        id_ = next(self._ids)
        waiter: asyncio.Future[pm.MCPMessage] = asyncio.get_running_loop().create_future()
        self._waiting[id_] = waiter
        if progress is not None:
            self._progress[id_] = progress
        try:
            await self._send(pm.MCPMessage(id=id_, **payload).SerializeToString())
            answer = await waiter
        except asyncio.CancelledError:
            self._waiting.pop(id_, None)
            with contextlib.suppress(Exception):
                await self._send(pm.MCPMessage(id=id_, cancel_request=pm.CancelRequest()).SerializeToString())
            raise
        finally:
            self._progress.pop(id_, None)
        if answer.WhichOneof("payload") == "error_response":
            raise ProtoMcpError(answer.error_response.code, answer.error_response.message)
        return answer

    # -- operations ----------------------------------------------------------------------
    async def initialize(self) -> pm.InitializeResponse:
        capabilities = pm.ClientCapabilities(
            supports_bsr_refs=self.registry is not None, encodings=["protobuf"]
        )
        request = pm.InitializeRequest(protocol_version=VERSION, capabilities=capabilities)
        request.metadata["name"] = "protomcp_client"
        self.server = (await self.request(initialize_request=request)).initialize_response
        return self.server

    async def list_tools(self, include_schemas: bool = False) -> list[ToolInfo]:
        """Every tool (all pages), with its descriptors resolved; kept in `self.tools`."""
        tools: list[ToolInfo] = []
        cursor = ""
        while True:
            request = pm.ListToolsRequest(include_schemas=include_schemas, cursor=cursor)
            page = (await self.request(list_tools_request=request)).list_tools_response
            tools += [self._tool_info(tool) for tool in page.tools]
            if not (cursor := page.next_cursor):
                break
        self.tools = {tool.name: tool for tool in tools}
        return tools

    def _tool_info(self, tool: pm.Tool) -> ToolInfo:
        if tool.WhichOneof("schema_source") == "bsr_ref":
            fds = self._resolve(tool.bsr_ref)
        else:
            fds = tool.inline_schema
        return ToolInfo(
            tool.name,
            tool.description,
            fds,
            tool.input_message,
            tool.output_message,
            tool.bsr_ref,
            dict(tool.metadata),
        )

    def _resolve(self, ref: str) -> descriptor_pb2.FileDescriptorSet:
        name, _, digest = ref.partition(":")
        path = (self.registry or Path()) / f"{name}@{digest}.pb"
        try:
            return descriptor_pb2.FileDescriptorSet.FromString(path.read_bytes())
        except OSError:
            raise ProtoMcpError(
                SCHEMA_RESOLUTION, f"schema {ref} is not in the registry {self.registry}"
            ) from None

    async def call_tool(
        self,
        name: str,
        arguments: JSONObject | Message | None = None,
        progress: Callable[[float, float, str], object] | None = None,
    ) -> ProtoMcpCallResult:
        """Call a tool; a dict of arguments is packed as its request message (list_tools first,
        or it is listed now), a message as itself, an Any is sent as it is. Raises
        ProtoMcpError for a protocol error."""
        packed = any_pb2.Any()
        if isinstance(arguments, any_pb2.Any):  # packed already
            packed = arguments
        elif isinstance(arguments, Message):
            packed.Pack(arguments)
        else:
            info = self.tools.get(name) or await self._find(name)
            packed.Pack(json_to_message(arguments or {}, info.request_class()))
        request = pm.CallToolRequest(name=name, arguments=packed, report_progress=progress is not None)
        answer = (await self.request(progress, call_tool_request=request)).call_tool_response
        if answer.WhichOneof("result") == "error":
            raise ProtoMcpError(answer.error.code, answer.error.message)
        result = self._result(name, answer.success)
        result.metadata = dict(answer.metadata)
        return result

    async def _find(self, name: str) -> ToolInfo:
        await self.list_tools()
        if name not in self.tools:
            raise ProtoMcpError(-32602, f"Unknown tool: {name}")
        return self.tools[name]

    def _result(self, name: str, success: pm.ToolResult) -> ProtoMcpCallResult:
        result = ProtoMcpCallResult(
            [c for c in success.content if c.WhichOneof("content") != "data"], success.is_error
        )
        for content in success.content:
            if content.WhichOneof("content") != "data":
                continue
            info = self.tools.get(name)
            type_name = content.data.type_url.rsplit("/", 1)[-1]
            if info is not None and info.output_message and type_name == info.output_message:
                message = message_class(info.fds, info.output_message)()
                content.data.Unpack(message)
                result.data, result.structured = message, message_to_json(message)
            elif type_name == "google.protobuf.Value":
                value = struct_pb2.Value()
                content.data.Unpack(value)
                result.structured = MessageToDict(value)
        return result

    async def list_resources(self) -> list[pm.Resource]:
        page = (await self.request(list_resources_request=pm.ListResourcesRequest())).list_resources_response
        return list(page.resources)

    async def read_resource(self, uri: str) -> list[pm.ResourceContent]:
        answer = await self.request(read_resource_request=pm.ReadResourceRequest(uri=uri))
        return list(answer.read_resource_response.contents)

    async def list_prompts(self) -> list[pm.Prompt]:
        return list(
            (await self.request(list_prompts_request=pm.ListPromptsRequest())).list_prompts_response.prompts
        )

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> pm.GetPromptResponse:
        request = pm.GetPromptRequest(name=name, arguments=arguments or {})
        return (await self.request(get_prompt_request=request)).get_prompt_response

    async def next_notification(self, timeout: float = 10) -> pm.MCPMessage:
        return await asyncio.wait_for(self.notifications.get(), timeout)
