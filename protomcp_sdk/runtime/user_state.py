"""ctx.user_state: the caller's own key/value, kept by the host in its store (every host of a
--store shares it), across calls, sessions and processes. Each operation is a request to the
host, which decides whose state it is from the running call; values are JSON."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import orjson

from protomcp_sdk.authoring.results import ToolError
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire import user_state as contract
from protomcp_sdk.wire.jsontypes import JSON

Answer = Any  # the answer itself in a sync tool, an awaitable of it in an async one (see Context)
Request = Callable[[pb.UserStateRequest, Callable[[pb.Envelope], Any]], Answer]
"""Sends one request to the host and gives its converted answer (Context does it)."""

MAX_DEPTH = 64  # nesting levels a value may have


class UserStateError(ToolError):
    """The host refused a user_state request (a bound, a caller it cannot name, the store
    unreachable). Uncaught, it fails the tool call with its message, like any ToolError."""


class UserState:
    """``ctx.user_state``: the calling user's key/value store. ``get(key, default=None)``,
    ``set(key, value, ttl=None)`` and ``delete(key)`` (True if the key was there) are awaitable
    in async tools and plain calls in sync ones, like ``ctx.info``.

    Whose state it is, the host decides from the call: over HTTP with OAuth the token's subject
    (its ``iss`` and ``sub``), over stdio the local user, over HTTP without OAuth one anonymous
    user shared by every caller. Values are JSON (dict with str keys, list, str, int, float,
    bool, None); `ttl` is in seconds (None: kept until deleted)."""

    __slots__ = ("_request",)

    def __init__(self, request: Request) -> None:
        self._request = request

    def get(self, key: str, default: JSON = None) -> Answer:
        """The value under `key`, or `default` when there is none (never set, deleted, expired)."""

        def value(reply: pb.Envelope) -> JSON:
            response = _response(reply)
            return orjson.loads(response.value_json) if response.found else default

        return self._request(pb.UserStateRequest(op="get", key=_key(key)), value)

    def set(self, key: str, value: JSON, ttl: float | None = None) -> Answer:
        """Keep `value` under `key` (replacing what was there), for `ttl` seconds if given."""
        request = pb.UserStateRequest(op="set", key=_key(key), value_json=encode(value))
        if ttl is not None:
            if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
                raise TypeError(f"ttl is a number of seconds, not {type(ttl).__name__}")
            if not math.isfinite(ttl) or ttl <= 0:
                raise ValueError(f"ttl={ttl!r}: a ttl is a positive number of seconds (None: no expiry)")
            if ttl > contract.MAX_TTL:
                raise ValueError(contract.ttl_too_long(ttl))
            request.ttl = float(ttl)
        return self._request(request, _stored)

    def delete(self, key: str) -> Answer:
        """Drop `key`; True if it held a value."""
        return self._request(pb.UserStateRequest(op="delete", key=_key(key)), lambda r: _response(r).found)


def _key(key: str) -> str:
    if not isinstance(key, str):
        raise TypeError(f"a user_state key is a str, not {type(key).__name__}")
    return key


def _stored(reply: pb.Envelope) -> None:
    _response(reply)


def _response(reply: pb.Envelope) -> pb.UserStateResponse:
    response = reply.user_state_response
    if response.error:
        raise UserStateError(response.error)
    return response


def encode(value: object) -> str:
    """`value` as JSON, if it is JSON and comes back equal; otherwise TypeError naming where
    it is not (a tuple, a set, a datetime, NaN, a key that is not a str...)."""
    _check(value, "value", 0)
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError as exc:  # (an int beyond 64 bits)
        raise TypeError(f"the user_state value is not JSON: {exc}") from None


def _check(value: object, where: str, depth: int) -> None:
    if value is None or type(value) in (str, bool, int):
        return
    if type(value) is float:
        if not math.isfinite(value):
            raise TypeError(f"the user_state {where} is {value!r}, which JSON cannot hold")
        return
    if depth >= MAX_DEPTH:
        raise TypeError(f"the user_state {where} nests deeper than {MAX_DEPTH} levels")
    if type(value) is list:
        for index, item in enumerate(value):
            _check(item, f"{where}[{index}]", depth + 1)
        return
    if type(value) is dict:
        for name, member in value.items():
            if type(name) is not str:
                raise TypeError(f"the user_state {where} has a key {name!r}: JSON object keys are str")
            _check(member, f"{where}[{name!r}]", depth + 1)
        return
    raise TypeError(
        f"the user_state {where} is a {type(value).__name__}, not JSON (use dict, list, str, int, "
        "float, bool or None)"
    )
