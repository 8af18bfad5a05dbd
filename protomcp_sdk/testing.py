"""Testing tool files: a client over the real host and tool process, and a Context stand-in.

End to end, as an AI client would see the tools::

    from protomcp_sdk.testing import Client

    async def test_add():
        async with Client("tools.py") as c:
            result = await c.call("add", a=1, b=2)
            assert result.structured == {"result": 3} and not result.is_error

`Client` starts ``python -m protomcp_host run FILE...`` as a subprocess and speaks MCP
(JSON-RPC over its stdio) to it, so arguments are validated, results encoded and errors
reported exactly as in production. It depends on nothing but the standard library and
orjson (the SDK never imports the host: the host runs in its own process).

Unit tests can call a tool function directly with a :class:`RecordingContext`, which keeps
what the tool reported instead of sending it::

    tools = load_tool_module("tools.py")
    ctx = RecordingContext()
    assert await tools.count(3, ctx) == "done"
    assert ctx.progress[-1] == (3, 3, "step 3")
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import importlib.util
import itertools
import os
import signal
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import orjson

from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.runtime.context import Context
from protomcp_sdk.wire import protomcp_pb2 as pb

__all__ = ["CallResult", "Client", "ClientError", "RecordingContext", "load_tool_module"]

PROTOCOL_VERSION = "2025-11-25"


class ClientError(Exception):
    """The host answered with a JSON-RPC error, or went away."""


@dataclass
class CallResult:
    """One tools/call result."""

    content: list[dict[str, Any]]
    structured: Any = None
    is_error: bool = False
    meta: dict[str, Any] | None = None

    @property
    def text(self) -> str:
        """The text blocks joined with newlines (what a model reads first)."""
        return "\n".join(block["text"] for block in self.content if block.get("type") == "text")

    @classmethod
    def from_mcp(cls, result: dict[str, Any]) -> CallResult:
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
    """

    def __init__(
        self,
        *files: str | os.PathLike[str],
        python: str = sys.executable,
        options: tuple[str, ...] | list[str] = (),
        env: dict[str, str] | None = None,
        timeout: float = 30.0,
        dev: bool = False,
    ) -> None:
        """``options`` are extra ``protomcp run`` options, e.g. ``("--plugin", "name")``;
        ``dev=True`` runs ``protomcp dev`` (reload on save) instead of ``run``."""
        self.files = files
        self.python = python
        self.options = tuple(options)
        self.env = env
        self.timeout = timeout
        self.command = "dev" if dev else "run"
        self.progress: list[Progress] = []
        self.logs: list[dict[str, Any]] = []
        self.list_changed = 0
        self.stderr: list[str] = []
        self.server_info: dict[str, Any] = {}
        self.instructions: str | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._readers: list[asyncio.Task[None]] = []
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._changed = asyncio.Condition()

    # -- lifecycle -------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        argv = [self.python, "-m", "protomcp_host", self.command, *self.options, *map(str, self.files)]
        self._process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
            start_new_session=True,  # its own process group: cleanup reaches the tool processes too
            limit=1 << 26,  # one JSON-RPC message per line, and results can be large
        )
        self._readers = [
            asyncio.create_task(self._read_messages()),
            asyncio.create_task(self._read_stderr()),
        ]
        try:
            result = await self.request(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "protomcp_sdk.testing", "version": "1"},
                },
            )
            self.server_info = result.get("serverInfo", {})
            self.instructions = result.get("instructions")
            self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await self.request("tools/list")  # answered once the tool files have loaded (or failed to)
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close stdin (the host then stops its tool processes) and wait; kill what is left."""
        process = self._process
        if process is None:
            return
        self._process = None
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)  # anything a tool left behind
            for reader in self._readers:
                reader.cancel()
            await asyncio.gather(*self._readers, return_exceptions=True)
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(ClientError("the client was closed"))

    # -- requests --------------------------------------------------------------------
    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one JSON-RPC request and return its result; raises ClientError on an error."""
        request_id = next(self._ids)
        future = self._waiting[request_id] = asyncio.get_running_loop().create_future()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        try:
            reply = await asyncio.wait_for(future, self.timeout)
        except TimeoutError:
            late = f"no answer to {method} within {self.timeout:g}s{self._stderr_tail()}"
            raise ClientError(late) from None
        finally:
            self._waiting.pop(request_id, None)
        if "error" in reply:
            error = reply["error"]
            raise ClientError(f"{method} failed: {error.get('message')} (code {error.get('code')})")
        return reply["result"]

    async def call(self, name: str, /, **arguments: Any) -> CallResult:
        """Call a tool with keyword arguments; progress notifications are requested and captured."""
        return await self.call_tool(name, arguments)

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> CallResult:
        """Call a tool with an arguments dict (for argument names that are not identifiers)."""
        token = f"call-{next(self._ids)}"
        params = {"name": name, "arguments": arguments or {}, "_meta": {"progressToken": token}}
        return CallResult.from_mcp(await self.request("tools/call", params))

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool (all pages), as MCP Tool objects."""
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            page = await self.request("tools/list", {"cursor": cursor} if cursor else {})
            tools.extend(page["tools"])
            cursor = page.get("nextCursor")
            if not cursor:
                return tools

    async def _all_pages(self, method: str, key: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            page = await self.request(method, {"cursor": cursor} if cursor else {})
            items.extend(page[key])
            cursor = page.get("nextCursor")
            if not cursor:
                return items

    async def list_resources(self) -> list[dict[str, Any]]:
        """Every resource (all pages), as MCP Resource objects."""
        return await self._all_pages("resources/list", "resources")

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        return await self._all_pages("resources/templates/list", "resourceTemplates")

    async def read_resource(self, uri: str) -> list[dict[str, Any]]:
        """The contents of a resource (MCP objects with ``text`` or base64 ``blob``)."""
        return (await self.request("resources/read", {"uri": uri}))["contents"]

    async def list_prompts(self) -> list[dict[str, Any]]:
        return await self._all_pages("prompts/list", "prompts")

    async def get_prompt(self, name: str, /, **arguments: str) -> list[dict[str, Any]]:
        """A prompt's messages (MCP PromptMessage objects)."""
        return (await self.request("prompts/get", {"name": name, "arguments": arguments}))["messages"]

    async def complete(
        self, *, argument: str, value: str, prompt: str | None = None, resource: str | None = None
    ) -> list[str]:
        """Completion values for an argument of a prompt or a resource template."""
        ref = {"type": "ref/prompt", "name": prompt} if prompt else {"type": "ref/resource", "uri": resource}
        params = {"ref": ref, "argument": {"name": argument, "value": value}}
        return (await self.request("completion/complete", params))["completion"]["values"]

    async def wait_for_list_changed(self, count: int = 1) -> None:
        """Wait until at least ``count`` list_changed notifications have arrived."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: self.list_changed >= count), self.timeout)

    # -- plumbing --------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        if self._process is None or self._process.stdin is None:
            raise ClientError("the client is not connected (use `async with Client(...)`)")
        self._process.stdin.write(orjson.dumps(message) + b"\n")

    async def _read_messages(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        stdout = self._process.stdout
        while line := await stdout.readline():
            message = orjson.loads(line)
            future = self._waiting.get(message.get("id")) if "method" not in message else None
            if future is not None and not future.done():
                future.set_result(message)
            elif "method" in message:
                await self._notification(message["method"], message.get("params") or {})
        gone = ClientError(f"the host closed its output{self._stderr_tail()}")
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(gone)

    async def _notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/progress":
            self.progress.append(Progress(params["progress"], params.get("total"), params.get("message")))
        elif method == "notifications/message":
            self.logs.append(params)
        elif method == "notifications/tools/list_changed":
            async with self._changed:
                self.list_changed += 1
                self._changed.notify_all()

    async def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        while line := await self._process.stderr.readline():
            self.stderr.append(line.decode(errors="replace").rstrip("\n"))

    def _stderr_tail(self) -> str:
        return ("; host stderr:\n" + "\n".join(self.stderr[-20:])) if self.stderr else ""


def load_tool_module(path: str | os.PathLike[str]) -> types.ModuleType:
    """Import a tool file as a fresh module, to call its functions directly in unit tests.

    Each call gives a new module (fresh module state); the tools it defines are not kept in
    this process's tool registry, so a file can be loaded by many tests.
    """
    file = Path(path).resolve()
    name = f"_protomcp_test_{file.stem}_{next(_modules)}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {file} as a module")
    module = importlib.util.module_from_spec(spec)
    kept = ("tools", "resources", "templates", "prompts", "completions", "middleware", "roots_hooks")
    before = {field: copy.copy(getattr(REGISTRY, field)) for field in kept}
    sys.modules[name] = module  # dataclasses and pydantic look their module up while the file runs
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    finally:  # what the file registered (tools, resources, middleware...) is not kept
        for field, value in before.items():
            current = getattr(REGISTRY, field)
            current.clear()  # in place: others may hold these dicts and lists
            current.update(value) if isinstance(current, dict) else current.extend(value)
    return module


_modules = itertools.count(1)


class RecordingContext(Context):
    """A Context for calling tool functions directly: it records instead of sending.

    ``progress`` holds ``(progress, total, message)`` tuples, ``logs`` holds ``(level, data)``
    pairs; ``cancel()`` makes ``ctx.cancelled`` true, as a client's cancellation would.
    """

    def __init__(self, tool_name: str = "") -> None:
        super().__init__("test", "test", self._record, tool_name)
        self.progress: list[tuple[float, float | None, str | None]] = []
        self.logs: list[tuple[str, Any]] = []
        self.sent: list[pb.Envelope] = []  # every message, including kinds recorded nowhere else

    def cancel(self) -> None:
        self._cancel()

    def _record(self, envelope: pb.Envelope) -> None:
        self.sent.append(envelope)
        kind = envelope.WhichOneof("msg")
        if kind == "progress":
            note = envelope.progress
            total = note.total_value if (note.total_value or note.total) else None  # 0 means unset
            self.progress.append((note.progress_value, total, note.message or None))
        elif kind == "log":
            self.logs.append((envelope.log.level, orjson.loads(envelope.log.data_json)))
