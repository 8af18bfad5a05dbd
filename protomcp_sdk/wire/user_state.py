"""ctx.user_state's contract: its operations and bounds, and the checks the host makes of each
request (the testing stand-in makes the same ones). Imports no protobuf."""

from __future__ import annotations

import math

import orjson

OPS = ("get", "set", "delete")
MAX_KEY_CHARS = 256  # a key's length
MAX_VALUE_BYTES = 64 * 1024  # one value's JSON, UTF-8
MAX_KEYS = 1000  # live keys one principal holds at once
MAX_TTL = 10 * 365 * 86400.0  # seconds: a longer ttl is refused (None keeps a value until deleted)
MAX_IN_FLIGHT = 1024  # requests one tool process may have unanswered; beyond: refused at once


def busy() -> str:
    """The error of a request beyond MAX_IN_FLIGHT (the host's memory stays bounded)."""
    return (
        f"this tool process already has {MAX_IN_FLIGHT} ctx.user_state requests waiting for the "
        "store: await some before asking more"
    )


def refusal(op: str, key: str, value_json: str = "", ttl: float = 0.0) -> str | None:
    """Why a request cannot be served as asked (the error the tool gets), or None."""
    if op not in OPS:
        return f"unknown user_state operation {op!r}"
    if not key:
        return "a user_state key is a non-empty string"
    if len(key) > MAX_KEY_CHARS:
        return f"the user_state key is {len(key)} characters long; at most {MAX_KEY_CHARS} are kept"
    if op != "set":
        return None
    if not math.isfinite(ttl) or ttl < 0:
        return f"ttl={ttl!r}: a ttl is a positive number of seconds (or None: until deleted)"
    if ttl > MAX_TTL:
        return ttl_too_long(ttl)
    size = len(value_json.encode())
    if size > MAX_VALUE_BYTES:
        return (
            f"the value of {key!r} is {size} bytes as JSON; a user_state value holds at most "
            f"{MAX_VALUE_BYTES} bytes"
        )
    try:
        orjson.loads(value_json)
    except orjson.JSONDecodeError:
        return f"the value of {key!r} is not JSON"
    return None


def ttl_too_long(ttl: float) -> str:
    """The error of a ttl beyond MAX_TTL (Redis cannot hold some such deadlines)."""
    return f"ttl={ttl!r}: at most {MAX_TTL:.0f} seconds (ten years); None keeps the value until deleted"


def full(key: str) -> str:
    """The error of a set that would give a principal more than MAX_KEYS keys."""
    return (
        f"cannot set {key!r}: this user already holds {MAX_KEYS} user_state keys (the most kept); "
        "delete some, or give values a ttl"
    )
