"""UserStates: what the host does for ctx.user_state, in memory, for RecordingContext: a dict of
values per principal, with the host's checks, bounds and expiry."""

from __future__ import annotations

import math
import time

import orjson

from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire import user_state as contract
from protomcp_sdk.wire.jsontypes import JSON, JSONObject

LOCAL = "local"  # whose state it is without claims (the host's local user over stdio)


class UserStates:
    """Each principal's user state, kept here. Pass one to several ``RecordingContext``s (with
    different ``claims=``) to see that each caller has its own; ``of(principal)`` is what one
    holds now (``"local"`` without claims, else the claims' ``sub``)."""

    def __init__(self) -> None:
        self._values: dict[str, dict[str, tuple[JSON, float]]] = {}  # principal -> key -> (value, deadline)

    def of(self, principal: str = LOCAL) -> dict[str, JSON]:
        """The live values of `principal`, by key."""
        now = time.monotonic()
        return {
            key: value for key, (value, deadline) in self._values.get(principal, {}).items() if deadline > now
        }

    def answer(self, claims: JSONObject | None, request: pb.UserStateRequest) -> pb.UserStateResponse:
        """What the host would answer a caller with these claims (None: no OAuth)."""
        principal = LOCAL if claims is None else claims.get("sub")
        if not isinstance(principal, str) or not principal:
            return pb.UserStateResponse(
                error="ctx.user_state needs to know who called: the claims have no 'sub'"
            )
        refused = contract.refusal(request.op, request.key, request.value_json, request.ttl)
        if refused is not None:
            return pb.UserStateResponse(error=refused)
        now = time.monotonic()
        values = self._values.setdefault(principal, {})
        for expired in [key for key, (_, deadline) in values.items() if deadline <= now]:
            del values[expired]
        key = request.key
        if request.op == "get":
            if key not in values:
                return pb.UserStateResponse()
            return pb.UserStateResponse(found=True, value_json=orjson.dumps(values[key][0]).decode())
        if request.op == "delete":
            return pb.UserStateResponse(found=values.pop(key, None) is not None)
        if key not in values and len(values) >= contract.MAX_KEYS:
            return pb.UserStateResponse(error=contract.full(key))
        values[key] = (orjson.loads(request.value_json), now + request.ttl if request.ttl else math.inf)
        return pb.UserStateResponse()
