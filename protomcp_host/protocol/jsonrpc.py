"""JSON-RPC 2.0 message rules, without I/O.

``decode`` turns one line into a :class:`Request`, :class:`Notification`,
:class:`Response` or :class:`Invalid`, or a list of them for a batch. The encoders
return the bytes of one message (no newline). Request ids are carried as their
original JSON bytes so an id is echoed exactly as the client sent it.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from typing import Any

import orjson

from protomcp_host.protocol.jsontypes import is_id

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

NULL_ID = b"null"

MAX_DEPTH = 256
"""Deepest nesting accepted in a message: tool arguments (two levels down) are re-encoded
for the tool process, and orjson encodes at most 254 levels."""

# 19 digits in a row may exceed 64 bits, which orjson would make a float. Found by mapping every
# digit to "0" and looking for 19 of them: several times faster than a regex search.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 19
_INT_RANGE = (-(2**63), 2**64 - 1)


@dataclass(slots=True)
class Request:
    id: bytes  # the id's JSON encoding, echoed verbatim
    method: str
    params: dict[str, Any]


@dataclass(slots=True)
class Notification:
    method: str
    params: dict[str, Any]


@dataclass(slots=True)
class Response:
    """A client's answer to a request the server sent (result or error)."""

    id: bytes
    payload: dict[str, Any]


@dataclass(slots=True)
class Invalid:
    """A message that must be answered with an error (id is NULL_ID when unknown)."""

    id: bytes
    code: int
    message: str


Message = Request | Notification | Response | Invalid


def decode(line: bytes) -> Message | list[Message]:
    """Classify one line. A JSON array gives a list (an empty one is Invalid)."""
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc):  # valid JSON, perhaps, but far too deep for anyone
            return Invalid(_top_level_id(line), INVALID_REQUEST, _TOO_DEEP)
        return _refused(line) or Invalid(NULL_ID, PARSE_ERROR, f"Parse error: {exc}")
    return decode_loaded(line, data)


def decode_loaded(line: bytes, data: Any) -> Message | list[Message]:
    """decode() of a line orjson has parsed already (`data`): the same checks, no second parse."""
    if _LONG_NUMBER in line.translate(_DIGITS_AS_ZERO) and (refused := _refused(line)) is not None:
        return refused  # an integer beyond 64 bits, which orjson silently made a float
    deep = line.count(b"[") + line.count(b"{") > MAX_DEPTH  # cheap test before the exact one
    if isinstance(data, list):
        if not data:
            return Invalid(NULL_ID, INVALID_REQUEST, "Invalid Request: empty batch")
        return [_checked(item, deep) for item in data]
    return _checked(data, deep) if deep else classify(data)


def _checked(data: Any, maybe_deep: bool) -> Message:
    message = classify(data)
    if maybe_deep and isinstance(message, (Request, Notification)) and _depth_exceeds(data, MAX_DEPTH):
        if isinstance(message, Notification):
            return Notification(message.method, {})
        return Invalid(message.id, INVALID_REQUEST, _TOO_DEEP)
    return message


_TOO_DEEP = f"Invalid Request: the message nests deeper than {MAX_DEPTH} levels"
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"\s*:?|[\[\]{}]')
_ID_VALUE = re.compile(rb'\s*("(?:[^"\\]|\\.)*"|-?\d+)')


def _top_level_id(line: bytes) -> bytes:
    """The id of an object too deep to parse, found by scanning its top level; else null."""
    depth = 0
    for token in _TOKEN.finditer(line):
        text = token.group()
        if text in (b"[", b"{"):
            depth += 1
        elif text in (b"]", b"}"):
            depth -= 1
        elif depth == 1 and text.endswith(b":") and text[:-1].rstrip() == b'"id"':
            value = _ID_VALUE.match(line, token.end())
            try:
                found = orjson.loads(value.group(1)) if value else None
            except orjson.JSONDecodeError:
                found = None
            return orjson.dumps(found) if is_id(found) else NULL_ID
    return NULL_ID


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


class _Refused:
    """Stands, in a leniently parsed message, for a value orjson cannot hold faithfully."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _refuse_int(text: str) -> int | _Refused:
    value = int(text)
    if not _INT_RANGE[0] <= value <= _INT_RANGE[1]:
        return _Refused(f"the integer {text[:40]}{'...' if len(text) > 40 else ''} exceeds 64 bits")
    return value


def _refuse_float(text: str) -> float | _Refused:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        return _Refused(f"the number {text[:40]} is too large for a double")
    return value


def _refuse_constant(text: str) -> _Refused:
    return _Refused(f"{text} is not JSON")


def _refused(line: bytes) -> Message | list[Message] | None:
    """Valid JSON that orjson cannot represent faithfully (lone surrogates, numbers beyond
    64-bit integers or doubles): refused with the request's id and the reason, instead of a
    parse error; in a batch, only the messages that hold such a value. None when the line is not
    valid JSON after all (or holds nothing refused)."""
    try:
        data = json.loads(
            line, parse_int=_refuse_int, parse_float=_refuse_float, parse_constant=_refuse_constant
        )
    except (ValueError, RecursionError):
        return None
    if isinstance(data, list) and data:
        reasons = [_refusal_in(item) for item in data]
        if all(reason is None for reason in reasons):
            return None
        deep = line.count(b"[") + line.count(b"{") > MAX_DEPTH
        return [
            _checked(item, deep) if reason is None else _refusal(item, reason)
            for item, reason in zip(data, reasons, strict=True)
        ]
    reason = _refusal_in(data)
    return None if reason is None else _refusal(data, reason)


def _refusal(message: Any, reason: str) -> Invalid | Notification:
    """The answer to one message holding a refused value (a notification gets none)."""
    if isinstance(message, dict) and "id" not in message and isinstance(message.get("method"), str):
        return Notification("", {})  # a notification gets no answer, not even this one
    id_bytes = NULL_ID
    if isinstance(message, dict) and is_id(message.get("id")):  # (a refused number is no id)
        with contextlib.suppress(orjson.JSONEncodeError):  # the id itself may be what was refused
            id_bytes = orjson.dumps(message["id"])
    return Invalid(id_bytes, INVALID_PARAMS, f"Invalid params: {reason}")


_LONE_SURROGATE = "a string holds a lone UTF-16 surrogate escape (such as \\ud800), which is not Unicode text"


def _refusal_in(value: Any) -> str | None:
    """Why a leniently parsed value cannot be taken: the first refused value in document order
    or a lone surrogate; None when it can."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Refused):
            return item.reason
        if isinstance(item, str):
            try:
                item.encode()
            except UnicodeEncodeError:
                return _LONE_SURROGATE
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                stack += (child, key)
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return None


def parse_leniently(line: bytes) -> Any:
    """What orjson refuses to parse but decode() takes (a value it cannot hold, a batch nested
    too deep in one message), parsed as orjson would if it could: a refused number is a float
    (it is no id, and decode() refuses the message that holds it)."""
    return json.loads(line, parse_int=_int_as_orjson, parse_constant=float)


def _int_as_orjson(text: str) -> int | float:
    value = int(text)
    return value if _INT_RANGE[0] <= value <= _INT_RANGE[1] else float(text)


def classify(data: Any) -> Message:
    if not isinstance(data, dict):
        return Invalid(NULL_ID, INVALID_REQUEST, "Invalid Request: a message must be a JSON object")
    has_id = "id" in data
    raw_id = data.get("id")
    good_id = has_id and is_id(raw_id)
    id_bytes = orjson.dumps(raw_id) if good_id else NULL_ID
    if data.get("jsonrpc") != "2.0":
        return Invalid(id_bytes, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    method = data.get("method")
    if method is None:
        if good_id and ("result" in data or "error" in data):
            return Response(id_bytes, data)
        return Invalid(id_bytes, INVALID_REQUEST, 'Invalid Request: missing "method"')
    if not isinstance(method, str):
        return Invalid(id_bytes, INVALID_REQUEST, 'Invalid Request: "method" must be a string')
    params = data.get("params", {})
    if has_id and not good_id:
        return Invalid(NULL_ID, INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer')
    if not isinstance(params, dict):
        if not has_id:
            return Notification(method, {})
        return Invalid(id_bytes, INVALID_PARAMS, 'Invalid params: "params" must be an object')
    if has_id:
        return Request(id_bytes, method, params)
    return Notification(method, params)


def result(id_: bytes, value: Any) -> bytes:
    return b'{"jsonrpc":"2.0","id":' + id_ + b',"result":' + orjson.dumps(value) + b"}"


def raw_result(id_: bytes, *encoded: bytes) -> bytes:
    """A response whose result is already JSON-encoded (given whole or in pieces)."""
    return b"".join([b'{"jsonrpc":"2.0","id":', id_, b',"result":', *encoded, b"}"])


def error(id_: bytes, code: int, message: str, data: Any = None) -> bytes:
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return b'{"jsonrpc":"2.0","id":' + id_ + b',"error":' + orjson.dumps(body) + b"}"


def notification(method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return orjson.dumps(message)


def request(id_: int | str, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return orjson.dumps(message)
