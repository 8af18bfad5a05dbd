"""One upstream MCP server served as a source of tools: `Upstream`.

To the calls layer it is what a tool file's Supervisor is (`ToolSource`): `start(envelope, leg)`
runs a tools/call, resources/read, prompts/get or completion/complete on the upstream with the
official `mcp` client and hands the answer to the leg as the Envelope a tool process would
have sent. What it offers (tools namespaced `NAME_`, resources, prompts) reaches the host as a
`Loaded`, again on every list change. A stdio upstream that dies is started again, an HTTP one
reconnected, with the supervisor's backoff; calls made meanwhile wait for it (bounded), then
fail with a message that says why. A lost connection is closed only once the requests sent on
it have their own outcome (bounded): a request the upstream's new process refused for its
unknown session is sent again, one in flight on the process that died fails.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import sys
import time
from collections.abc import AsyncIterator, Collection
from contextlib import AsyncExitStack, asynccontextmanager
from contextvars import ContextVar
from typing import Any

import anyio
import anyio.abc
import orjson

from protomcp_host.processes.events import Leg, Loaded, ProcessEvents
from protomcp_host.processes.launch import child_environment
from protomcp_host.processes.supervisor import Backoff
from protomcp_host.upstream.answered import watch_answers
from protomcp_host.upstream.spec import EXTRA_HINT, UpstreamSpec
from protomcp_sdk.wire import envelope_pb2 as pb

PING_INTERVAL = 1.0  # seconds between liveness pings of a connected upstream
PING_TIMEOUT = 10.0  # a ping unanswered this long: the upstream is gone
SETTLE_WAIT = 2.0  # how long a lost connection stays open for its requests' own outcomes
# A dropped request the upstream leaves unanswered this long (stdio) gets the upstream restarted
# once it is idle: until it is answered or then, every question that may be its is declined.
CANCEL_GRACE = 60.0
CONNECTION_CLOSED = -32000  # mcp's code for a connection that closed under a request
INVALID_REQUEST = -32600


class _Request:
    """A request of the calls layer the upstream works on."""

    __slots__ = ("answered", "asked", "carried", "kind", "leg", "on", "scope")

    def __init__(self, leg: Leg, kind: str, carried: dict[str, Any]) -> None:
        self.leg, self.kind = leg, kind
        self.scope = anyio.CancelScope()
        self.on: Any = None  # the session it was sent on (None: waiting for a connection)
        self.carried = carried  # 2026-07-28: answers a retry run again here brings, by key
        self.asked = 0  # the upstream's requests for the client so far
        self.answered = False  # by the upstream, even after it was dropped (stdio: see answered.py)

    @property
    def sent(self) -> bool:
        return self.on is not None


def question_key(method: str, params: dict[str, Any], order: int) -> str:
    """The name of an upstream's request for the client in a 2026-07-28 input round: the same
    on every host that runs the call again, so the answer a retry carries is found there. It
    binds the question's order within the request (a second identical question is asked
    again) and its content (an answer is never given to another question)."""
    asked = {k: v for k, v in params.items() if k not in ("_meta", "elicitationId")}  # per-run ids
    content = hashlib.sha256(orjson.dumps(asked, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
    return f"{method}-{order}-{content}"


def _carried(envelope: pb.Envelope, kind: str) -> dict[str, Any]:
    """The answers a retried request brings (a re-run: the call was suspended elsewhere)."""
    request = getattr(envelope, kind) if kind in _ANSWERED else None
    answers = orjson.loads(request.input_answers_json) if request and request.input_answers_json else {}
    return answers if isinstance(answers, dict) else {}


_ANSWERED = ("call_tool", "read_resource_request", "get_prompt_request")  # carry input_answers_json


# The request whose task sends to the upstream. The mcp client runs what arrives on a request's
# own stream (Streamable HTTP: the POST's SSE response) in the context of the task that sent
# that request, so an upstream's elicitation/sampling sees its owner here; what arrives on a
# shared stream (stdio, the standalone GET stream) sees None.
_OWNER: ContextVar[_Request | None] = ContextVar("protomcp_upstream_request", default=None)


class UpstreamError(ValueError):
    """An upstream cannot be served (at start-up: the host does not start)."""


def import_mcp() -> Any:
    """The `mcp` client library, or an UpstreamError saying how to install it."""
    try:
        import mcp
        import mcp.client.session
    except ImportError as exc:
        raise UpstreamError(
            f"--upstream needs the official MCP client library ({exc}): {EXTRA_HINT}"
        ) from None
    return mcp


class Upstream:
    """Keeps one upstream connected and forwards requests of the calls layer to it."""

    def __init__(
        self,
        spec: UpstreamSpec,
        events: ProcessEvents,
        *,
        connect_timeout: float = 30.0,
        restart_wait: float = 10.0,
        ping_interval: float = PING_INTERVAL,
        settle_wait: float = SETTLE_WAIT,
        cancel_grace: float = CANCEL_GRACE,
        version: str = "",
        hidden_env: Collection[str] = (),
    ) -> None:
        self.spec = spec
        self.hidden_env = hidden_env  # variables the host reads secrets from: kept from a stdio server
        self.label = spec.label
        self.events = events
        self.connect_timeout = connect_timeout
        self.restart_wait = restart_wait  # how long a call waits for a reconnect
        self.ping_interval = ping_interval
        self.settle_wait = settle_wait
        self.cancel_grace = cancel_grace
        self.version = version  # protomcp's, for the upstream's clientInfo
        self._stopped = asyncio.Event()
        self.backoff = Backoff()
        self.connects = 0  # successful connections, for diagnostics and tests
        self.session: Any = None  # the mcp ClientSession while connected
        self.server_name = ""
        self._ready = asyncio.Event()
        self._lost = asyncio.Event()
        self._relist = False
        self._running: dict[str, _Request] = {}  # by request id
        # Requests dropped by their owner while the upstream had them, as (the session they were
        # sent on, when, the request): the upstream may finish what it started (the spec lets
        # it), so over stdio a question it asks may be theirs (see _owner_of) until it answers
        # them or that connection ends.
        self._dropped: list[tuple[Any, float, _Request]] = []
        self._recycling = False  # the connection ends to clear them (see _recycle_due)
        self._moved = asyncio.Event()  # a request left its session (answered, failed, to be resent)
        self._ids = itertools.count(1)
        self._tools: dict[str, str] = {}  # served name -> the upstream's name
        self._prompts: dict[str, str] = {}
        self._stopping = False
        self._tg: anyio.abc.TaskGroup | None = None

    def __str__(self) -> str:
        return self.label

    # -- lifecycle -----------------------------------------------------------------
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Connect (errors of the first connection propagate), then keep the upstream served."""
        import_mcp()
        failure: UpstreamError | None = None
        async with anyio.create_task_group() as tg:
            self._tg = tg
            while not self._stopping:
                began = time.monotonic()
                try:
                    reason = await self._connection(task_status if not self.connects else None)
                except Exception as exc:
                    reason = _describe(exc)
                    if not self.connects:  # raised below, outside the task group, so it is not wrapped
                        if isinstance(
                            _first(exc), OfferRefused
                        ):  # it connected; what it offers cannot be served
                            failure = UpstreamError(
                                f"{self.label}: connected to {self._target()}, but {reason}"
                            )
                        else:
                            failure = UpstreamError(
                                f"{self.label}: cannot connect to {self._target()}: {reason}"
                            )
                        break
                self._fail_running(f"{self.label} went away ({reason})")
                if self._stopping:
                    break
                if self._recycling:  # deliberate, not a failure: no backoff, and the line says why
                    self._recycling = False
                    self.events.problem(f"{self.label}: restarting it: {reason}")
                    continue
                delay = self.backoff.next_delay(time.monotonic() - began)
                what = "restarting" if not self.spec.is_http else "reconnecting"
                self.events.problem(f"{self.label} went away ({reason}); {what} in {delay:g}s")
                with anyio.move_on_after(delay):
                    await self._stopped.wait()
            tg.cancel_scope.cancel()
        if failure is not None:
            raise failure

    async def stop(self, grace: float) -> None:
        """Let running requests finish (up to `grace` seconds), then close the connection."""
        with anyio.move_on_after(grace):
            while self._running:
                await anyio.sleep(0.02)
        self._stopping = True
        self._stopped.set()
        self._lost.set()

    def _target(self) -> str:
        return self.spec.url or " ".join(self.spec.command)

    async def _connection(self, task_status: anyio.abc.TaskStatus[None] | None) -> str:
        """One connection, from connect to loss; returns why it ended."""
        async with self._client() as session:
            with anyio.fail_after(self.connect_timeout):
                init = await session.initialize()
                offer = await self._offer(session)
            info = getattr(init, "server_info", None)
            self.server_name = getattr(info, "name", "") or ""
            try:
                self.events.loaded(self.label, offer)
            except ValueError as exc:  # a name clash
                raise OfferRefused(str(exc)) from None
            self.session = session
            self._lost = asyncio.Event()
            self._ready.set()
            self.connects += 1
            if task_status is not None:
                task_status.started()
            try:
                return await self._watch(session)
            finally:
                self._lose(session)
                try:
                    await self._settle(session)
                finally:
                    self._fail_running(f"{self.label} went away", session)

    async def _settle(self, session: Any) -> None:
        """Keep the lost connection open (bounded) until each request sent on it has its own
        outcome. Which one it gets says what became of it: a 404 for the session (the
        upstream's new process never saw the request; it is sent again on the next
        connection), or the connection closed under it (it ran on the process that died)."""
        if self._stopping:
            return
        with anyio.move_on_after(self.settle_wait):
            while any(request.on is session for request in self._running.values()):
                self._moved = asyncio.Event()
                await self._moved.wait()

    @asynccontextmanager
    async def _client(self) -> AsyncIterator[Any]:
        from mcp import ClientSession, types

        async with AsyncExitStack() as stack:
            if self.spec.is_http:
                import os

                from mcp.client.streamable_http import streamable_http_client
                from mcp.shared._httpx_utils import create_mcp_http_client

                headers = {}
                if self.spec.token_env:
                    token = os.environ.get(self.spec.token_env, "")
                    if not token:
                        raise UpstreamError(f"the environment variable {self.spec.token_env} is not set")
                    headers["Authorization"] = f"Bearer {token}"
                client = await stack.enter_async_context(create_mcp_http_client(headers=headers))
                read, write = await stack.enter_async_context(
                    streamable_http_client(self.spec.url, http_client=client)
                )
            else:
                from mcp import StdioServerParameters
                from mcp.client.stdio import stdio_client

                command, *args = self.spec.command
                env = child_environment(self.hidden_env)
                params = StdioServerParameters(command=command, args=args, env=env)
                read, write = await stack.enter_async_context(stdio_client(params, errlog=sys.stderr))
                read, write = watch_answers(read, write, _OWNER)
            session = await stack.enter_async_context(
                ClientSession(
                    read,
                    write,
                    sampling_callback=self._sampling,
                    elicitation_callback=self._elicitation,
                    logging_callback=self._logging,
                    message_handler=self._message,
                    client_info=types.Implementation(name="protomcp", version=self.version or "0"),
                )
            )
            yield session

    async def _watch(self, session: Any) -> str:
        """Until the connection is lost: pings, and lists read again when they change."""
        while not self._stopping:
            with anyio.move_on_after(self.ping_interval):
                await self._lost.wait()
            if self._stopping:
                return "the host is stopping"
            if self._lost.is_set():
                return "its connection closed"
            if self._recycle_due():
                # In this same step, so no call is sent on the connection that ends: calls made
                # from now on wait for the next one.
                count = len(self._dropped)
                self._recycling = True
                self._lose(session)
                return (
                    f"it is idle and {count} cancelled request{'s' if count > 1 else ''} it had "
                    f"{'are' if count > 1 else 'is'} still unanswered after {self.cancel_grace:g}s "
                    "(until it restarts, every question it asks is declined)"
                )
            if self._relist:
                self._relist = False
                try:
                    with anyio.fail_after(PING_TIMEOUT):
                        offer = await self._offer(session)
                    self.events.loaded(self.label, offer)
                except Exception as exc:
                    self.events.problem(f"{self.label}: its new lists were not taken: {_describe(exc)}")
                continue
            try:
                with anyio.fail_after(PING_TIMEOUT):
                    await session.send_ping()
            except TimeoutError:
                return f"no answer to a ping for {PING_TIMEOUT:g}s"
            except Exception as exc:
                return _describe(exc)
        return "the host is stopping"

    async def _message(self, message: Any) -> None:
        """Notifications from the upstream: list changes, resource updates."""
        from mcp import types

        if isinstance(message, Exception):
            return
        root = getattr(message, "root", message)
        if isinstance(
            root,
            types.ToolListChangedNotification
            | types.ResourceListChangedNotification
            | types.PromptListChangedNotification,
        ):
            self._relist = True
        elif isinstance(root, types.ResourceUpdatedNotification):
            uri = str(root.params.uri)
            self.events.notice(
                self.label, pb.Envelope(resource_changed=pb.ResourceChangedNotification(uri=uri))
            )

    async def _logging(self, params: Any) -> None:
        self.events.log(self.label, params.level, params.logger or self.label, params.data)

    # -- what it offers ------------------------------------------------------------
    async def _offer(self, session: Any) -> Loaded:
        caps = session.server_capabilities
        namespace = self.spec.namespace
        tools: list[pb.ToolDefinition] = []
        names: dict[str, str] = {}
        if caps is None or caps.tools is not None:
            for tool in await _all(session.list_tools, "tools"):
                definition = tool_definition(_dump(tool), namespace, self.spec.name)
                names[definition.name] = tool.name
                tools.append(definition)
        resources = pb.ResourceListResponse()
        templates = pb.ResourceTemplateListResponse()
        if caps is not None and caps.resources is not None:
            for resource in await _all(session.list_resources, "resources"):
                d = _dump(resource)
                resources.resources.append(
                    pb.ResourceDefinition(
                        uri=d["uri"],
                        name=d.get("name", ""),
                        title=d.get("title", ""),
                        description=d.get("description", ""),
                        mime_type=d.get("mimeType", ""),
                        size=d.get("size") or 0,
                        annotations_json=_json(d.get("annotations")),
                    )
                )
            for template in await _all(session.list_resource_templates, "resource_templates"):
                d = _dump(template)
                templates.templates.append(
                    pb.ResourceTemplateDefinition(
                        uri_template=d["uriTemplate"],
                        name=d.get("name", ""),
                        title=d.get("title", ""),
                        description=d.get("description", ""),
                        mime_type=d.get("mimeType", ""),
                        annotations_json=_json(d.get("annotations")),
                    )
                )
        prompts = pb.PromptListResponse()
        prompt_names: dict[str, str] = {}
        if caps is not None and caps.prompts is not None:
            for prompt in await _all(session.list_prompts, "prompts"):
                d = _dump(prompt)
                served = namespace + d["name"]
                prompt_names[served] = d["name"]
                prompts.prompts.append(
                    pb.PromptDefinition(
                        name=served,
                        title=d.get("title", ""),
                        description=d.get("description", ""),
                        arguments=[
                            pb.PromptArgument(
                                name=a["name"],
                                description=a.get("description", ""),
                                required=bool(a.get("required")),
                            )
                            for a in d.get("arguments") or []
                        ],
                    )
                )
        self._tools, self._prompts = names, prompt_names
        completions = caps is not None and caps.completions is not None
        return Loaded(tools, [], resources, templates, prompts, completions)

    # -- ToolSource: what the calls layer asks of it -----------------------------------------
    def start(self, envelope: pb.Envelope, leg: Leg) -> None:
        if self._tg is None or self._stopping:
            leg.failed(f"{self.label} is not running")
            return
        request_id = f"u{next(self._ids)}"
        kind = envelope.WhichOneof("msg") or ""
        request = self._running[request_id] = _Request(leg, kind, _carried(envelope, kind))
        leg.sent(self, request_id)
        self._tg.start_soon(self._serve, envelope, request, request_id)

    def notify(self, envelope: pb.Envelope) -> None:
        """Notifications for tool processes (roots changed) are not forwarded to upstreams."""

    def ready_channel(self) -> None:
        """An upstream has no Envelope channel: it registers no middleware of its own."""
        return None

    async def channel(self) -> None:
        return None

    def drop(self, request_id: str, cancel: bool = True) -> None:
        """The request's owner is done with it: stop it (the mcp client tells the upstream).
        Over stdio, one the upstream had stays a possible owner of the upstream's questions
        until the upstream answers it or its connection ends (the upstream restarts, or is
        restarted: `_recycle_due`)."""
        request = self._running.pop(request_id, None)
        if request is None:
            return
        if request.on is not None and not self.spec.is_http:  # over HTTP its stream says whose
            self._still_dropped()  # those of ended connections leave first: the list stays short
            self._dropped.append((request.on, time.monotonic(), request))
        request.scope.cancel()

    def running(self) -> list[str]:
        return [str(request.leg) for request in self._running.values()]

    async def _serve(self, envelope: pb.Envelope, request: _Request, request_id: str) -> None:
        leg = request.leg
        _OWNER.set(request)  # this task's context: see _owner_of
        try:
            reply, failure = await self._outcome(envelope, request)
        finally:
            request.on = None
            self._moved.set()
        if self._running.pop(request_id, None) is None:
            return  # dropped (cancelled, timed out) or failed already: nobody waits for it
        if reply is not None:
            leg.answered(reply, None, True)
        else:
            leg.failed(failure or f"{self.label}: no answer")

    async def _outcome(self, envelope: pb.Envelope, request: _Request) -> tuple[pb.Envelope | None, str]:
        """The request sent (once more on the next connection after a 404 for the session):
        its answer, or why there is none."""
        from mcp.shared.exceptions import MCPError

        kind = request.kind
        reply: pb.Envelope | None = None
        failure = ""
        session = None
        with request.scope:
            try:
                try:
                    session = await self._connected()
                    reply, failure = await self._send(session, envelope, request)
                except MCPError as exc:
                    if not _session_gone(exc):
                        raise
                    # The upstream restarted and forgot the session: this request was never
                    # served. Open a new session (the next connection) and send it once more.
                    request.on = None  # it waits for the next connection, not failed with this one
                    self._moved.set()
                    self._lose(session)
                    session = await self._connected()
                    reply, failure = await self._send(session, envelope, request)
            except MCPError as exc:
                reply = _error_reply(kind, exc.error.code, exc.error.message)
                if exc.error.code == CONNECTION_CLOSED or _session_gone(exc):
                    self._lose(session)  # calls from now on wait for the next connection
                    failure = f"{self.label} went away during the request ({exc.error.message})"
                elif reply is None:
                    failure = f"{self.label}: {exc.error.message}"
            except UpstreamError as exc:
                failure = str(exc)
            except Exception as exc:
                failure = f"{self.label}: {_describe(exc)}"
        return reply, failure

    async def _send(
        self, session: Any, envelope: pb.Envelope, request: _Request
    ) -> tuple[pb.Envelope | None, str]:
        """The request on `session`: the answer, or why there is none."""
        kind, leg = request.kind, request.leg
        request.on = session
        if kind == "call_tool":
            return await self._call_tool(session, envelope.call_tool, leg), ""
        if kind == "read_resource_request":
            return await self._read(session, envelope.read_resource_request.uri), ""
        if kind == "get_prompt_request":
            return await self._prompt(session, envelope.get_prompt_request), ""
        if kind == "completion_request":
            return await self._complete(session, envelope.completion_request), ""
        return None, f"{kind} is not forwarded to an upstream"

    async def _connected(self) -> Any:
        if self.session is None:
            with anyio.move_on_after(self.restart_wait):
                await self._ready.wait()
        if self.session is None:
            raise UpstreamError(f"{self.label} is not connected (it is being restarted); try again shortly")
        return self.session

    def _lose(self, session: Any) -> None:
        if session is not None and session is self.session:
            self.session = None
            self._ready.clear()
            self._lost.set()

    def _fail_running(self, reason: str, session: Any = None) -> None:
        """Fail the requests sent on the lost connection `session` (None: on any), not those
        waiting for the next one."""
        for request_id, request in list(self._running.items()):
            if request.sent and (session is None or request.on is session):
                del self._running[request_id]
                request.scope.cancel()
                request.leg.failed(reason)

    async def _call_tool(self, session: Any, request: pb.CallToolRequest, leg: Leg) -> pb.Envelope:
        name = self._tools.get(request.name, request.name)
        arguments = orjson.loads(request.arguments_json) if request.arguments_json else {}

        async def progress(value: float, total: float | None, message: str | None) -> None:
            note = pb.ProgressNotification(
                progress_value=value, total_value=total or 0.0, message=message or ""
            )
            leg.progress(note)

        result = await session.call_tool(name, arguments, progress_callback=progress)
        dumped = _dump(result)
        response = pb.CallToolResponse(
            is_error=bool(dumped.get("isError")), result_json=orjson.dumps(dumped.get("content", [])).decode()
        )
        if dumped.get("structuredContent") is not None:
            response.structured_content_json = orjson.dumps(dumped["structuredContent"]).decode()
        response.meta_json = _json(dumped.get("_meta"))
        return pb.Envelope(call_result=response)

    async def _read(self, session: Any, uri: str) -> pb.Envelope:
        result = _dump(await session.read_resource(uri))
        contents = orjson.dumps(result.get("contents", [])).decode()
        return pb.Envelope(read_resource_response=pb.ReadResourceResponse(contents_json=contents))

    async def _prompt(self, session: Any, request: pb.GetPromptRequest) -> pb.Envelope:
        arguments = orjson.loads(request.arguments_json) if request.arguments_json else {}
        name = self._prompts.get(request.name, request.name)
        result = _dump(await session.get_prompt(name, {k: str(v) for k, v in arguments.items()}))
        response = pb.GetPromptResponse(
            description=result.get("description") or "",
            messages_json=orjson.dumps(result["messages"]).decode(),
        )
        return pb.Envelope(get_prompt_response=response)

    async def _complete(self, session: Any, request: pb.CompletionRequest) -> pb.Envelope:
        from mcp import types

        ref: Any
        if request.ref_type == "ref/prompt":
            ref = types.PromptReference(
                type="ref/prompt", name=self._prompts.get(request.ref_name, request.ref_name)
            )
        else:
            ref = types.ResourceTemplateReference(type="ref/resource", uri=request.ref_name)
        context = orjson.loads(request.context_arguments_json) if request.context_arguments_json else None
        argument = {"name": request.argument_name, "value": request.argument_value}
        completion = (await session.complete(ref, argument, context or None)).completion
        response = pb.CompletionResponse(
            values=completion.values, total=completion.total or 0, has_more=bool(completion.has_more)
        )
        return pb.Envelope(completion_response=response)

    # -- requests of the upstream for the client (sampling, elicitation) ---------------------
    async def _sampling(self, context: Any, params: Any) -> Any:
        from mcp import types

        return await self._ask("sampling/createMessage", params, types.CreateMessageResult)

    async def _elicitation(self, context: Any, params: Any) -> Any:
        from mcp import types

        return await self._ask("elicitation/create", params, types.ElicitResult)

    async def _ask(self, method: str, params: Any, model: Any) -> Any:
        """Ask the client of the request this one belongs to; never anyone else's. Refused
        when that request cannot be told for certain (an error to the upstream), declined
        when it may be one whose owner is gone (elicitation: action "decline"; others an
        error, as they have no way to decline)."""
        from mcp import types

        owner, why, gone = self._owner_of(_OWNER.get())
        if owner is None:
            if gone and method == "elicitation/create":
                return types.ElicitResult(action="decline")
            return types.ErrorData(code=INVALID_REQUEST, message=f"{method} refused by protomcp: {why}")
        asked = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        owner.asked += 1
        key = question_key(method, asked, owner.asked)
        carried = owner.carried.pop(key, None)  # popped: each answer is used once
        if isinstance(carried, dict):
            return model.model_validate(carried)
        answer: asyncio.Future[tuple[Any, str | None]] = asyncio.get_running_loop().create_future()

        def reply(result: dict[str, Any] | None, error: str | None) -> None:
            if not answer.done():
                answer.set_result((result, error))

        owner.leg.ask_client(method, asked, None, reply, key)
        result, error = await answer
        if error is not None or result is None:
            return types.ErrorData(code=INVALID_REQUEST, message=error or "no answer")
        return model.model_validate(result)

    def _owner_of(self, related: _Request | None) -> tuple[_Request | None, str, bool]:
        """The request an upstream's request belongs to; or None, why it cannot be told, and
        whether it may belong to a request whose owner is gone.

        Over HTTP the transport says: it arrived on that request's stream (`related`), or on the
        standalone stream, which belongs to no request. Over stdio nothing says: it belongs to
        the one request of any kind (call, read, prompt, completion) the upstream has, counting
        those dropped (cancelled, timed out) that it may still be finishing: while one of them
        may be the asker, the question is nobody's to answer."""
        if related is not None:
            if related.leg.live and any(r is related for r in self._running.values()):
                return related, "", False
            return None, "the request it belongs to is over", True
        if self.spec.is_http:
            return None, "it did not come on the stream of a request of protomcp's clients", False
        running = [r for r in self._running.values() if r.sent]  # a leg gone still runs upstream
        dropped = self._still_dropped()
        if len(running) == 1 and not dropped:
            if running[0].leg.live:
                return running[0], "", False
            return None, "the request it belongs to is over", True
        if not running and not dropped:
            return None, "no request is running", False
        if not running:
            return None, "the request it belongs to was cancelled", True
        count = len(running) + dropped
        why = f"{count} requests are running and stdio does not say which one it belongs to"
        return None, why + (f" ({dropped} of them cancelled)" if dropped else ""), bool(dropped)

    def _still_dropped(self) -> int:
        """Dropped requests the upstream may still be finishing: those sent on the connection
        it has now and not answered. No time limit: a question is never handed to another
        request because the one it may belong to is slow."""
        self._dropped = [d for d in self._dropped if d[0] is self.session and not d[2].answered]
        return len(self._dropped)

    def _recycle_due(self) -> bool:
        """Whether to restart the upstream to clear its dropped requests: one has been
        unanswered for `cancel_grace` (the official SDK never answers a cancelled request, so
        it would keep every later question declined), and no request of ours is in it or
        waiting for it (nobody loses anything; the work its owner cancelled stops)."""
        if self.spec.is_http or self._running or not self._still_dropped():
            return False
        return time.monotonic() - min(since for _, since, _ in self._dropped) >= self.cancel_grace


def tool_definition(tool: dict[str, Any], namespace: str, tag: str) -> pb.ToolDefinition:
    """An upstream's MCP Tool as the Envelope definition a tool process would send. Tags (for
    --include-tag/--exclude-tag): `upstream`, the upstream's name, and any the tool declares in
    `_meta` (`tags`, or FastMCP's `_fastmcp.tags`)."""
    meta = tool.get("_meta") or {}
    tags = {"upstream", tag}
    for found in (meta.get("tags"), (meta.get("_fastmcp") or {}).get("tags")):
        if isinstance(found, list):
            tags.update(str(t) for t in found)
    definition = pb.ToolDefinition(
        name=namespace + tool["name"],
        description=tool.get("description") or "",
        input_schema_json=orjson.dumps(tool.get("inputSchema") or {"type": "object"}).decode(),
        title=tool.get("title") or "",
        annotations_json=_json(tool.get("annotations")),
        meta_json=_json(tool.get("_meta")),  # passed on as they are (Claude Code reads some keys)
        icons_json=_json(tool.get("icons")),
        tags=sorted(tags),
        task_support_mode="forbidden",  # tasks are not forwarded
    )
    if tool.get("outputSchema"):
        definition.output_schema_json = orjson.dumps(tool["outputSchema"]).decode()
    return definition


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def _json(value: Any) -> str:
    return orjson.dumps(value).decode() if value else ""


async def _all(method: Any, field: str) -> list[Any]:
    """Every page of a list request."""
    from mcp import types

    items: list[Any] = []
    cursor = None
    for _ in range(1000):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await method(params=params)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


def _error_reply(kind: str, code: int, message: str) -> pb.Envelope | None:
    """A forwarded request's JSON-RPC error as the Envelope answer (None: a call, which fails)."""
    if kind == "read_resource_request":
        return pb.Envelope(
            read_resource_response=pb.ReadResourceResponse(is_error=True, error=message, error_code=code)
        )
    if kind == "get_prompt_request":
        return pb.Envelope(
            get_prompt_response=pb.GetPromptResponse(is_error=True, error=message, error_code=code)
        )
    return None


class OfferRefused(Exception):
    """The upstream answered, but its tools cannot be served beside the others (a name clash)."""


def _session_gone(exc: Any) -> bool:
    """An HTTP 404 for the session (the upstream restarted or ended it), as the mcp client
    reports it: the server's own JSON-RPC error (protomcp: "Session not found"), or its
    stand-in "Session terminated"."""
    error = exc.error
    return error.code == INVALID_REQUEST and error.message.startswith(
        ("Session not found", "Session terminated")
    )


def _first(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    """One readable line for an exception (the first of a group)."""
    exc = _first(exc)
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0] if text else type(exc).__name__
