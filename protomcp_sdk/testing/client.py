"""Client: an MCP client of the real host for testing tool files (see the package's
docstring), and the results it gives."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Self

from protomcp_sdk.testing.answers import Elicitation, Roots, Sampling, answer_request, client_capabilities
from protomcp_sdk.testing.connection import HostConnection
from protomcp_sdk.wire.jsontypes import JSON, JSONObject

PROTOCOL_VERSION = "2025-11-25"

Request = Callable[[str, JSONObject | None], Awaitable[JSONObject]]


@dataclass
class CallResult:
    """One tools/call result."""

    content: list[JSONObject]
    structured: JSON = None
    is_error: bool = False
    meta: JSONObject | None = None

    @property
    def text(self) -> str:
        """The text blocks joined with newlines (what a model reads first)."""
        return "\n".join(block["text"] for block in self.content if block.get("type") == "text")

    @classmethod
    def from_mcp(cls, result: JSONObject) -> CallResult:
        return cls(
            content=result.get("content", []),
            structured=result.get("structuredContent"),
            is_error=bool(result.get("isError")),
            meta=result.get("_meta"),
        )


@dataclass
class Progress:
    progress: float
    total: float | None
    message: str | None


class Client:
    """An MCP client connected to ``protomcp run FILES`` (use with ``async with``).

    Notifications are captured as they arrive: ``progress`` (every progress notification, in
    order), ``logs`` (the ``params`` of every log message), ``list_changed`` (how many
    ``notifications/tools/list_changed`` arrived) and ``stderr`` (the host's stderr lines).
    ``server_info`` and ``instructions`` are what ``initialize`` reported.

    ``sampling``, ``elicitation`` and ``roots`` answer the tools' requests to the client (see
    ``protomcp_sdk.testing``); each one given is declared as a client capability. ``requests``
    keeps ``(method, params)`` of every request the host made of the client, in order, and
    ``task_status`` the params of every ``notifications/tasks/status``.
    """

    def __init__(
        self,
        *files: str | os.PathLike[str],
        python: str = sys.executable,
        options: tuple[str, ...] | list[str] = (),
        env: dict[str, str] | None = None,
        timeout: float = 30.0,
        dev: bool = False,
        sampling: Sampling | None = None,
        elicitation: Elicitation | None = None,
        roots: Roots | None = None,
        extensions: Iterable[str] = (),
    ) -> None:
        """``options`` are extra ``protomcp run`` options, e.g. ``("--plugin", "name")``;
        ``dev=True`` runs ``protomcp dev`` (reload on save) instead of ``run``; ``extensions``
        are the MCP extensions the client declares (``ctx.client_supports`` finds them), e.g.
        ``["io.modelcontextprotocol/ui"]`` for a client that renders apps."""
        self.extensions = list(extensions)
        self.sampling = sampling
        self.elicitation = elicitation
        self.roots = None if roots is None else list(roots)
        self.requests: list[tuple[str, JSONObject]] = []
        self.task_status: list[JSONObject] = []
        self.files = files
        self.python = python
        self.options = tuple(options)
        self.env = env
        self.timeout = timeout
        self.command = "dev" if dev else "run"
        self.progress: list[Progress] = []
        self.logs: list[JSONObject] = []
        self.list_changed = 0
        self.stderr: list[str] = []
        self.server_info: JSONObject = {}
        self.instructions: str | None = None
        self._changed = asyncio.Condition()
        self._host = HostConnection(self.stderr, self._answer, self._notification)

    # -- lifecycle -------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        argv = [self.python, "-m", "protomcp_host", self.command, *self.options, *map(str, self.files)]
        await self._host.start(argv, self.env)
        try:
            result = await self.request(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": self._capabilities(),
                    "clientInfo": {"name": "protomcp_sdk.testing", "version": "1"},
                },
            )
            self.server_info = result.get("serverInfo", {})
            self.instructions = result.get("instructions")
            self._host.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await self.request("tools/list")  # answered once the tool files have loaded (or failed to)
        except BaseException:
            await self.close()
            raise
        return self

    def _capabilities(self) -> JSONObject:
        capabilities = client_capabilities(self.sampling, self.elicitation, self.roots)
        if self.extensions:
            capabilities["extensions"] = {extension: {} for extension in self.extensions}
        return capabilities

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close stdin (the host then stops its tool processes) and wait; kill what is left."""
        await self._host.close()

    # -- requests --------------------------------------------------------------------
    async def request(self, method: str, params: JSONObject | None = None) -> JSONObject:
        """Send one JSON-RPC request and return its result; raises ClientError on an error."""
        return await self._host.request(method, params, self.timeout)

    async def call(self, name: str, /, **arguments: JSON) -> CallResult:
        """Call a tool with keyword arguments; progress notifications are requested and captured."""
        return await self.call_tool(name, arguments)

    async def call_tool(self, name: str, arguments: JSONObject | None = None) -> CallResult:
        """Call a tool with an arguments dict (for argument names that are not identifiers)."""
        token = f"call-{next(self._host.ids)}"
        params = {"name": name, "arguments": arguments or {}, "_meta": {"progressToken": token}}
        return CallResult.from_mcp(await self.request("tools/call", params))

    async def list_tools(self) -> list[JSONObject]:
        """Every tool (all pages), as MCP Tool objects."""
        tools: list[JSONObject] = []
        cursor: str | None = None
        while True:
            page = await self.request("tools/list", {"cursor": cursor} if cursor else {})
            tools.extend(page["tools"])
            cursor = page.get("nextCursor")
            if not cursor:
                return tools

    async def list_resources(self) -> list[JSONObject]:
        """Every resource (all pages), as MCP Resource objects."""
        return await _all_pages(self.request, "resources/list", "resources")

    async def list_resource_templates(self) -> list[JSONObject]:
        return await _all_pages(self.request, "resources/templates/list", "resourceTemplates")

    async def read_resource(self, uri: str) -> list[JSONObject]:
        """The contents of a resource (MCP objects with ``text`` or base64 ``blob``)."""
        contents: list[JSONObject] = (await self.request("resources/read", {"uri": uri}))["contents"]
        return contents

    async def list_prompts(self) -> list[JSONObject]:
        return await _all_pages(self.request, "prompts/list", "prompts")

    async def get_prompt(self, name: str, /, **arguments: str) -> list[JSONObject]:
        """A prompt's messages (MCP PromptMessage objects)."""
        messages: list[JSONObject] = (
            await self.request("prompts/get", {"name": name, "arguments": arguments})
        )["messages"]
        return messages

    async def complete(
        self, *, argument: str, value: str, prompt: str | None = None, resource: str | None = None
    ) -> list[str]:
        """Completion values for an argument of a prompt or a resource template."""
        ref = {"type": "ref/prompt", "name": prompt} if prompt else {"type": "ref/resource", "uri": resource}
        params = {"ref": ref, "argument": {"name": argument, "value": value}}
        values: list[str] = (await self.request("completion/complete", params))["completion"]["values"]
        return values

    # -- tasks (MCP 2025-11-25) ----------------------------------------------------------
    async def call_task(self, name: str, /, *, ttl: int | None = None, **arguments: JSON) -> JSONObject:
        """Start a tool call as an MCP task (the tool must allow it: ``@tool(task=...)``);
        returns the Task object (``taskId``, ``status``...)."""
        params: JSONObject = {
            "name": name,
            "arguments": arguments,
            "task": {} if ttl is None else {"ttl": ttl},
        }
        task: JSONObject = (await self.request("tools/call", params))["task"]
        return task

    async def get_task(self, task_id: str) -> JSONObject:
        """The task's current state (``status``, ``statusMessage``...)."""
        return await self.request("tasks/get", {"taskId": task_id})

    async def task_result(self, task_id: str) -> CallResult:
        """The task's tool result; waits until the task is done."""
        return CallResult.from_mcp(await self.request("tasks/result", {"taskId": task_id}))

    async def list_tasks(self) -> list[JSONObject]:
        return await _all_pages(self.request, "tasks/list", "tasks")

    async def cancel_task(self, task_id: str) -> JSONObject:
        return await self.request("tasks/cancel", {"taskId": task_id})

    # -- roots -----------------------------------------------------------------------
    def set_roots(self, roots: Roots) -> None:
        """Change the roots this client answers with, and tell the host they changed."""
        self.roots = list(roots)
        self._host.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})

    async def wait_for_list_changed(self, count: int = 1) -> None:
        """Wait until at least ``count`` list_changed notifications have arrived."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: self.list_changed >= count), self.timeout)

    # -- what the host sends the client -----------------------------------------------
    async def _answer(self, method: str, params: JSONObject) -> JSONObject:
        self.requests.append((method, params))
        return await answer_request(method, params, self.sampling, self.elicitation, self.roots)

    async def _notification(self, method: str, params: JSONObject) -> None:
        if method == "notifications/progress":
            self.progress.append(Progress(params["progress"], params.get("total"), params.get("message")))
        elif method == "notifications/message":
            self.logs.append(params)
        elif method == "notifications/tasks/status":
            self.task_status.append(params)
        elif method == "notifications/tools/list_changed":
            async with self._changed:
                self.list_changed += 1
                self._changed.notify_all()


async def _all_pages(request: Request, method: str, key: str) -> list[JSONObject]:
    items: list[JSONObject] = []
    cursor: str | None = None
    while True:
        page = await request(method, {"cursor": cursor} if cursor else {})
        items.extend(page[key])
        cursor = page.get("nextCursor")
        if not cursor:
            return items
