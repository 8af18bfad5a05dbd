"""The per-call Context a tool can ask for by annotating a parameter with it."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Generator, Iterable
from typing import Any, TypeAlias, TypeVar

import orjson

from protomcp_sdk.authoring import apps
from protomcp_sdk.authoring.context import CallContext
from protomcp_sdk.authoring.messages import Messages
from protomcp_sdk.authoring.principal import Principal
from protomcp_sdk.runtime import client
from protomcp_sdk.runtime.user_state import UserState
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire.jsontypes import JSON, JSONObject
from protomcp_sdk.wire.toollist import ToolListChange

T = TypeVar("T")

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class _Sent:
    """Returned by Context methods: the message is already queued when the call returns,
    so ``await ctx.info(...)`` (async tools) and plain ``ctx.info(...)`` (sync tools) both work."""

    __slots__ = ()

    def __await__(self) -> Generator[None, None, None]:
        return
        yield  # pragma: no cover - makes this a generator


_SENT = _Sent()

ASK_TIMEOUT = 30.0  # seconds a sync tool waits for the host to answer a request

Reply: TypeAlias = "asyncio.Future[pb.Envelope] | concurrent.futures.Future[pb.Envelope]"
Ask = Callable[[pb.Envelope], Reply]
"""Sends a request to the host: an asyncio future on the event loop (async tools), a
concurrent future in a call thread (sync tools)."""


Answer: TypeAlias = Any
"""What a Context request returns: in a sync tool the answer itself, in an async one an
awaitable of it. Which one is found when the call runs, so no static type can say: Any."""


class _LifespanState:
    """What the tool file's @lifespan yielded, for every call of this process."""

    value: Any = None  # the tool file's own value: its type is the file's to know


LIFESPAN_STATE = _LifespanState()

_UNSET: Any = object()


class ToolListControlError(RuntimeError):
    """The host refused a tool-list change (the call it names is over, say)."""


def _names(reply: pb.Envelope) -> list[str]:
    if reply.active_tools.error:
        raise ToolListControlError(reply.active_tools.error)
    return list(reply.active_tools.tool_names)


def _done(envelope: pb.Envelope) -> Reply:
    """A future already answered: an asyncio one on a running loop, a concurrent one elsewhere."""
    try:
        on_loop: asyncio.Future[pb.Envelope] = asyncio.get_running_loop().create_future()
    except RuntimeError:
        in_thread: concurrent.futures.Future[pb.Envelope] = concurrent.futures.Future()
        in_thread.set_result(envelope)
        return in_thread
    on_loop.set_result(envelope)
    return on_loop


def answer_of(future: Reply, convert: Callable[[pb.Envelope], T], timeout: float = ASK_TIMEOUT) -> Answer:
    """What a Context request returns: an awaitable in async tools, the value in sync tools."""
    if isinstance(future, asyncio.Future):
        return asyncio.ensure_future(_converted(future, convert, timeout))
    try:
        return convert(future.result(timeout=timeout))
    except concurrent.futures.TimeoutError:
        raise TimeoutError(f"the host did not answer within {timeout:g}s") from None


async def _converted(
    future: asyncio.Future[pb.Envelope], convert: Callable[[pb.Envelope], T], timeout: float = ASK_TIMEOUT
) -> T:
    async with asyncio.timeout(timeout):
        return convert(await future)


def _task_status(ctx: Context, state: str, message: str, progress: int, total: int) -> pb.Envelope:
    """The frame that sets the status of the task a call runs as."""
    note = pb.TaskStatusResponse(
        task_id=ctx.task_id, state=state, message=message, progress=progress, total=total
    )
    return pb.Envelope(request_id=ctx.request_id, task_status_response=note)


def mark_cancelled(ctx: Context) -> None:
    """The client cancelled the call `ctx` belongs to (what ``ctx.cancelled`` reads)."""
    ctx._cancelled = True


class Context(CallContext):
    """Talks back to the client while a tool runs: progress, log messages, cancellation.

    Every method is safe to call from async tools (``await ctx.info("...")``) and from sync
    tools running in a call thread (``ctx.info("...")``).
    """

    def __init__(
        self,
        request_id: str,
        progress_token: str,
        send: Callable[[pb.Envelope], None],
        tool_name: str = "",
        ask: Ask | None = None,
        task_id: str = "",
        auth_json: str = "",
        capabilities_json: str = "",
        answers_json: str = "",
        state: Any = _UNSET,
    ) -> None:
        self.request_id = request_id
        self._state = state
        self._auth_json = auth_json
        self._capabilities_json = capabilities_json
        self._capabilities: JSONObject | None = None
        self._answers_json = answers_json
        self._asking: client.CallAsking | None = None  # made by the call's first request for the client
        self.progress_token = progress_token
        self.tool_name = tool_name
        self.task_id = task_id  # set when the client runs this call as an MCP task
        self._send = send
        self._ask = ask
        self._cancelled = False  # a plain flag: set once by the loop, read by the tool's thread

    @property
    def auth(self) -> JSONObject | None:
        """The verified claims of the caller's access token (``sub``, ``scope``, ``iss``...) when
        the host serves HTTP with OAuth; None otherwise. The token itself never reaches a tool."""
        return orjson.loads(self._auth_json) if self._auth_json else None

    @property
    def principal(self) -> Principal | None:
        """Who called: ``.subject`` (the token's ``sub``), ``.scopes`` (what it grants) and
        ``.claims``, when the host serves HTTP with OAuth; None otherwise (stdio, a shared
        bearer token, no auth)."""
        claims = self.auth
        return None if claims is None else Principal.from_claims(claims)

    @property
    def client_capabilities(self) -> JSONObject:
        """What the client declared it can do for this request (MCP ClientCapabilities:
        ``sampling``, ``elicitation``, ``roots``...), in both protocol eras. A tool can adapt
        to it; ``ctx.sample``/``elicit``/``list_roots`` the client cannot serve raise."""
        if self._capabilities is None:
            value = orjson.loads(self._capabilities_json) if self._capabilities_json else {}
            self._capabilities = value if isinstance(value, dict) else {}
        return self._capabilities

    def client_supports(self, extension: str) -> bool:
        """Whether the client declared the MCP extension `extension` for this request, e.g.
        ``ctx.client_supports("io.modelcontextprotocol/ui")``: it renders apps (2025-11-25:
        declared at initialize; 2026-07-28: in each request's capabilities)."""
        return apps.supports(self.client_capabilities, extension)

    @property
    def state(self) -> Any:
        """What the tool file's ``@lifespan`` yielded (a dict, say: ``ctx.state["pool"]``);
        None when the file has no lifespan."""
        return LIFESPAN_STATE.value if self._state is _UNSET else self._state

    @property
    def user_state(self) -> UserState:
        """The calling user's own key/value, kept by the host across calls, sessions and hosts
        (see UserState): ``await ctx.user_state.get("k")`` in async tools, plain calls in sync ones."""
        return UserState(self._user_state_request)

    @property
    def cancelled(self) -> bool:
        """True once the client cancelled this call. Long sync loops should check it."""
        return self._cancelled

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> _Sent:
        """Report progress; reaches the client only if it asked for progress on this call.
        In a task, it also becomes the task's status message (the message, or "progress/total")."""
        if self.task_id and (message or total is not None):
            self._send(_task_status(self, "", message or "", int(progress), int(total or 0)))
        if self.progress_token:
            note = pb.ProgressNotification(
                progress_token=self.progress_token,
                progress=int(progress),
                progress_value=float(progress),
                message=message or "",
            )
            if total is not None:
                note.total = int(total)
                note.total_value = float(total)
            self._send(pb.Envelope(request_id=self.request_id, progress=note))
        return _SENT

    def set_task_status(self, message: str, *, input_required: bool = False) -> _Sent:
        """Set the status message of the task this call runs as (the client sees it in
        tasks/get and notifications/tasks/status); ``input_required=True`` moves the task to
        ``input_required`` until the next call with it False. Raises RuntimeError outside a task."""
        if not self.task_id:
            raise RuntimeError("set_task_status: this call is not running as a task (ctx.task_id is empty)")
        self._send(_task_status(self, "input_required" if input_required else "working", message, 0, 0))
        return _SENT

    def log(self, level: str, message: JSON, *, logger: str | None = None) -> _Sent:
        """Send a log message to the client (MCP ``notifications/message``)."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; use one of {', '.join(LOG_LEVELS)}")
        entry = pb.LogMessage(
            level=level,
            logger=logger or self.tool_name,
            data_json=orjson.dumps(message, default=str).decode(),
        )
        self._send(pb.Envelope(request_id=self.request_id, log=entry))
        return _SENT

    def resource_updated(self, uri: str) -> _Sent:
        """Tell clients subscribed to `uri` that it changed (``notifications/resources/updated``)."""
        self._send(pb.Envelope(resource_changed=pb.ResourceChangedNotification(uri=uri)))
        return _SENT

    def debug(self, message: JSON) -> _Sent:
        return self.log("debug", message)

    def info(self, message: JSON) -> _Sent:
        return self.log("info", message)

    def warning(self, message: JSON) -> _Sent:
        return self.log("warning", message)

    def error(self, message: JSON) -> _Sent:
        return self.log("error", message)

    # -- the session's tool list ---------------------------------------------------------
    # Each changes the tool list of the client session that made this call and returns the
    # names of the tools now active there (awaitable in async tools, a plain list in sync ones).
    # The client gets one notifications/tools/list_changed when its list really changed.

    def enable_tools(self, names: Iterable[str]) -> Answer:
        """Show these tools (also tools declared ``@tool(hidden=True)``)."""
        return self._control(ToolListChange.of(enable=names).envelope())

    def disable_tools(self, names: Iterable[str]) -> Answer:
        """Hide these tools; calling them is refused until they are enabled again."""
        return self._control(ToolListChange.of(disable=names).envelope())

    def set_allowed(self, names: Iterable[str]) -> Answer:
        """Allowlist mode: exactly these tools are active."""
        return self._control(ToolListChange.of(allow=names).envelope())

    def set_blocked(self, names: Iterable[str]) -> Answer:
        """Blocklist mode: every tool except these (and hidden ones) is active."""
        return self._control(ToolListChange.of(block=names).envelope())

    def update_tools(
        self,
        *,
        enable: Iterable[str] = (),
        disable: Iterable[str] = (),
        allow: Iterable[str] | None = None,
        block: Iterable[str] | None = None,
    ) -> Answer:
        """One atomic change: a new allowlist or blocklist (None or empty: keep the mode),
        then enables, then disables — one list_changed at most."""
        change = ToolListChange.of(enable=enable, disable=disable, allow=allow or None, block=block or None)
        return self._control(change.envelope())

    def active_tools(self) -> Answer:
        """The names of the tools active in this call's session."""
        return self._control(pb.Envelope(get_active_tools=pb.GetActiveToolsRequest()))

    # -- asking the client (see client.py) -------------------------------------------------------
    # Each is awaitable in async tools and a plain (blocking) call in sync ones; the call stays
    # suspended here until the client answers. Failures raise ClientRequestError (a ToolError).

    def sample(
        self,
        messages: Messages,
        *,
        max_tokens: int = 1000,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        model_preferences: JSONObject | None = None,
        include_context: str | None = None,
        metadata: JSONObject | None = None,
        timeout: float = client.DEFAULT_TIMEOUT,
        key: str | None = None,
    ) -> Answer:
        """Ask the client's model (``sampling/createMessage``): a str (one user message), a
        Message or a list of them. Returns a SamplingResult (``.text``, ``.content``,
        ``.model``, ``.stop_reason``). `key` names the request in a 2026-07-28 input-required
        round (default: ``sample-1``, ``sample-2``... in the order the call asks)."""
        request = client.sampling_request(
            messages,
            max_tokens=max_tokens,
            system_prompt=system_prompt,
            temperature=temperature,
            stop_sequences=stop_sequences,
            model_preferences=model_preferences,
            include_context=include_context,
            metadata=metadata,
            timeout=timeout,
        )
        return self._ask_client(request, client.sampling_result, timeout, key, "sample")

    def elicit(
        self,
        message: str,
        schema: type | JSONObject | None = None,
        *,
        url: str | None = None,
        elicitation_id: str | None = None,
        timeout: float = client.DEFAULT_TIMEOUT,
        key: str | None = None,
    ) -> Answer:
        """Ask the user (``elicitation/create``). Form mode: `schema` is a pydantic model, a
        dataclass or a JSON Schema dict; URL mode: `url` to open. Returns an ElicitResult
        (``.action`` "accept"/"decline"/"cancel", ``.data`` validated into `schema`). `key`
        names the request in an input-required round (default ``elicit-1``, ``elicit-2``...)."""
        request = client.elicit_request(message, schema, url, elicitation_id, timeout)
        convert = lambda reply: client.elicit_result(reply, schema)  # noqa: E731
        return self._ask_client(request, convert, timeout, key, "elicit")

    def list_roots(self, *, timeout: float = client.DEFAULT_TIMEOUT, key: str | None = None) -> Answer:
        """The client's roots (``roots/list``): a list of Root(uri, name). `key` names the
        request in an input-required round (default ``roots-1``, ``roots-2``...)."""
        return self._ask_client(client.roots_request(timeout), client.roots_result, timeout, key, "roots")

    def _ask_client(
        self,
        envelope: pb.Envelope,
        convert: Callable[[pb.Envelope], T],
        timeout: float,
        key: str | None,
        kind: str,
    ) -> Answer:
        if self._ask is None:
            raise RuntimeError("this Context is not connected to a protomcp host")
        if self._asking is None:
            self._asking = client.CallAsking(self._answers_json)
        key = self._asking.key(kind, key)
        if self._capabilities_json:
            client.check_capability(envelope, self.client_capabilities)
        known = self._asking.known(envelope, key)
        if known is not None:
            return answer_of(_done(known), convert, timeout)
        getattr(envelope, envelope.WhichOneof("msg") or "").key = key
        envelope.call_id = self.request_id
        return answer_of(self._ask(envelope), convert, timeout + client.GRACE)

    def _user_state_request(
        self, request: pb.UserStateRequest, convert: Callable[[pb.Envelope], T]
    ) -> Answer:
        if self._ask is None:
            raise RuntimeError("this Context is not connected to a protomcp host")
        envelope = pb.Envelope(call_id=self.request_id, user_state_request=request)
        return answer_of(self._ask(envelope), convert)

    def _control(self, envelope: pb.Envelope) -> Answer:
        if self._ask is None:
            raise RuntimeError("this Context is not connected to a protomcp host")
        envelope.call_id = self.request_id
        return answer_of(self._ask(envelope), _names)
