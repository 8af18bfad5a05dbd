"""The identity provider the user signs in at: an OpenID Connect provider found by discovery
(`oidc:<issuer>`, and `google`), or GitHub (OAuth 2 without OpenID Connect: the user id comes
from its API; github.com, or a GitHub Enterprise Server with `github:<its URL>`). protomcp is
the provider's client here: code flow with its own PKCE, a nonce (OIDC), and the `iss` of the
authorization response checked when the provider sends one (RFC 9207). What the provider
issues stays here: only the user's id (and name, e-mail) goes on."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx2
import jwt

from protomcp_host.oauth.settings import ProviderSpec

HTTP_TIMEOUT = 10.0
DISCOVERY_TTL = 3600.0  # seconds discovery and the provider's keys are used before a re-read
GOOGLE = "https://accounts.google.com"
GITHUB = "https://github.com"  # github.com's web address; its REST API is at api.github.com


class ProviderError(Exception):
    """The sign-in at the provider failed; the message says why (for the host's log and the
    browser, never containing a token)."""


@dataclass(frozen=True)
class Person:
    subject: str  # the provider's stable id of the user
    name: str = ""
    email: str = ""


def secure_enough(url: str) -> bool:
    """https, or http to a loopback address (a provider started by tests or on this machine)."""
    parts = urlsplit(url)
    return parts.scheme == "https" or (
        parts.scheme == "http" and parts.hostname in ("127.0.0.1", "::1", "localhost")
    )


@dataclass
class Provider:
    spec: ProviderSpec
    client_id: str
    client_secret: str = field(repr=False)
    _discovery: tuple[float, dict[str, Any]] | None = field(default=None, repr=False)
    _jwks: tuple[float, dict[str, Any]] | None = field(default=None, repr=False)

    @property
    def issuer(self) -> str:
        """Who vouches for the subjects (the `idp` claim of protomcp's tokens)."""
        if self.spec.kind == "github":
            return self.spec.issuer or GITHUB
        return GOOGLE if self.spec.kind == "google" else self.spec.issuer.rstrip("/")

    @property
    def display_name(self) -> str:
        if self.spec.kind == "github" and self.issuer == GITHUB:
            return "GitHub"
        if self.spec.kind == "google":
            return "Google"
        return urlsplit(self.issuer).hostname or self.issuer

    async def authorization_url(self, state: str, redirect_uri: str, challenge: str, nonce: str) -> str:
        """Where the browser signs in (protomcp's own state, PKCE challenge and nonce)."""
        query = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        if self.spec.kind == "github":
            endpoint = self.issuer + "/login/oauth/authorize"
            query["scope"] = "read:user user:email"
        else:
            endpoint = (await self._metadata())["authorization_endpoint"]
            query |= {"scope": "openid email profile", "nonce": nonce}
        return f"{endpoint}?{urlencode(query)}"

    async def check_iss(self, iss: str | None) -> None:
        """RFC 9207 at the callback: a response naming another issuer is a mix-up."""
        if self.spec.kind == "github":
            return
        metadata = await self._metadata()
        if iss is None:
            if metadata.get("authorization_response_iss_parameter_supported"):
                raise ProviderError("the provider's response lacks the iss it promised")
            return
        if iss != metadata["issuer"]:
            raise ProviderError(f"the response names the issuer {iss!r}, not {metadata['issuer']!r}")

    async def finish(self, code: str, redirect_uri: str, verifier: str, nonce: str) -> Person:
        """Redeem the provider's code and tell who signed in."""
        if self.spec.kind == "github":
            return await self._github(code, redirect_uri, verifier)
        metadata = await self._metadata()
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
        form["code_verifier"] = verifier
        methods = metadata.get("token_endpoint_auth_methods_supported", ["client_secret_basic"])
        auth: tuple[str, str] | None = None
        if "client_secret_basic" in methods:
            auth = (self.client_id, self.client_secret)
        else:
            form |= {"client_id": self.client_id, "client_secret": self.client_secret}
        answer = await self._post(metadata["token_endpoint"], form, auth)
        id_token = answer.get("id_token")
        if not isinstance(id_token, str):
            raise ProviderError("the provider's token response has no id_token")
        claims = await self._verify_id_token(id_token, metadata["issuer"], nonce)
        return Person(str(claims["sub"]), str(claims.get("name", "")), str(claims.get("email", "")))

    async def _verify_id_token(self, id_token: str, issuer: str, nonce: str) -> dict[str, Any]:
        try:
            header = jwt.get_unverified_header(id_token)
            key = await self._key(header.get("kid"))
            claims = jwt.decode(
                id_token,
                key.key,
                algorithms=[key.algorithm_name],
                audience=self.client_id,
                # (Google's ID tokens may name its issuer without the scheme)
                issuer=[issuer, "accounts.google.com"] if self.spec.kind == "google" else issuer,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError as exc:
            raise ProviderError(f"the provider's id_token is not valid: {exc}") from None
        if claims.get("nonce") != nonce:
            raise ProviderError("the provider's id_token carries another nonce")
        return claims

    async def _key(self, kid: str | None) -> jwt.PyJWK:
        for attempt in (False, True):
            if self._jwks is None or attempt or time.monotonic() - self._jwks[0] > DISCOVERY_TTL:
                uri = (await self._metadata())["jwks_uri"]
                self._jwks = (time.monotonic(), await self._get(uri))
            keys = [
                k
                for k in self._jwks[1].get("keys", [])
                if isinstance(k, dict) and k.get("use", "sig") == "sig"
            ]
            for entry in keys:
                if kid is None or entry.get("kid") == kid:
                    return jwt.PyJWK(entry)
        raise ProviderError(f"the provider has no signing key {kid!r}")

    async def _metadata(self) -> dict[str, Any]:
        if self._discovery is not None and time.monotonic() - self._discovery[0] < DISCOVERY_TTL:
            return self._discovery[1]
        issuer = self.issuer
        metadata = await self._get(issuer + "/.well-known/openid-configuration")
        if metadata.get("issuer", "").rstrip("/") != issuer:
            raise ProviderError(
                f"the discovery document of {issuer} names the issuer {metadata.get('issuer')!r}"
            )
        for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            if not isinstance(metadata.get(name), str) or not secure_enough(metadata[name]):
                raise ProviderError(f"the discovery document of {issuer} has no usable {name}")
        self._discovery = (time.monotonic(), metadata)
        return metadata

    async def _github(self, code: str, redirect_uri: str, verifier: str) -> Person:
        form = {
            "client_id": self.client_id,
            "client_secret": self.client_secret,
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        }
        # (GitHub answers a refused exchange with HTTP 200 and an `error` in the body)
        answer = await self._post(self.issuer + "/login/oauth/access_token", form, None)
        token = answer.get("access_token")
        if not isinstance(token, str):
            raise ProviderError(f"GitHub gave no access token: {answer.get('error', 'no reason')}")
        user = await self._get(self._github_api() + "/user", token)
        if not isinstance(user.get("id"), int):
            raise ProviderError("GitHub's user API gave no user id")
        return Person(
            str(user["id"]), str(user.get("name") or user.get("login") or ""), str(user.get("email") or "")
        )

    def _github_api(self) -> str:
        """The REST API: api.github.com for github.com, `{URL}/api/v3` on an Enterprise Server."""
        return "https://api.github.com" if self.issuer == GITHUB else self.issuer + "/api/v3"

    async def _get(self, url: str, token: str | None = None) -> dict[str, Any]:
        headers = {"accept": "application/json"}
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        return await self._send("GET", url, headers=headers)

    async def _post(self, url: str, form: dict[str, str], auth: tuple[str, str] | None) -> dict[str, Any]:
        return await self._send("POST", url, data=form, auth=auth, headers={"accept": "application/json"})

    async def _send(self, method: str, url: str, **options: Any) -> dict[str, Any]:
        try:
            async with httpx2.AsyncClient(timeout=HTTP_TIMEOUT, follow_redirects=False) as client:
                response = await client.request(method, url, **options)
                data = response.json()
        except (httpx2.HTTPError, ValueError) as exc:
            raise ProviderError(f"{method} {url} failed: {exc}") from None
        if response.status_code != 200 or not isinstance(data, dict):
            error = data.get("error", "") if isinstance(data, dict) else ""
            raise ProviderError(f"{method} {url} answered HTTP {response.status_code} {error}".rstrip())
        return data
