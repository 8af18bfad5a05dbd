"""An OAuth test bed: a real identity provider (oidc-provider, tests/support/idp.py) and the real
host as the authorization server in front of it (`--oauth-provider oidc:<its issuer>`), and a
scripted browser that goes through protomcp's consent page and the provider's sign-in."""

from __future__ import annotations

import http.cookiejar
import re
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.support.hosts import TOOLS
from tests.support.http import HttpHost
from tests.support.idp import IdentityProvider, Response, _NoRedirects, _open, client
from tests.support.ports import free_port

APP_ID, APP_SECRET = "protomcp-app", "app-secret"  # protomcp's registration at the provider
PENDING = re.compile(r'name="pending" value="([^"]+)"')
TOOL_FILE = TOOLS / "streams.py"


@dataclass
class Browser:
    """One browser (one cookie jar) going through sign-ins: protomcp's consent page, then the
    provider's login and consent forms."""

    idp: IdentityProvider
    jar: http.cookiejar.CookieJar = field(default_factory=http.cookiejar.CookieJar)

    def open(self, url: str, form: dict[str, str] | None = None) -> Response:
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), _NoRedirects)
        data = None if form is None else urllib.parse.urlencode(form).encode()
        return _open(opener, urllib.request.Request(url, data=data, method="POST" if form else "GET"))

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


@pytest.fixture
def bed_factory() -> Iterator[Callable[..., Bed]]:
    """Start an identity provider and a host in front of it (extra host arguments, env)."""
    started: list[Any] = []

    def start(*extra: str, env: dict[str, str] | None = None) -> Bed:
        port = free_port()
        public_url = f"http://127.0.0.1:{port}"
        idp = IdentityProvider([client(APP_ID, APP_SECRET, [public_url + "/oauth/callback"])])
        started.append(idp.__enter__())

        def start_host(*more: str) -> HttpHost:
            host = HttpHost(
                *host_args(idp, public_url, *extra, *more),
                env={"APP_ID": APP_ID, "APP_SECRET": APP_SECRET, **(env or {})},
                port=port,
            )
            started.append(host)
            return host

        return Bed(idp, start_host(), public_url, start_host)

    yield start
    for thing in reversed(started):
        if isinstance(thing, HttpHost):
            thing.terminate()
        else:
            thing.stop()


@pytest.fixture
def bed(bed_factory: Callable[..., Bed]) -> Bed:
    return bed_factory()
