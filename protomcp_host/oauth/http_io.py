"""The HTTP side of the authorization server's endpoints: forms in, JSON errors (RFC 6749 §5.2)
and redirects out, the cookie that binds a sign-in to its browser, and client authentication
at the token and revocation endpoints (client_secret_basic, client_secret_post, or none)."""

from __future__ import annotations

import base64
import binascii
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

import orjson

from protomcp_host.transports.http.asgi import (
    BodyTooLarge,
    ClientGone,
    Receive,
    Scope,
    Send,
    header,
    read_body,
    respond,
    respond_json,
)

MAX_FORM = 64 * 1024  # bytes of a form or registration body
BODY_TIMEOUT = 10.0  # seconds a body may take to arrive
NO_STORE = ((b"cache-control", b"no-store"), (b"pragma", b"no-cache"))
COOKIE = "protomcp-authorization"  # the pending authorization this browser consented to


class BadRequest(Exception):
    """A request the endpoint answers with `error` (400 unless `status` says otherwise)."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status


async def read_form(scope: Scope, receive: Receive) -> dict[str, str]:
    """An application/x-www-form-urlencoded body, each parameter once (RFC 6749 §3.1)."""
    kind = (header(scope, b"content-type") or "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise BadRequest("invalid_request", "the body must be application/x-www-form-urlencoded")
    pairs = parse_qsl((await _body(receive)).decode("utf-8", "replace"), keep_blank_values=True)
    return _once(pairs)


async def read_json_object(receive: Receive) -> Any:
    try:
        return orjson.loads(await _body(receive))
    except orjson.JSONDecodeError:
        raise BadRequest("invalid_client_metadata", "the body is not JSON") from None


async def _body(receive: Receive) -> bytes:
    try:
        return await read_body(receive, MAX_FORM, BODY_TIMEOUT)
    except BodyTooLarge:
        raise BadRequest("invalid_request", f"the body is larger than {MAX_FORM} bytes", 413) from None
    except (TimeoutError, ClientGone):
        raise BadRequest("invalid_request", "the body did not arrive", 408) from None


def query(scope: Scope) -> dict[str, str]:
    return _once(parse_qsl(scope.get("query_string", b"").decode("utf-8", "replace"), keep_blank_values=True))


def _once(pairs: list[tuple[str, str]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in pairs:
        if name in found:
            raise BadRequest("invalid_request", f"the parameter {name} is given twice")
        found[name] = value
    return found


async def error_json(send: Send, problem: BadRequest, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    body = {"error": problem.error, "error_description": problem.description}
    await respond_json(send, problem.status, orjson.dumps(body), (*NO_STORE, *headers))


async def refused_unless_post(scope: Scope, send: Send) -> bool:
    """True once a request that is not a POST was answered 405 (the endpoints take forms)."""
    if scope["method"] == "POST":
        return False
    await error_json(send, BadRequest("invalid_request", "use POST", 405), ((b"allow", b"POST"),))
    return True


async def answer_json(send: Send, status: int, body: dict[str, Any]) -> None:
    await respond_json(send, status, orjson.dumps(body), NO_STORE)


def with_query(url: str, params: dict[str, str]) -> str:
    """`url` with `params` added to its query (RFC 6749 §3.1.2: its own query is kept)."""
    parts = urlsplit(url)
    extra = urlencode(params)
    return urlunsplit(parts._replace(query=f"{parts.query}&{extra}" if parts.query else extra))


async def redirect(
    send: Send, url: str, status: int = 302, headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    await respond(send, status, headers=((b"location", url.encode()), *NO_STORE, *headers))


def cookie_of(scope: Scope, name: str = COOKIE) -> str | None:
    for part in (header(scope, b"cookie") or "").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return unquote(value)
    return None


def set_cookie(value: str, secure: bool, max_age: int) -> tuple[bytes, bytes]:
    """The browser-binding cookie: HttpOnly, SameSite=Lax (sent on the provider's top-level
    redirect back, not on a cross-site POST), only to /oauth/."""
    attributes = f"{COOKIE}={quote(value)}; Path=/oauth/; HttpOnly; SameSite=Lax; Max-Age={max_age}"
    if secure:
        attributes += "; Secure"
    return (b"set-cookie", attributes.encode())


def client_credentials(scope: Scope, form: dict[str, str]) -> tuple[str, str | None, str]:
    """(client_id, secret or None, how it was sent). Raises BadRequest (401 invalid_client)."""
    authorization = header(scope, b"authorization")
    if authorization is not None:
        scheme, _, encoded = authorization.partition(" ")
        if scheme.lower() != "basic":
            raise BadRequest("invalid_client", "only Basic client authentication is accepted", 401)
        try:
            decoded = base64.b64decode(encoded.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise BadRequest("invalid_client", "the Basic credentials are malformed", 401) from None
        client_id, sep, secret = decoded.partition(":")
        if not sep:
            raise BadRequest("invalid_client", "the Basic credentials are malformed", 401)
        return unquote(client_id.replace("+", " ")), unquote(secret.replace("+", " ")), "client_secret_basic"
    named = form.get("client_id")
    if not named:
        raise BadRequest("invalid_client", "the request names no client (client_id)", 401)
    posted = form.get("client_secret")
    return named, posted, "client_secret_post" if posted is not None else "none"
