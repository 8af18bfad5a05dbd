"""JSON-RPC 2.0 message rules, without I/O.

``decode`` turns one line into a :class:`Request`, :class:`Notification`,
:class:`Response` or :class:`Invalid`, or a list of them for a batch. The encoders
return the bytes of one message (no newline). Request ids are carried as their
original JSON bytes so an id is echoed exactly as the client sent it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

NULL_ID = b"null"


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
        return Invalid(NULL_ID, PARSE_ERROR, f"Parse error: {exc}")
    if isinstance(data, list):
        if not data:
            return Invalid(NULL_ID, INVALID_REQUEST, "Invalid Request: empty batch")
        return [classify(item) for item in data]
    return classify(data)


def _valid_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def classify(data: Any) -> Message:
    if not isinstance(data, dict):
        return Invalid(NULL_ID, INVALID_REQUEST, "Invalid Request: a message must be a JSON object")
    has_id = "id" in data
    raw_id = data.get("id")
    id_bytes = orjson.dumps(raw_id) if has_id and _valid_id(raw_id) else NULL_ID
    if data.get("jsonrpc") != "2.0":
        return Invalid(id_bytes, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    method = data.get("method")
    if method is None:
        if has_id and ("result" in data or "error" in data) and _valid_id(raw_id):
            return Response(id_bytes, data)
        return Invalid(id_bytes, INVALID_REQUEST, 'Invalid Request: missing "method"')
    if not isinstance(method, str):
        return Invalid(id_bytes, INVALID_REQUEST, 'Invalid Request: "method" must be a string')
    params = data.get("params", {})
    if has_id and not _valid_id(raw_id):
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
