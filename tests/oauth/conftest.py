"""An OAuth test bed: a real identity provider (oidc-provider, tests/support/idp.py) and the real
host as the authorization server in front of it (`--oauth-provider oidc:<its issuer>`), and a
scripted browser that goes through protomcp's consent page and the provider's sign-in."""

from __future__ import annotations

import http.cookiejar
import json
import re
import secrets
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from tests.support.hosts import TOOLS
from tests.support.http import HttpHost
from tests.support.idp import IdentityProvider, Response, _NoRedirects, _open, client, pkce_pair, request
from tests.support.ports import free_port

APP_ID, APP_SECRET = "protomcp-app", "app-secret"  # protomcp's registration at the provider
PENDING = re.compile(r'name="pending" value="([^"]+)"')
TOOL_FILE = TOOLS / "streams.py"


@dataclass
class Browser:
    """One browser (one cookie jar) going through sign-ins: protomcp's consent page, then the
    provider's login and consent forms."""

    idp: IdentityProvider | None = None  # (None: a provider without a scripted sign-in page)
    jar: http.cookiejar.CookieJar = field(default_factory=http.cookiejar.CookieJar)

    def open(self, url: str, form: dict[str, str] | None = None, origin: str | None = None) -> Response:
        """GET `url`, or POST `form` to it with the Origin a browser sends (the page's: by
        default the URL's own origin, as for protomcp's consent form)."""
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), _NoRedirects)
        if form is None:
            return _open(opener, urllib.request.Request(url))
        origin = origin or "{0.scheme}://{0.netloc}".format(urllib.parse.urlsplit(url))
        data = urllib.parse.urlencode(form).encode()
        return _open(
            opener, urllib.request.Request(url, data=data, headers={"origin": origin}, method="POST")
        )

    def consent_page(self, authorize_url: str) -> Response:
        return self.open(authorize_url)

    def allow(self, authorize_url: str, decision: str = "allow") -> str:
        """Through the consent page: where protomcp sends the browser next (the provider)."""
        page = self.consent_page(authorize_url)
        assert page.status == 200, (page.status, page.body[:500])
        match = PENDING.search(page.body.decode())
        assert match is not None, page.body[:500]
        origin = "{0.scheme}://{0.netloc}".format(urllib.parse.urlsplit(authorize_url))
        answer = self.open(f"{origin}/oauth/authorize", {"pending": match.group(1), "decision": decision})
        assert answer.status == 303, (answer.status, answer.body[:500])
        return answer.headers["location"]

    def provider_answer(self, authorize_url: str, account: str = "alice") -> str:
        """Consent and sign in at the provider: the provider's redirect back to protomcp."""
        assert self.idp is not None
        return self.idp.sign_in(self.allow(authorize_url), account, cookies=self.jar)

    def sign_in(self, authorize_url: str, account: str = "alice") -> str:
        """The whole sign-in: where protomcp finally sends the browser (the client's redirect URI
        with code, state and iss)."""
        answer = self.open(self.provider_answer(authorize_url, account))
        assert answer.status == 302, (answer.status, answer.body[:500])
        return answer.headers["location"]


@dataclass
class Bed:
    idp: IdentityProvider
    host: HttpHost
    public_url: str
    start_host: Callable[..., HttpHost]

    @property
    def mcp_url(self) -> str:
        return self.public_url + "/mcp"

    def browser(self) -> Browser:
        return Browser(self.idp)


def host_args(idp: IdentityProvider, public_url: str, *extra: str) -> list[str]:
    return [
        "run",
        str(TOOL_FILE),
        "--public-url",
        public_url,
        "--oauth-provider",
        f"oidc:{idp.issuer}",
        "--oauth-client-id-env",
        "APP_ID",
        "--oauth-client-secret-env",
        "APP_SECRET",
        *extra,
    ]


class Beds:
    """Identity providers and hosts in front of them, all stopped by `close`."""

    def __init__(self) -> None:
        self.started: list[Any] = []

    def __call__(self, *extra: str, env: dict[str, str] | None = None) -> Bed:
        """A provider and a host in front of it (`extra`: more host arguments)."""
        port = free_port()
        public_url = f"http://127.0.0.1:{port}"
        idp = IdentityProvider([client(APP_ID, APP_SECRET, [public_url + "/oauth/callback"])])
        self.started.append(idp.__enter__())

        def start_host(*more: str, on: int = port) -> HttpHost:
            """Another host of this server (on the public URL's port, or `on` another)."""
            host = HttpHost(
                *host_args(idp, public_url, *extra, *more),
                env={"APP_ID": APP_ID, "APP_SECRET": APP_SECRET, **(env or {})},
                port=on,
            )
            self.started.append(host)
            return host

        return Bed(idp, start_host(), public_url, start_host)

    def close(self) -> None:
        for thing in reversed(self.started):
            if isinstance(thing, HttpHost):
                thing.terminate()
            else:
                thing.stop()


@pytest.fixture
def bed_factory() -> Iterator[Beds]:
    beds = Beds()
    yield beds
    beds.close()


@pytest.fixture(scope="module")
def bed() -> Iterator[Bed]:
    """One provider and host for a module's tests (each test registers its own clients)."""
    beds = Beds()
    try:
        yield beds()
    finally:
        beds.close()


# -- a client speaking plain HTTP, for the attacks -----------------------------------------------

CLIENT_REDIRECT = "http://127.0.0.1:9/callback"  # never followed: the tests read the redirect


def post_json(url: str, body: Any) -> Response:
    data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"content-type": "application/json"}, method="POST")
    return _open(urllib.request.build_opener(_NoRedirects), req)


def register(bed: Bed, redirect_uris: list[str] | None = None, **metadata: Any) -> str:
    """A dynamic registration (RFC 7591): its client_id."""
    answer = post_json(
        bed.public_url + "/oauth/register",
        {"client_name": "attack test", "redirect_uris": redirect_uris or [CLIENT_REDIRECT], **metadata},
    )
    assert answer.status == 201, answer.body
    return str(answer.json()["client_id"])


@dataclass
class Asked:
    """An authorization request a client made: its URL, and what it must present for the code."""

    url: str
    verifier: str
    state: str


def authorize_url(
    bed: Bed, client_id: str, redirect_uri: str = CLIENT_REDIRECT, **override: str | None
) -> Asked:
    verifier, challenge = pkce_pair()
    state = secrets.token_urlsafe(8)
    params: dict[str, str | None] = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": bed.mcp_url,
        **override,
    }
    query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
    return Asked(f"{bed.public_url}/oauth/authorize?{query}", verifier, state)


def answer_of(location: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))


def code_for(bed: Bed, client_id: str, account: str = "alice") -> tuple[str, Asked]:
    asked = authorize_url(bed, client_id)
    answer = answer_of(bed.browser().sign_in(asked.url, account))
    assert answer["state"] == asked.state and answer["iss"] == bed.public_url + "/", answer
    return answer["code"], asked


def token(bed: Bed, form: dict[str, str], auth: tuple[str, str | None] | None = None) -> Response:
    return request("POST", bed.public_url + "/oauth/token", form=form, auth=auth)


def redeem(bed: Bed, client_id: str, code: str, verifier: str, **extra: str) -> Response:
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": CLIENT_REDIRECT,
        "code_verifier": verifier,
        "client_id": client_id,
        **extra,
    }
    return token(bed, form)


def refresh(bed: Bed, client_id: str, refresh_token: str) -> Response:
    return token(bed, {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id})


def call_tools_list(bed: Bed, access_token: str) -> Response:
    """A tools/list at the MCP endpoint (2025-11-25 initialize would do as well: only the
    token's acceptance matters here)."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
    )
    req = urllib.request.Request(
        bed.mcp_url,
        data=body.encode(),
        headers={
            "authorization": f"Bearer {access_token}",
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        },
        method="POST",
    )
    return _open(urllib.request.build_opener(_NoRedirects), req)


# -- the official Python SDK's OAuth client ------------------------------------------------------


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def sdk_auth(bed: Bed, storage: MemoryStorage, account: str = "alice", **kwargs: Any) -> OAuthClientProvider:
    """The SDK's OAuth client; its browser step is the scripted browser."""
    asked: list[str] = []
    browser = bed.browser()

    async def redirect_handler(url: str) -> None:
        asked.append(url)

    async def callback_handler() -> AuthorizationCodeResult:
        back = await anyio.to_thread.run_sync(browser.sign_in, asked[-1], account)
        answer = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(back).query))
        return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))

    metadata = OAuthClientMetadata(
        client_name="SDK test client",
        redirect_uris=["http://127.0.0.1:33418/callback"],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(bed.mcp_url, metadata, storage, redirect_handler, callback_handler, **kwargs)


async def add_and_whoami(mcp_url: str, auth: OAuthClientProvider) -> tuple[str, dict[str, Any] | None]:
    """Through the SDK's client signed in with `auth`: add(2, 3)'s text, and the claims the
    tool whoami saw."""
    async with (
        httpx2.AsyncClient(auth=auth, timeout=30) as client,
        streamable_http_client(mcp_url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        added = await session.call_tool("add", {"a": 2, "b": 3})
        claims = (await session.call_tool("whoami", {})).structured_content
    return added.content[0].text, claims  # type: ignore[union-attr]


async def call_add(bed: Bed, auth: OAuthClientProvider) -> Any:
    async with (
        httpx2.AsyncClient(auth=auth, timeout=30) as client,
        streamable_http_client(bed.mcp_url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await session.call_tool("add", {"a": 2, "b": 3})
