"""The sandbox proxy of the playground's MCP Apps host (extension `io.modelcontextprotocol/ui`,
2026-01-26): a page on a second loopback port, so on another origin than the playground's, as
the spec requires of a web host. The playground page frames it (sandbox `allow-scripts
allow-same-origin`); it writes the app's HTML into an inner frame and relays messages both
ways. The app's declared CSP (`_meta.ui.csp`, passed as `?csp=`) is this page's
Content-Security-Policy header, which the inner frame inherits: a header, not a meta tag the
app's HTML could come before.

No token here: the app runs on this origin, and nothing this origin serves is secret (the
page and its script); the playground's token never reaches it."""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

# A CSP source the app may declare: a scheme and host (a leading `*.` allowed) and a port;
# anything else (quotes, `;`, spaces: a way to add directives or keywords) is dropped.
SOURCE = re.compile(r"(https?|wss?)://(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:(\d{1,5}|\*))?/?")
NO_STORE = {"Cache-Control": "no-store"}


def sources(csp: dict[str, Any], key: str) -> list[str]:
    """The well-formed origins of one `_meta.ui.csp` list."""
    declared = csp.get(key)
    if not isinstance(declared, list):
        return []
    return [s for s in declared if isinstance(s, str) and SOURCE.fullmatch(s)]


def content_security_policy(csp: object) -> str:
    """The CSP for an app from its resource's `_meta.ui.csp` (the spec's construction; no
    declared `connectDomains`: no network at all, as in the spec's restrictive default)."""
    declared = csp if isinstance(csp, dict) else {}
    static = " ".join(sources(declared, "resourceDomains"))
    connect = " ".join(sources(declared, "connectDomains")) or "'none'"
    frames = " ".join(sources(declared, "frameDomains")) or "'none'"
    base = " ".join(sources(declared, "baseUriDomains")) or "'self'"
    directives = [
        "default-src 'none'",
        f"script-src 'self' 'unsafe-inline' {static}",
        f"style-src 'self' 'unsafe-inline' {static}",
        f"img-src 'self' data: {static}",
        f"font-src 'self' {static}",
        f"media-src 'self' data: {static}",
        f"connect-src {connect}",
        f"frame-src {frames}",
        "object-src 'none'",
        f"base-uri {base}",
    ]
    return "; ".join(d.strip() for d in directives)


class Sandbox:
    """The proxy's two files, on its own port; `hosts` are the playground's origins (the
    only parents the proxy talks to)."""

    def __init__(self) -> None:
        self.port = 0
        self.playground_port = 0

    def hosts(self) -> list[str]:
        return [f"http://127.0.0.1:{self.playground_port}", f"http://localhost:{self.playground_port}"]

    def app(self) -> ASGIApp:
        routes = [Route("/proxy", self._proxy), Route("/proxy.js", self._script)]
        return HostGuard(Starlette(routes=routes), self)

    async def _proxy(self, request: Request) -> Response:
        try:
            declared = orjson.loads(request.query_params.get("csp") or "{}")
        except orjson.JSONDecodeError:
            declared = {}
        page = _read("proxy.html").decode().replace("{{HOSTS}}", " ".join(self.hosts()))
        # Only the playground's page may frame the proxy (it also checks its referrer).
        policy = f"{content_security_policy(declared)}; frame-ancestors {' '.join(self.hosts())}"
        headers = {**NO_STORE, "Content-Security-Policy": policy}
        return Response(page, media_type="text/html", headers=headers)

    async def _script(self, request: Request) -> Response:
        return Response(_read("proxy.js"), media_type="text/javascript", headers=NO_STORE)

    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class HostGuard:
    """Only requests naming this port on loopback (no DNS rebinding); otherwise 403."""

    def __init__(self, app: ASGIApp, sandbox: Sandbox) -> None:
        self.app = app
        self.sandbox = sandbox

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        port = self.sandbox.port
        host = Request(scope).headers.get("host") if scope["type"] == "http" else None
        if scope["type"] == "http" and host not in (f"127.0.0.1:{port}", f"localhost:{port}"):
            await Response("forbidden", 403)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _read(name: str) -> bytes:
    return resources.files("protomcp_host.playground").joinpath("static", name).read_bytes()
