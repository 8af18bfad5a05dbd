"""What every HTTP request passes before it reaches MCP: DNS-rebinding protection (Host and
Origin checks), CORS for the browser origins those checks accept (preflights answered here,
Access-Control-Allow-Origin on their responses), authentication, and the body-size limit
announced by Content-Length.

A refusal explains itself and names the flag that would allow the request, because the
person reading it is usually setting up a reverse proxy or a browser client."""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from ipaddress import ip_address
from typing import Any, Protocol

from protomcp_host.transports.http.asgi import ASGIApp, Receive, Scope, Send, header, refuse, respond

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})
IDENTITY = "protomcp.identity"  # scope["state"] key: who the authenticated caller is
# CORS: what a browser page from an accepted origin may send, and read, across origins.
CORS_METHODS = b"GET, POST, DELETE, OPTIONS"
CORS_REQUEST_HEADERS = (
    b"Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID"
)
CORS_EXPOSED_HEADERS = b"Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate"
CORS_MAX_AGE = b"600"  # seconds a browser may reuse a preflight's answer
KNOWN_HOSTS = 64  # Host values remembered as allowed (clients send a few; any more are checked anew)


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


# RFC 9110 Host (and an origin's authority): a name or an IP literal in brackets, then an optional
# port of digits, and nothing else (no user info, no second colon, nothing after the bracket).
_AUTHORITY = re.compile(r"(\[[0-9a-f:.]+\]|[^:\[\]@/\\\s]+)(?::[0-9]*)?")


def _hostname(host_header: str) -> str | None:
    """`example.com:8000` -> `example.com`; `[::1]:8000` -> `[::1]`; None for anything that is
    not a host and port (`[::1]evil.com`, `localhost:evil.com`)."""
    match = _AUTHORITY.fullmatch(host_header)
    return None if match is None else match.group(1)


def _origin_hostname(origin: str) -> str | None:
    """The host of an origin (`scheme://host[:port]`, lower case); None for anything else."""
    scheme, sep, authority = origin.partition("://")
    if not sep or scheme not in ("http", "https"):
        return None
    return _hostname(authority)


def _duplicated(scope: Scope) -> str | None:
    """The name of a Host or Origin header the request sends more than once (which of them a
    proxy or a browser meant cannot be told; the checks below read one)."""
    hosts = origins = 0
    for name, _ in scope["headers"]:
        if name == b"host":
            hosts += 1
        elif name == b"origin":
            origins += 1
    return "Host" if hosts > 1 else "Origin" if origins > 1 else None


@dataclass(frozen=True)
class Refusal:
    status: int
    message: str
    headers: tuple[tuple[bytes, bytes], ...] = ()


@dataclass(frozen=True)
class Identity:
    """Who an authenticated request comes from."""

    principal: str  # sessions are bound to it
    claims: dict[str, Any] | None = None  # verified token claims, which tools see (never the token)
    # OAuth: the 403 for a request that needs more scopes than the token grants (step_up.py),
    # given those scopes and what says why
    step_up: Callable[[Sequence[str], str], Refusal] | None = field(default=None, compare=False, repr=False)


def identity_of(scope: Scope) -> Identity | None:
    """Who the guard authenticated for this request; None without authentication."""
    state = scope.get("state")
    return None if state is None else state.get(IDENTITY)


class Authenticator(Protocol):
    async def check(self, authorization: str | None) -> Refusal | Identity:
        """Who is calling when the request may go on; otherwise the answer that refuses it."""
        ...


class BearerToken:
    """A shared secret in `Authorization: Bearer <token>`, compared in constant time."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    async def check(self, authorization: str | None) -> Refusal | Identity:
        scheme, _, presented = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not presented.strip():
            return Refusal(
                401,
                "Unauthorized: send the token as 'Authorization: Bearer <token>'",
                ((b"www-authenticate", b'Bearer realm="protomcp"'),),
            )
        if not hmac.compare_digest(presented.strip().encode(), self._token):
            return Refusal(
                401,
                "Unauthorized: the bearer token is not valid",
                ((b"www-authenticate", b'Bearer realm="protomcp", error="invalid_token"'),),
            )
        return Identity("token holder")


class Guard:
    def __init__(
        self,
        app: ASGIApp,
        *,
        bind: str,
        allow_hosts: Iterable[str] = (),
        allow_origins: Iterable[str] = (),
        auth: Authenticator | None = None,
        max_body: int,
        public_paths: Iterable[str] = (),
        path_auth: Mapping[str, Authenticator | None] | None = None,
        any_origin_paths: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.allow_hosts = {h.lower() for h in allow_hosts}
        # A wildcard bind cannot know its public names: Host is then checked only against
        # --allow-host when given (Origin is always checked).
        self.check_host = bind not in WILDCARD_BINDS or bool(self.allow_hosts)
        self.bind = bind.lower()
        self.allow_origins = {o.rstrip("/").lower() for o in allow_origins}
        self.auth = auth
        self.max_body = max_body
        self.public_paths = frozenset(public_paths)
        # Paths whose callers prove who they are otherwise (the peers' /bridge: their own token).
        self.path_auth = dict(path_auth or {})
        # Paths a page of any origin may call (with CORS): they act on no ambient credential, so
        # DNS rebinding gains nothing there (the OAuth metadata, token and registration endpoints).
        self.any_origin_paths = frozenset(any_origin_paths)
        # Host values found allowed (every request sends one: the parse is done once per value)
        self._allowed_hosts: set[str] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.inspect(scope)
        if refusal is None:
            origin = header(scope, b"origin")
            if origin is not None:  # a browser page from an origin the checks accept
                if scope["method"] == "OPTIONS" and header(scope, b"access-control-request-method"):
                    await respond(send, 204, headers=_preflight(origin))  # never authenticated
                    return
                send = _with_cors(send, origin)
        auth = self.path_auth.get(scope["path"], self.auth)
        if refusal is None and auth is not None and scope["path"] not in self.public_paths:
            checked = await auth.check(header(scope, b"authorization"))
            if isinstance(checked, Refusal):
                refusal = checked
            else:
                scope.setdefault("state", {})[IDENTITY] = checked
        if refusal is not None:
            await refuse(send, refusal.status, refusal.message, refusal.headers)
            return
        await self.app(scope, receive, send)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket handshake passes the same Host, Origin and authentication checks (the
        path's own, for /bridge); a refused one is closed before it is accepted (HTTP 403), with
        the refusal's message as the body where the server can (ASGI's denial response)."""
        refusal = self._check_names(scope)
        auth = self.path_auth.get(scope["path"], self.auth)
        if refusal is None and auth is not None:
            checked = await auth.check(header(scope, b"authorization"))
            if isinstance(checked, Refusal):
                refusal = checked
            else:
                scope.setdefault("state", {})[IDENTITY] = checked
        if refusal is None:
            await self.app(scope, receive, send)
            return
        await receive()  # websocket.connect
        if "websocket.http.response" in scope.get("extensions", {}):
            body = (refusal.message + "\n").encode()
            headers = [(b"content-type", b"text/plain; charset=utf-8"), *refusal.headers]
            start = {"type": "websocket.http.response.start", "status": 403, "headers": headers}
            await send(start)
            await send({"type": "websocket.http.response.body", "body": body})
            return
        await send({"type": "websocket.close", "code": 1008, "reason": refusal.message[:120]})

    def inspect(self, scope: Scope) -> Refusal | None:
        """The checks that need no I/O: Host, Origin, declared body size."""
        refusal = self._check_names(scope)
        if refusal is not None:
            return refusal
        length = header(scope, b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            return Refusal(413, f"Payload Too Large: the limit is {self.max_body} bytes (--max-body)")
        return None

    def _check_names(self, scope: Scope) -> Refusal | None:
        """DNS-rebinding protection: one Host and at most one Origin, both allowed."""
        duplicated = _duplicated(scope)
        if duplicated is not None:
            return Refusal(400, f"Bad Request: the {duplicated} header is sent more than once")
        refusal = self._check_host(header(scope, b"host"))
        if refusal is not None or scope.get("path") in self.any_origin_paths:
            return refusal
        return self._check_origin(header(scope, b"origin"))

    def _check_host(self, value: str | None) -> Refusal | None:
        if not self.check_host or value in self._allowed_hosts:
            return None
        if value is None:
            return Refusal(400, "Bad Request: missing Host header")
        refusal = self._check_new_host(value)
        if refusal is None and len(self._allowed_hosts) < KNOWN_HOSTS:
            self._allowed_hosts.add(value)
        return refusal

    def _check_new_host(self, value: str) -> Refusal | None:
        value = value.lower()
        name = _hostname(value)
        if name is None:
            return Refusal(400, f"Bad Request: Host {value!r} is not a host name and port")
        if "*" in self.allow_hosts or value in self.allow_hosts or name in self.allow_hosts:
            return None
        if is_loopback(name) or name == self.bind or name.strip("[]") == self.bind:
            return None
        return Refusal(
            403,
            f"Forbidden: Host {value!r} is not allowed (protection against DNS rebinding). "
            f"If clients reach this server by that name, e.g. through a reverse proxy, "
            f"start protomcp with --allow-host {name}",
        )

    def _check_origin(self, value: str | None) -> Refusal | None:
        if value is None:  # not a browser: DNS rebinding needs one
            return None
        origin = value.rstrip("/").lower()
        if "*" in self.allow_origins or origin in self.allow_origins:
            return None
        name = _origin_hostname(origin)
        if name is not None and is_loopback(name):
            return None
        return Refusal(
            403,
            f"Forbidden: Origin {value!r} is not allowed (protection against DNS rebinding). "
            f"To let web pages from it call this server, start protomcp with --allow-origin {origin}",
        )


def _preflight(origin: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-allow-methods", CORS_METHODS),
        (b"access-control-allow-headers", CORS_REQUEST_HEADERS),
        (b"access-control-max-age", CORS_MAX_AGE),
        (b"vary", b"Origin"),
    ]


def _with_cors(send: Send, origin: str) -> Send:
    """`send` adding the CORS headers that let the page read the response (refusals included:
    a browser client needs a 401's WWW-Authenticate to find the authorization server)."""
    extra = [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-expose-headers", CORS_EXPOSED_HEADERS),
        (b"vary", b"Origin"),
    ]

    async def send_with_cors(message: Any) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", ()), *extra]
        await send(message)

    return send_with_cors
