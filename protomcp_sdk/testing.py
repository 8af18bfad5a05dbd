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

The client answers the tool's requests to it when given the means, and declares the
matching capabilities: ``Client("tools.py", sampling=fn, elicitation=fn, roots=[...])``.

Unit tests can call a tool function directly with a :class:`RecordingContext`, which keeps
what the tool reported instead of sending it, and answers tool-list control and client
requests itself (with the same ``sampling=``, ``elicitation=``, ``roots=``)::

    tools = load_tool_module("tools.py")
    ctx = RecordingContext()
    assert await tools.count(3, ctx) == "done"
    assert ctx.progress[-1] == (3, 3, "step 3")

Canned answers, shared by both:

- ``sampling``: a str (the model's text answer to every request), or a function (sync or
  async) given the request's MCP params dict, returning a str or a whole
  ``CreateMessageResult`` dict.
- ``elicitation``: a dict (the accepted form content), ``"decline"`` or ``"cancel"``, or a
  function given the params returning one of those (or a whole result dict with ``action``).
- ``roots``: a list of URIs or ``{"uri": ..., "name": ...}`` dicts.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import importlib.util
import inspect
import itertools
import os
import signal
import sys
import types
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self, TypeVar

import orjson

from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.runtime import client
from protomcp_sdk.runtime.context import _UNSET, Answer, Context
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire.jsontypes import JSON, JSONObject
from protomcp_sdk.wire.toollist import ToolListChange

T = TypeVar("T")

__all__ = ["CallResult", "Client", "ClientError", "RecordingContext", "load_tool_module"]

Sampling = str | Callable[[JSONObject], object]
Elicitation = JSONObject | str | Callable[[JSONObject], object]
Roots = Iterable[str | JSONObject]

PROTOCOL_VERSION = "2025-11-25"


class ClientError(Exception):
    """The host answered with a JSON-RPC error, or went away."""


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


# -- canned answers to a tool's requests for the client --------------------------------------
async def _answer(source: object, params: JSONObject) -> object:
    value = source(params) if callable(source) else source
    return await value if inspect.isawaitable(value) else value


async def sampling_result(sampling: Sampling, params: JSONObject) -> JSONObject:
    """The CreateMessageResult for one sampling request (see the module docstring)."""
    value = await _answer(sampling, params)
    if isinstance(value, str):
        content = {"type": "text", "text": value}
        return {"role": "assistant", "content": content, "model": "protomcp-testing", "stopReason": "endTurn"}
    if isinstance(value, dict):
        return value
    raise TypeError(f"sampling= must give a str or a CreateMessageResult dict, not {value!r}")


async def elicitation_result(elicitation: Elicitation, params: JSONObject) -> JSONObject:
    """The ElicitResult for one elicitation request (see the module docstring)."""
    value = await _answer(elicitation, params)
    if value in ("decline", "cancel"):
        return {"action": value}
    if isinstance(value, dict):
        if value.get("action") in ("accept", "decline", "cancel"):
            return value
        return {"action": "accept", "content": value}
    raise TypeError(f'elicitation= must give a dict, "decline" or "cancel", not {value!r}')


def roots_result(roots: Roots) -> list[JSONObject]:
    return [{"uri": root} if isinstance(root, str) else dict(root) for root in roots]


def client_capabilities(
    sampling: Sampling | None, elicitation: Elicitation | None, roots: Roots | None
) -> JSONObject:
    """What a client with these canned answers declares (MCP ClientCapabilities)."""
    capabilities: JSONObject = {}
    if sampling is not None:
        capabilities["sampling"] = {}
    if elicitation is not None:
        capabilities["elicitation"] = {"form": {}, "url": {}}
    if roots is not None:
        capabilities["roots"] = {"listChanged": True}
    return capabilities


class Client:
    """An MCP client connected to ``protomcp run FILES`` (use with ``async with``).

    Notifications are captured as they arrive: ``progress`` (every progress notification, in
    order), ``logs`` (the ``params`` of every log message), ``list_changed`` (how many
    ``notifications/tools/list_changed`` arrived) and ``stderr`` (the host's stderr lines).
    ``server_info`` and ``instructions`` are what ``initialize`` reported.

    ``sampling``, ``elicitation`` and ``roots`` answer the tools' requests to the client (see
    the module docstring); each one given is declared as a client capability. ``requests``
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
    ) -> None:
        """``options`` are extra ``protomcp run`` options, e.g. ``("--plugin", "name")``;
        ``dev=True`` runs ``protomcp dev`` (reload on save) instead of ``run``."""
        self.sampling = sampling
        self.elicitation = elicitation
        self.roots = None if roots is None else list(roots)
        self.requests: list[tuple[str, JSONObject]] = []
        self.task_status: list[JSONObject] = []
        self._answering: set[asyncio.Task[None]] = set()
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
        self._process: asyncio.subprocess.Process | None = None
        self._readers: list[asyncio.Task[None]] = []
        self._waiting: dict[int, asyncio.Future[JSONObject]] = {}
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
                    "capabilities": client_capabilities(self.sampling, self.elicitation, self.roots),
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
            # What the host wrote before it exited is still in the pipes: read it to the end (its
            # last stderr lines too), within a bound, before the readers stop.
            await asyncio.wait(self._readers, timeout=2)
            for task in [*self._readers, *self._answering]:
                task.cancel()
            await asyncio.gather(*self._readers, *self._answering, return_exceptions=True)
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(ClientError("the client was closed"))

    # -- requests --------------------------------------------------------------------
    async def request(self, method: str, params: JSONObject | None = None) -> JSONObject:
        """Send one JSON-RPC request and return its result; raises ClientError on an error."""
        request_id = next(self._ids)
        future = self._waiting[request_id] = asyncio.get_running_loop().create_future()
        message: JSONObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
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
        result: JSONObject = reply["result"]
        return result

    async def call(self, name: str, /, **arguments: JSON) -> CallResult:
        """Call a tool with keyword arguments; progress notifications are requested and captured."""
        return await self.call_tool(name, arguments)

    async def call_tool(self, name: str, arguments: JSONObject | None = None) -> CallResult:
        """Call a tool with an arguments dict (for argument names that are not identifiers)."""
        token = f"call-{next(self._ids)}"
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

    async def _all_pages(self, method: str, key: str) -> list[JSONObject]:
        items: list[JSONObject] = []
        cursor: str | None = None
        while True:
            page = await self.request(method, {"cursor": cursor} if cursor else {})
            items.extend(page[key])
            cursor = page.get("nextCursor")
            if not cursor:
                return items

    async def list_resources(self) -> list[JSONObject]:
        """Every resource (all pages), as MCP Resource objects."""
        return await self._all_pages("resources/list", "resources")

    async def list_resource_templates(self) -> list[JSONObject]:
        return await self._all_pages("resources/templates/list", "resourceTemplates")

    async def read_resource(self, uri: str) -> list[JSONObject]:
        """The contents of a resource (MCP objects with ``text`` or base64 ``blob``)."""
        contents: list[JSONObject] = (await self.request("resources/read", {"uri": uri}))["contents"]
        return contents

    async def list_prompts(self) -> list[JSONObject]:
        return await self._all_pages("prompts/list", "prompts")

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
        return await self._all_pages("tasks/list", "tasks")

    async def cancel_task(self, task_id: str) -> JSONObject:
        return await self.request("tasks/cancel", {"taskId": task_id})

    # -- roots -----------------------------------------------------------------------
    def set_roots(self, roots: Roots) -> None:
        """Change the roots this client answers with, and tell the host they changed."""
        self.roots = list(roots)
        self._send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})

    async def wait_for_list_changed(self, count: int = 1) -> None:
        """Wait until at least ``count`` list_changed notifications have arrived."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: self.list_changed >= count), self.timeout)

    # -- plumbing --------------------------------------------------------------------
    def _send(self, message: JSONObject) -> None:
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
            elif "method" in message and "id" in message:  # the host asks the client
                task = asyncio.create_task(self._answer_request(message))
                self._answering.add(task)
                task.add_done_callback(self._answering.discard)
            elif "method" in message:
                await self._notification(message["method"], message.get("params") or {})
        gone = ClientError(f"the host closed its output{self._stderr_tail()}")
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(gone)

    async def _answer_request(self, message: JSONObject) -> None:
        method, params = message["method"], message.get("params") or {}
        self.requests.append((method, params))
        reply: JSONObject = {"jsonrpc": "2.0", "id": message["id"]}
        try:
            if method == "ping":
                reply["result"] = {}
            elif method == "sampling/createMessage" and self.sampling is not None:
                reply["result"] = await sampling_result(self.sampling, params)
            elif method == "elicitation/create" and self.elicitation is not None:
                reply["result"] = await elicitation_result(self.elicitation, params)
            elif method == "roots/list" and self.roots is not None:
                reply["result"] = {"roots": roots_result(self.roots)}
            else:
                reply["error"] = {"code": -32601, "message": f"Method not found: {method}"}
        except Exception as exc:  # the tool sees the client's error, as from a real client
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32603, "message": f"{exc}"}}
        with contextlib.suppress(ClientError, OSError):
            self._send(reply)

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
    lifespan = REGISTRY.lifespan
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
        REGISTRY.lifespan = lifespan
    return module


_modules = itertools.count(1)


class RecordingContext(Context):
    """A Context for calling tool functions directly: it records instead of sending.

    ``progress`` holds ``(progress, total, message)`` tuples, ``logs`` holds ``(level, data)``
    pairs; ``cancel()`` makes ``ctx.cancelled`` true, as a client's cancellation would.

    Tool-list control works on a pretend session: ``tools`` names the tools active at the
    start (``active`` holds the current set, ``tool_changes`` every ToolListChange asked for).
    ``sampling``, ``elicitation`` and ``roots`` answer ``ctx.sample``/``elicit``/``list_roots``
    (see the module docstring; a request without one raises, as for a client that did not
    declare the capability); ``requests`` keeps ``(kind, params)`` of each. ``state`` is what
    ``ctx.state`` gives (a ``@lifespan``'s value); ``claims`` are the caller's verified token
    claims ``ctx.auth`` and ``ctx.principal`` give, as over HTTP with OAuth
    (``claims={"sub": "ada", "scope": "files:write"}``; None, the default: no principal).
    """

    def __init__(
        self,
        tool_name: str = "",
        *,
        tools: Iterable[str] = (),
        hidden: Iterable[str] = (),
        sampling: Sampling | None = None,
        elicitation: Elicitation | None = None,
        roots: Roots | None = None,
        state: Any = _UNSET,
        claims: JSONObject | None = None,
    ) -> None:
        self.sent: list[pb.Envelope] = []  # every message, including kinds recorded nowhere else
        capabilities = client_capabilities(sampling, elicitation, roots)
        super().__init__(
            "test",
            "test",
            self._record,
            tool_name,
            None,  # no host to ask: _control and _ask_client below answer instead
            auth_json=orjson.dumps(claims).decode() if claims is not None else "",
            capabilities_json=orjson.dumps(capabilities).decode(),
            state=state,
        )
        self.progress: list[tuple[float, float | None, str | None]] = []
        self.logs: list[tuple[str, JSON]] = []
        self.tool_changes: list[ToolListChange] = []
        self.requests: list[tuple[str, JSONObject]] = []
        self.sampling = sampling
        self.elicitation = elicitation
        self.roots = None if roots is None else list(roots)
        self._all = list(dict.fromkeys([*tools, *hidden]))
        self._hidden = set(hidden)
        self.active: list[str] = [name for name in self._all if name not in self._hidden]
        self._enabled: set[str] = set()
        self._disabled: set[str] = set()
        self._allow: set[str] | None = None
        self._block: set[str] = set()

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

    # -- what the host and the client would answer -------------------------------------
    # Like the real Context, each answer is awaitable for an async tool and a plain value for a
    # sync one; called directly, which one is told by the calling function (coroutine or not).
    def _control(self, envelope: pb.Envelope) -> Answer:
        self.sent.append(envelope)
        change = ToolListChange.from_envelope(envelope)
        if change is not None:
            self._apply(change)
        return _give(list(self.active))

    def _ask_client(
        self,
        envelope: pb.Envelope,
        convert: Callable[[pb.Envelope], T],
        timeout: float,
        key: str | None,
        kind: str,
    ) -> Answer:
        self.sent.append(envelope)
        client.check_capability(envelope, self.client_capabilities)  # what was not given, raises
        message = envelope.WhichOneof("msg") or ""
        params = {} if kind == "roots" else orjson.loads(getattr(envelope, message).params_json or "{}")
        self.requests.append((kind, params))
        if kind == "roots":
            roots = orjson.dumps(roots_result(self.roots or [])).decode()
            return _give(convert(pb.Envelope(list_roots_response=pb.ListRootsResponse(roots_json=roots))))

        sampling, elicitation = self.sampling, self.elicitation  # (check_capability refused a missing one)

        async def answer() -> T:
            if kind == "sample":
                assert sampling is not None
                result = await sampling_result(sampling, params)
                reply = pb.Envelope(
                    sampling_response=pb.SamplingResponse(result_json=orjson.dumps(result).decode())
                )
            else:
                assert elicitation is not None
                result = await elicitation_result(elicitation, params)
                reply = pb.Envelope(
                    elicit_response=pb.ElicitResponse(result_json=orjson.dumps(result).decode())
                )
            return convert(reply)

        if _caller_is_coroutine():
            return asyncio.ensure_future(answer())
        return _run_now(answer())

    def _apply(self, change: ToolListChange) -> None:
        """The host's rules for one session (protocol/visibility.py), on names only."""
        self.tool_changes.append(change)
        if change.allow is not None:
            self._allow, self._block = set(change.allow), set()
            self._enabled.clear()
            self._disabled.clear()
        if change.block is not None:
            self._block, self._allow = set(change.block), None
            self._enabled.clear()
            self._disabled.clear()
        for name in change.enable or ():
            if name not in self._all:
                self._all.append(name)
            self._enabled.add(name)
            self._disabled.discard(name)
        for name in change.disable or ():
            self._disabled.add(name)
            self._enabled.discard(name)

        def shown(name: str) -> bool:
            if name in self._disabled:
                return False
            if name in self._enabled:
                return True
            if self._allow is not None:
                return name in self._allow
            return name not in self._block and name not in self._hidden

        self.active = [name for name in self._all if shown(name)]


def _caller_is_coroutine() -> bool:
    """Whether the tool code that called the Context (the first frame outside the SDK) is a
    coroutine: it then awaits the answer."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_SDK_DIR):
        frame = frame.f_back
    return frame is not None and bool(frame.f_code.co_flags & inspect.CO_COROUTINE)


_SDK_DIR = str(Path(__file__).resolve().parent) + os.sep


def _give(value: object) -> Answer:
    if _caller_is_coroutine():
        future = asyncio.get_running_loop().create_future()
        future.set_result(value)
        return future
    return value


def _run_now(coro: Coroutine[object, None, T]) -> T:
    """A sync tool's answer: run the canned answer to the end here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    try:  # a loop runs (a sync tool called from an async test): the answer must not wait
        coro.send(None)
    except StopIteration as done:
        answer: T = done.value
        return answer
    coro.close()
    raise RuntimeError(
        "an async canned answer cannot serve a sync tool called from async code; use a plain function"
    )
