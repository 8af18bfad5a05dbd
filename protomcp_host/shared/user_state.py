"""ctx.user_state on the host: each principal's own key/value in the store, shared by every host
of a --store (and with the memory store, by this host's sessions and processes).

Whose state a request reaches is decided here, from the verified token claims of the running
request that asked (the tool process never names anyone): with OAuth the token's issuer and
subject; without OAuth one identity for the whole host — the local user over stdio, the one
anonymous user every caller shares over HTTP (no token, or the shared --auth-token-env token).
A token without `sub` names nobody: its requests are refused. The principal's name is hashed
into its space, so no key name of one principal can reach another's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from protomcp_host.protocol.principals import principal_of as signed_in
from protomcp_host.store.base import Store, StoreError
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire import user_state as contract

LOCAL = "local user"  # stdio: the person who started the host
ANONYMOUS = "anonymous"  # HTTP without OAuth: every caller, one user
STORE_TIMEOUT = 10.0  # seconds a request waits for the store
NO_SUBJECT = "ctx.user_state needs to know who called, and the caller's access token has no 'sub' claim"

Reply = Callable[[pb.UserStateResponse], None]


def principal_of(caller: dict[str, Any] | None, unauthenticated: str) -> str | None:
    """Whose state: the signed-in subject of the caller's verified claims (protocol/principals.py),
    else the host's one identity; None for a token that names no subject."""
    if caller is None:
        return unauthenticated
    return signed_in(caller)


def space_of(principal: str) -> str:
    """The principal's space in the store: its name hashed (fixed length, no ':')."""
    import hashlib  # here, not at the top: a plain run loads no hashlib (tests/cli/test_lean_start.py)

    return hashlib.sha256(principal.encode()).hexdigest()


class UserStates:
    """Serves the user-state requests of every tool process of this host."""

    def __init__(self, store: Store, unauthenticated: str, report: Callable[[str], None]) -> None:
        self.store = store
        self.unauthenticated = unauthenticated  # LOCAL (stdio) or ANONYMOUS (HTTP)
        self.report = report  # the host's stderr
        self.spawn: Callable[..., object] | None = None  # runs a task in the host's task group (once started)
        self._failing = False  # the store's trouble was reported (once, until a request succeeds again)

    def serve(self, caller: dict[str, Any] | None, request: pb.UserStateRequest, reply: Reply) -> None:
        """Check the request (never trusting the process), then carry it out in the store; the
        answer goes to `reply`, once."""
        principal = principal_of(caller, self.unauthenticated)
        refused = (
            NO_SUBJECT
            if principal is None
            else contract.refusal(request.op, request.key, request.value_json, request.ttl)
        )
        if refused is None and self.spawn is None:
            refused = "the host is not serving yet"
        if refused is not None or principal is None or self.spawn is None:
            reply(pb.UserStateResponse(error=refused or NO_SUBJECT))
            return
        self.spawn(self._carry_out, space_of(principal), request, reply)

    async def _carry_out(self, space: str, request: pb.UserStateRequest, reply: Reply) -> None:
        try:
            with anyio.fail_after(STORE_TIMEOUT):
                answer = await self._apply(space, request)
        except (StoreError, TimeoutError) as exc:
            why = str(exc) or f"the store did not answer within {STORE_TIMEOUT:g}s"
            if not self._failing:  # (a tool retrying in a loop must not flood stderr)
                self._failing = True
                self.report(
                    f"protomcp: ctx.user_state.{request.op} failed: {why} (said once until it serves)"
                )
            answer = pb.UserStateResponse(error=f"the user state is unavailable: {why}")
        except Exception as exc:  # a bug costs this request, never the host's task group
            self.report(f"protomcp: ctx.user_state.{request.op} failed: {exc!r}")
            answer = pb.UserStateResponse(error=f"the host could not serve ctx.user_state: {exc!r}")
        else:
            self._failing = False
        reply(answer)

    async def _apply(self, space: str, request: pb.UserStateRequest) -> pb.UserStateResponse:
        key = request.key
        if request.op == "get":
            value = await self.store.user_get(space, key)
            if value is None:
                return pb.UserStateResponse()
            return pb.UserStateResponse(found=True, value_json=value.decode())
        if request.op == "delete":
            return pb.UserStateResponse(found=await self.store.user_delete(space, key))
        value = request.value_json.encode()
        stored = await self.store.user_set(space, key, value, request.ttl or None, contract.MAX_KEYS)
        return pb.UserStateResponse() if stored else pb.UserStateResponse(error=contract.full(key))
