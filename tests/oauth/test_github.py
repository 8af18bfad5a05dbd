"""`--oauth-provider github:URL`: the sign-in at GitHub (OAuth 2 without OpenID Connect), end to
end through the real host, against a GitHub stand-in (tests/oauth/github.py) laid out as a
GitHub Enterprise Server. The stand-in follows GitHub's documentation:

- Authorizing OAuth apps, the web application flow: GET {url}/login/oauth/authorize redirects
  back with `code` and `state` (a code lives 10 minutes); POST {url}/login/oauth/access_token
  takes client_id, client_secret, code, redirect_uri (and code_verifier) and answers
  `access_token=...&scope=...&token_type=bearer`, or JSON with `Accept: application/json`.
  https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps
- PKCE: code_challenge and code_challenge_method (S256 only) at authorize, code_verifier at
  the exchange; GitHub does not require it, protomcp always sends it.
  https://github.blog/changelog/2025-07-14-pkce-support-for-oauth-and-github-app-authentication
- Troubleshooting OAuth app access token request errors: incorrect_client_credentials,
  redirect_uri_mismatch, bad_verification_code, each as a body (format per the Accept header)
  with error, error_description and error_uri — and HTTP 200.
  https://docs.github.com/en/apps/oauth-apps/maintaining-oauth-apps/troubleshooting-oauth-app-access-token-request-errors
- The REST API of a GitHub Enterprise Server is at http(s)://HOSTNAME/api/v3 (github.com's at
  https://api.github.com); GET /user gives the signed-in user's numeric `id` and `login`.
  https://docs.github.com/en/enterprise-server@3.10/rest/enterprise-admin (Endpoint URLs)
  https://docs.github.com/en/rest/users/users#get-the-authenticated-user

The subject of protomcp's tokens is GitHub's numeric id: a renamed login is the same person."""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.oauth.conftest import (
    APP_ID,
    APP_SECRET,
    TOOL_FILE,
    Browser,
    MemoryStorage,
    add_and_whoami,
    post_json,
)
from tests.oauth.github import GitHub, GitHubUser
from tests.support.http import HttpHost
from tests.support.idp import pkce_pair
from tests.support.ports import free_port

REDIRECT = "http://127.0.0.1:9/gh-callback"  # the MCP client's (loopback); the test reads the redirect


class GitHubBrowser(Browser):
    """The scripted browser, signed in at the GitHub stand-in (which approves at once)."""

    def provider_answer(self, authorize_url: str, account: str = "") -> str:
        at_github = self.open(self.allow(authorize_url))
        assert at_github.status == 302, (at_github.status, at_github.body[:300])
        return at_github.headers["location"]


@dataclass
class GitHubBed:
    github: GitHub
    host: HttpHost
    public_url: str

    @property
    def mcp_url(self) -> str:
        return self.public_url + "/mcp"


@pytest.fixture
def bed() -> Iterator[GitHubBed]:
    port = free_port()
    public_url = f"http://127.0.0.1:{port}"
    with GitHub(APP_ID, APP_SECRET, public_url + "/oauth/callback") as github:
        host = HttpHost(
            "run",
            str(TOOL_FILE),
            "--public-url",
            public_url,
            "--oauth-provider",
            f"github:{github.url}",
            "--oauth-client-id-env",
            "APP_ID",
            "--oauth-client-secret-env",
            "APP_SECRET",
            env={"APP_ID": APP_ID, "APP_SECRET": APP_SECRET},
            port=port,
        )
        try:
            yield GitHubBed(github, host, public_url)
        finally:
            host.terminate()


async def sign_in_and_whoami(bed: GitHubBed) -> dict[str, Any]:
    """The official Python SDK's OAuth client signs in (registering dynamically), calls a tool,
    and returns the claims the tool saw."""
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    landed: list[str] = []

    async def redirect_handler(authorization_url: str) -> None:
        landed.append(await asyncio.to_thread(GitHubBrowser().sign_in, authorization_url))

    async def callback_handler() -> AuthorizationCodeResult:
        answer = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(landed[-1]).query))
        return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))

    auth = OAuthClientProvider(
        bed.mcp_url,
        OAuthClientMetadata(
            client_name="protomcp test: GitHub",
            redirect_uris=[REDIRECT],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        MemoryStorage(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    added, claims = await add_and_whoami(bed.mcp_url, auth)
    assert added == "5"
    assert claims is not None and landed and landed[-1].startswith(REDIRECT + "?")
    return claims


async def test_the_python_sdk_signs_in_with_github_and_the_subject_is_the_numeric_id(bed: GitHubBed) -> None:
    claims = await sign_in_and_whoami(bed)
    assert claims["sub"] == "583231" and claims["idp"] == bed.github.url and claims["aud"] == bed.mcp_url
    exchange = bed.github.exchanges[-1]
    assert exchange["client_id"] == APP_ID and exchange["redirect_uri"] == bed.public_url + "/oauth/callback"
    assert exchange["code_verifier"]  # protomcp's own PKCE, checked by the stand-in

    bed.github.user = GitHubUser(583231, "octocat-renamed")  # a new login, the same account
    assert (await sign_in_and_whoami(bed))["sub"] == "583231"
    assert not bed.github.codes  # every code GitHub gave was redeemed once


def test_a_github_error_in_an_http_200_refuses_the_sign_in_with_nothing_issued(bed: GitHubBed) -> None:
    registered = post_json(
        bed.public_url + "/oauth/register", {"client_name": "t", "redirect_uris": [REDIRECT]}
    )
    assert registered.status == 201, registered.body
    _, challenge = pkce_pair()
    query = urllib.parse.urlencode(
        {
            "response_type": "code",
            "client_id": registered.json()["client_id"],
            "redirect_uri": REDIRECT,
            "state": "s1",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": bed.mcp_url,
        }
    )
    browser = GitHubBrowser()
    back_at_protomcp = browser.provider_answer(f"{bed.public_url}/oauth/authorize?{query}")
    assert "code=" in back_at_protomcp

    bed.github.refuse_next = "bad_verification_code"
    answer = browser.open(back_at_protomcp)
    assert answer.status == 400 and "location" not in answer.headers, (answer.status, answer.headers)
    assert not bed.github.tokens  # GitHub issued nothing, so nothing reached its API
    bed.host.wait_stderr(lambda line: "bad_verification_code" in line, timeout=10)
    again = browser.open(back_at_protomcp)  # the pending sign-in is spent: no second try
    assert again.status == 400 and "location" not in again.headers
