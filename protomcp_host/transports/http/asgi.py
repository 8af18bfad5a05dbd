"""Small ASGI helpers shared by the HTTP transports: headers, bodies, plain answers."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

import anyio
import orjson

from protomcp_host.protocol import jsonrpc as rpc

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Headers = Iterable[tuple[bytes, bytes]]


class BodyTooLarge(Exception):
    pass


class ClientGone(Exception):
    pass


def header(scope: Scope, name: bytes) -> str | None:
    """The value of one request header (`name` in lower case), or None. The headers are put in
    a dict on first use: a request is asked for about ten of them."""
    headers = scope.get("protomcp.headers")
    if headers is None:
        headers = scope["protomcp.headers"] = dict(scope["headers"])
    value = headers.get(name)
    return None if value is None else value.decode("latin-1")


async def read_body(receive: Receive, limit: int, timeout: float) -> bytes:
    """The whole request body. Raises BodyTooLarge past `limit` bytes, TimeoutError when the
    client sends too slowly, ClientGone when it disconnects."""
    parts: list[bytes] = []
    size = 0
    # (asyncio's own timeout, not a cancel scope: every POST reads its body here, most of them
    # in one message already there, and a cancel scope costs each several times more)
    async with asyncio.timeout(timeout):
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientGone
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts)


async def respond(
    send: Send,
    status: int,
    body: bytes = b"",
    *,
    content_type: bytes | None = None,
    headers: Headers = (),
) -> None:
    raw = [*headers]
    if content_type is not None:
        raw.append((b"content-type", content_type))
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


async def respond_json(send: Send, status: int, data: bytes, headers: Headers = ()) -> None:
    await respond(send, status, data, content_type=b"application/json", headers=headers)


async def refuse(send: Send, status: int, message: str, headers: Headers = (), code: int = -32600) -> None:
    """An HTTP error whose body is a JSON-RPC error that says why, for clients that show it."""
    await respond_json(send, status, rpc.error(rpc.NULL_ID, code, message), headers)


def json_body(value: Any) -> bytes:
    return orjson.dumps(value)


async def read_json(receive: Receive, send: Send, limit: int, timeout: float) -> tuple[bytes, Any] | None:
    """Read a POSTed JSON-RPC body and parse it; None when the request was refused (and
    answered: 413, 408, 400) or the client went away."""
    try:
        body = await read_body(receive, limit, timeout)
    except BodyTooLarge:
        await refuse(send, 413, f"Payload Too Large: the limit is {limit} bytes")
        return None
    except TimeoutError:
        await refuse(send, 408, "Request Timeout: the request body arrived too slowly")
        return None
    except ClientGone:
        return None
    try:
        return body, orjson.loads(body)
    except orjson.JSONDecodeError:
        pass
    # Not for orjson: answered by the rules stdio answers it by (a message nested too deep, a
    # value orjson cannot hold: refused with the request's id; else a parse error).
    decoded = rpc.decode(body)
    if isinstance(decoded, rpc.Invalid):
        await respond_json(send, 400, rpc.error(decoded.id, decoded.code, decoded.message))
        return None
    if isinstance(decoded, rpc.Notification):  # (one holding a refused value): nothing to answer
        await respond(send, 202)
        return None
    return body, rpc.parse_leniently(body)  # a batch: its session answers each message


async def disconnected(receive: Receive) -> None:
    """Return once the client disconnects (or the server's receive fails: as good as gone).
    Run in a plain task beside a wait that must end then."""
    try:
        while (await receive())["type"] != "http.disconnect":
            pass
    except Exception:
        pass


async def cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    """Cancel `scope` once the client disconnects (run beside what answers it)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()
