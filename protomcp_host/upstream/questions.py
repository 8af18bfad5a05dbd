"""An upstream's requests for the client (sampling, elicitation): asked of the client of the
request they belong to, never anyone else's, and answered from what a retried request carries
when the call was suspended elsewhere (2026-07-28 input rounds)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import orjson

from protomcp_host.upstream.errors import INVALID_REQUEST
from protomcp_host.upstream.requests import Forwarded, InFlight

# The request whose task sends to the upstream. The mcp client runs what arrives on a request's
# own stream (Streamable HTTP: the POST's SSE response) in the context of the task that sent
# that request, so an upstream's elicitation/sampling sees its owner here; what arrives on a
# shared stream (stdio, the standalone GET stream) sees None.
OWNER: ContextVar[Forwarded | None] = ContextVar("protomcp_upstream_request", default=None)


def question_key(method: str, params: dict[str, Any], order: int) -> str:
    """The name of an upstream's request for the client in a 2026-07-28 input round: the same
    on every host that runs the call again, so the answer a retry carries is found there. It
    binds the question's order within the request (a second identical question is asked
    again) and its content (an answer is never given to another question)."""
    asked = {k: v for k, v in params.items() if k not in ("_meta", "elicitationId")}  # per-run ids
    content = hashlib.sha256(orjson.dumps(asked, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
    return f"{method}-{order}-{content}"


class Questions:
    """The mcp client's sampling and elicitation callbacks of one upstream."""

    def __init__(self, in_flight: InFlight, session: Callable[[], Any]) -> None:
        self.in_flight = in_flight
        self.session = session  # the connection the upstream has now (None: none)

    async def sampling(self, context: Any, params: Any) -> Any:
        from mcp import types

        return await self._ask("sampling/createMessage", params, types.CreateMessageResult)

    async def elicitation(self, context: Any, params: Any) -> Any:
        from mcp import types

        return await self._ask("elicitation/create", params, types.ElicitResult)

    async def _ask(self, method: str, params: Any, model: Any) -> Any:
        """Ask the client of the request this one belongs to; never anyone else's. Refused
        when that request cannot be told for certain (an error to the upstream), declined
        when it may be one whose owner is gone (elicitation: action "decline"; others an
        error, as they have no way to decline)."""
        from mcp import types

        owner, why, gone = self.owner_of(OWNER.get())
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

    def owner_of(self, related: Forwarded | None) -> tuple[Forwarded | None, str, bool]:
        """The request an upstream's request belongs to; or None, why it cannot be told, and
        whether it may belong to a request whose owner is gone.

        Over HTTP the transport says: it arrived on that request's stream (`related`), or on the
        standalone stream, which belongs to no request. Over stdio nothing says: it belongs to
        the one request of any kind (call, read, prompt, completion) the upstream has, counting
        those dropped (cancelled, timed out) that it may still be finishing: while one of them
        may be the asker, the question is nobody's to answer."""
        in_flight = self.in_flight
        if related is not None:
            if related.leg.live and any(r is related for r in in_flight.running.values()):
                return related, "", False
            return None, "the request it belongs to is over", True
        if in_flight.over_http:
            return None, "it did not come on the stream of a request of protomcp's clients", False
        running = [r for r in in_flight.running.values() if r.sent]  # a leg gone still runs upstream
        dropped = in_flight.still_dropped(self.session())
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
