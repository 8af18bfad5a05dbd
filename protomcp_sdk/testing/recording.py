"""RecordingContext: a Context for calling tool functions directly in unit tests, which records
what the tool sends and answers tool-list control and client requests itself."""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
import types
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import Any, TypeVar

import orjson

from protomcp_sdk.runtime import client
from protomcp_sdk.runtime.context import _UNSET, Answer, Context, mark_cancelled
from protomcp_sdk.testing.answers import (
    Elicitation,
    Roots,
    Sampling,
    client_capabilities,
    elicitation_result,
    roots_result,
    sampling_result,
)
from protomcp_sdk.testing.user_states import UserStates
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire.jsontypes import JSON, JSONObject
from protomcp_sdk.wire.toollist import ToolListChange

T = TypeVar("T")


class RecordingContext(Context):
    """A Context for calling tool functions directly: it records instead of sending.

    ``progress`` holds ``(progress, total, message)`` tuples, ``logs`` holds ``(level, data)``
    pairs; ``cancel()`` makes ``ctx.cancelled`` true, as a client's cancellation would.

    Tool-list control works on a pretend session: ``tools`` names the tools active at the
    start (``active`` holds the current set, ``tool_changes`` every ToolListChange asked for).
    ``sampling``, ``elicitation`` and ``roots`` answer ``ctx.sample``/``elicit``/``list_roots``
    (see ``protomcp_sdk.testing``; a request without one raises, as for a client that did not
    declare the capability); ``requests`` keeps ``(kind, params)`` of each. ``state`` is what
    ``ctx.state`` gives (a ``@lifespan``'s value); ``claims`` are the caller's verified token
    claims ``ctx.auth`` and ``ctx.principal`` give, as over HTTP with OAuth
    (``claims={"sub": "ada", "scope": "files:write"}``; None, the default: no principal).
    ``user_states`` keeps what ``ctx.user_state`` stores (a ``UserStates``: one is made when
    not given; share one between contexts to test several callers): the caller is the claims'
    ``sub``, or ``"local"`` without claims, as over stdio.
    ``extensions`` are the MCP extensions the pretend client declared (``ctx.client_supports``:
    ``extensions=["io.modelcontextprotocol/ui"]`` for a client that renders apps).
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
        user_states: UserStates | None = None,
        extensions: Iterable[str] = (),
    ) -> None:
        self.sent: list[pb.Envelope] = []  # every message, including kinds recorded nowhere else
        capabilities = client_capabilities(sampling, elicitation, roots)
        if extensions:  # what ctx.client_supports finds declared
            capabilities["extensions"] = {extension: {} for extension in extensions}
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
        self.claims = claims
        self.user_states = user_states if user_states is not None else UserStates()
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
        mark_cancelled(self)

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

    def _user_state_request(
        self, request: pb.UserStateRequest, convert: Callable[[pb.Envelope], T]
    ) -> Answer:
        self.sent.append(pb.Envelope(call_id=self.request_id, user_state_request=request))
        answer = self.user_states.answer(self.claims, request)
        return _give(convert(pb.Envelope(user_state_response=answer)))

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


_SDK_DIR = str(Path(__file__).resolve().parents[1]) + os.sep  # protomcp_sdk/


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
