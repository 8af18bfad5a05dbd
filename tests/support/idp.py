"""A real OpenID Provider for the OAuth tests: npm `oidc-provider` (certified), pinned in
tests/oauth/idp/package.json and started by tests/oauth/idp/idp.mjs on a free loopback port.

    with IdentityProvider([client("app", "secret", ["http://127.0.0.1:8000/oauth/callback"])]) as idp:
        idp.issuer                                   # http://127.0.0.1:PORT, discovery below it
        idp.sign_in(authorize_url, "alice")          # -> where the provider sends the browser back
        idp.user_token("app", "secret", "alice", resource=...)   # the whole code flow, PKCE

Its sign-in is scripted: the provider's login and consent pages are plain HTML forms, answered here
with form posts (the account id is the login field; every account exists) — no browser. Only the
standard library talks to it, so a test needs no HTTP client of ours. The process exits when its
stdin closes, so it never outlives the test process even if that one is killed.
"""

from __future__ import annotations

import base64
import hashlib
import http.cookiejar
import json
import os
import re
import secrets
import shutil
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from tests.support.hosts import ROOT
from tests.support.installed import missing

IDP = ROOT / "tests" / "oauth" / "idp"  # its package.json pins oidc-provider and the Node it needs
NODE = IDP / "node_modules" / ".bin" / "node"
START_TIMEOUT = 30.0
HTTP_TIMEOUT = 10.0
MAX_HOPS = 20  # redirects followed by sign_in before it gives up (a loop is a bug, not a wait)
PROMPT = re.compile(r'name="prompt" value="(\w+)"')


def client(
    client_id: str,
    secret: str | None,
    redirect_uris: list[str],
    grant_types: tuple[str, ...] = ("authorization_code", "refresh_token", "client_credentials"),
) -> dict[str, Any]:
    """A client registered at the provider: confidential (client_secret_basic) with a secret,
    public (PKCE only) without one."""
    metadata: dict[str, Any] = {
        "client_id": client_id,
        "redirect_uris": redirect_uris,
        "grant_types": list(grant_types),
        "response_types": ["code"] if "authorization_code" in grant_types else [],
    }
    if secret is None:
        metadata["token_endpoint_auth_method"] = "none"
        metadata["grant_types"] = [g for g in grant_types if g != "client_credentials"]
    else:
        metadata["client_secret"] = secret
    return metadata


def pkce_pair() -> tuple[str, str]:
    """(verifier, S256 challenge)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # sign_in follows redirects itself, to see each hop


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class IdentityProvider:
    """oidc-provider on a free loopback port, for as long as the `with` block lasts.

    clients: client metadata as oidc-provider takes it (see `client()`).
    access_token_format: "opaque" (introspect them) or "jwt" (verify them with its JWKS) for access
    tokens issued for a resource (RFC 8707); tokens without a resource are always opaque.
    """

    def __init__(
        self,
        clients: list[dict[str, Any]],
        *,
        access_token_format: str = "opaque",
        access_token_ttl: int = 600,
        resource_scopes: str = "mcp:read mcp:write",
    ) -> None:
        self.clients = clients
        self.env = {
            "IDP_CLIENTS": json.dumps(clients),
            "IDP_ACCESS_TOKEN_FORMAT": access_token_format,
            "IDP_ACCESS_TOKEN_TTL": str(access_token_ttl),
            "IDP_RESOURCE_SCOPES": resource_scopes,
        }
        self.stderr: list[str] = []
        self.issuer = ""
        self._discovery: dict[str, Any] | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    # -- the process ---------------------------------------------------------------------------

    def __enter__(self) -> IdentityProvider:
        if not NODE.exists():
            why = "npm is not installed" if shutil.which("npm") is None else "it is not installed"
            missing(f"needs oidc-provider from npm ({why}): run `npm ci` in tests/oauth/idp")
        self.proc = subprocess.Popen(
            [str(NODE), str(IDP / "idp.mjs"), "0"],
            cwd=IDP,
            stdin=subprocess.PIPE,  # closed on exit: the provider exits when it sees EOF
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **self.env},
            start_new_session=True,
        )
        threading.Thread(target=self._read_stderr, daemon=True).start()
        ready = threading.Thread(target=self._read_issuer, daemon=True)
        ready.start()
        ready.join(START_TIMEOUT)
        if not self.issuer:
            self.stop()
            raise RuntimeError(f"oidc-provider did not start within {START_TIMEOUT}s: {self.stderr}")
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _read_issuer(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        self.issuer = self.proc.stdout.readline().decode().strip()

    def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr.append(raw.decode(errors="replace").rstrip("\n"))

    def stop(self) -> None:
        """End the provider and reap it (idempotent)."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        assert proc.stdin is not None
        proc.stdin.close()  # EOF: it exits by itself
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()

    # -- HTTP ----------------------------------------------------------------------------------

    def discovery(self) -> dict[str, Any]:
        """Its OpenID Provider metadata (/.well-known/openid-configuration), read once."""
        if self._discovery is None:
            self._discovery = request("GET", f"{self.issuer}/.well-known/openid-configuration").json()
        assert self._discovery is not None
        return self._discovery

    def endpoint(self, name: str) -> str:
        """An endpoint from discovery: "token", "introspection", "revocation", "userinfo"..."""
        return str(self.discovery()[f"{name}_endpoint"])

    def token(self, form: dict[str, str], client_id: str, secret: str | None) -> Response:
        """A POST to its token endpoint (client_secret_basic, or client_id in the form if public)."""
        return request("POST", self.endpoint("token"), form=form, auth=(client_id, secret))

    def client_credentials(
        self, client_id: str, secret: str, *, resource: str | None = None, scope: str | None = None
    ) -> dict[str, Any]:
        """An access token for the client itself (grant client_credentials)."""
        form = {"grant_type": "client_credentials"}
        form |= {"resource": resource} if resource else {}
        form |= {"scope": scope} if scope else {}
        response = self.token(form, client_id, secret)
        assert response.status == 200, response.body
        result: dict[str, Any] = response.json()
        return result

    def introspect(self, token: str, client_id: str, secret: str) -> dict[str, Any]:
        """RFC 7662 introspection of `token`, authenticated as the client."""
        form = {"token": token}
        response = request("POST", self.endpoint("introspection"), form=form, auth=(client_id, secret))
        assert response.status == 200, response.body
        result: dict[str, Any] = response.json()
        return result

    def sign_in(self, url: str, account: str, *, cookies: http.cookiejar.CookieJar | None = None) -> str:
        """Follow redirects from `url` (an authorization request, to the provider or to a server
        that sends the browser to it), answering the provider's login form as `account` and its
        consent form; return the first redirect that leaves the provider afterwards (its
        authorization response: code, state, iss) without following it. Pass `cookies` to share
        a browser's cookie jar with the rest of a flow."""
        jar = cookies if cookies is not None else http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirects)
        visited_provider = False
        for _ in range(MAX_HOPS):
            at_provider = url.startswith(self.issuer + "/")
            if visited_provider and not at_provider:
                return url
            visited_provider |= at_provider
            response = _open(opener, urllib.request.Request(url))
            if response.status in (302, 303):
                url = urllib.parse.urljoin(url, response.headers["location"])
                continue
            prompt = PROMPT.search(response.body.decode())
            if response.status != 200 or not at_provider or prompt is None:
                raise AssertionError(f"sign-in stopped at {url}: {response.status} {response.body[:500]!r}")
            form = {"prompt": prompt.group(1)}
            if prompt.group(1) == "login":
                form |= {"login": account, "password": "any"}
            submit = urllib.request.Request(url, data=urllib.parse.urlencode(form).encode(), method="POST")
            response = _open(opener, submit)
            assert response.status in (302, 303), (response.status, response.body[:500])
            url = urllib.parse.urljoin(url, response.headers["location"])
        raise AssertionError(f"sign-in did not end within {MAX_HOPS} redirects (last: {url})")

    def user_token(
        self,
        client_id: str,
        secret: str | None,
        account: str,
        *,
        redirect_uri: str | None = None,
        resource: str | None = None,
        scope: str = "openid",
    ) -> dict[str, Any]:
        """The whole authorization-code flow with PKCE for `account`: its token response."""
        [registered] = [c for c in self.clients if c["client_id"] == client_id]
        redirect_uri = redirect_uri or registered["redirect_uris"][0]
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(16)
        query = {
            "client_id": client_id,
            "response_type": "code",
            "redirect_uri": redirect_uri,
            "scope": scope,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        query |= {"resource": resource} if resource else {}
        if "offline_access" in scope.split():
            query["prompt"] = "consent"  # oidc-provider issues refresh tokens only then
        back = self.sign_in(f"{self.endpoint('authorization')}?{urllib.parse.urlencode(query)}", account)
        answer = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(back).query))
        assert answer.get("state") == state and "code" in answer, back
        form = {"grant_type": "authorization_code", "code": answer["code"], "redirect_uri": redirect_uri}
        form |= {"code_verifier": verifier} | ({"resource": resource} if resource else {})
        response = self.token(form, client_id, secret)
        assert response.status == 200, response.body
        result: dict[str, Any] = response.json()
        return result


def request(
    method: str,
    url: str,
    *,
    form: dict[str, str] | None = None,
    auth: tuple[str, str | None] | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """One HTTP exchange, redirects not followed, errors returned rather than raised."""
    data = None if form is None else dict(form)
    sent = dict(headers or {})
    if auth is not None:
        client_id, secret = auth
        if secret is None:
            data = (data or {}) | {"client_id": client_id}
        else:
            pair = f"{urllib.parse.quote(client_id)}:{urllib.parse.quote(secret)}"
            sent["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    body = None if data is None else urllib.parse.urlencode(data).encode()
    opener = urllib.request.build_opener(_NoRedirects)
    return _open(opener, urllib.request.Request(url, data=body, headers=sent, method=method))


def _open(opener: urllib.request.OpenerDirector, req: urllib.request.Request) -> Response:
    try:
        with opener.open(req, timeout=HTTP_TIMEOUT) as answer:
            return Response(answer.status, {k.lower(): v for k, v in answer.headers.items()}, answer.read())
    except urllib.error.HTTPError as error:  # 3xx (not followed) and 4xx/5xx land here
        with error:
            return Response(error.code, {k.lower(): v for k, v in error.headers.items()}, error.read())
