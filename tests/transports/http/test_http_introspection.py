"""Resource-server mode for opaque access tokens (--oauth-introspect, RFC 7662), end to end: a
real identity provider (oidc-provider, tests/support/idp.py) issues opaque tokens through a
real sign-in, the real host asks the provider's introspection endpoint about them, and the
official MCP client calls tools with them."""

from __future__ import annotations

import subprocess
from typing import Any

import httpx2
import pytest

from tests.support.hosts import HOST, TOOLS
from tests.support.http import ACCEPT, INITIALIZE, http_session
from tests.support.idp import IdentityProvider, client, request

STREAMS = str(TOOLS / "streams.py")
ENVIRONMENT = str(TOOLS / "environment.py")
JSON = {"accept": ACCEPT, "content-type": "application/json"}
REDIRECT = "http://127.0.0.1:9/callback"  # the app's; sign_in stops at it
SECRETS = {"RS_CLIENT_ID": "protomcp", "RS_CLIENT_SECRET": "rs-secret"}


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def bearer(token: str) -> dict[str, str]:
    return {**JSON, "authorization": f"Bearer {token}"}


@pytest.fixture
def idp() -> Any:
    clients = [
        client("protomcp", SECRETS["RS_CLIENT_SECRET"], [], grant_types=("client_credentials",)),
        client("app", None, [REDIRECT]),  # a public client: PKCE, no secret
    ]
    with IdentityProvider(clients) as provider:
        yield provider


def introspecting_host(http_host: Any, idp: IdentityProvider, *more: str) -> Any:
    return http_host(
        "run",
        STREAMS,
        ENVIRONMENT,
        "--oauth-introspect",
        idp.endpoint("introspection"),
        "--oauth-issuer",
        idp.issuer,
        "--oauth-client-id-env",
        "RS_CLIENT_ID",
        "--oauth-client-secret-env",
        "RS_CLIENT_SECRET",
        *more,
        env=SECRETS,
    )


async def test_an_opaque_token_from_a_real_sign_in_calls_tools(http_host: Any, idp: IdentityProvider) -> None:
    host = introspecting_host(http_host, idp, "--oauth-scope", "mcp:read")
    tokens = idp.user_token("app", None, "alice", resource=host.url, scope="openid mcp:read")
    assert tokens["access_token"].count(".") == 0  # opaque: no JWKS could check it
    async with http_session(
        host.url, headers={"authorization": f"Bearer {tokens['access_token']}"}
    ) as session:
        assert text_of(await session.call_tool("add", {"a": 2, "b": 3})) == "5"
        claims = (await session.call_tool("whoami", {})).structured_content
        assert (claims["sub"], claims["client_id"], claims["scope"]) == ("alice", "app", "mcp:read")
        assert claims["iss"] == idp.issuer and claims["aud"] == host.url
        assert tokens["access_token"] not in str(claims)
        for name in SECRETS:  # the client's credentials stay in the host
            assert text_of(await session.call_tool("getenv", {"name": name})) == "<unset>"


async def test_tokens_not_for_this_server_are_refused_with_the_reason_logged(
    http_host: Any, idp: IdentityProvider
) -> None:
    host = introspecting_host(http_host, idp, "--oauth-scope", "mcp:read")
    other = idp.user_token("app", None, "bob", resource="http://127.0.0.1:9/other/mcp", scope="mcp:read")
    own = idp.user_token("app", None, "bob", scope="openid")  # the provider's own (userinfo) token
    narrow = idp.user_token("app", None, "bob", resource=host.url, scope="openid")  # no mcp:read
    revoked = idp.user_token("app", None, "bob", resource=host.url, scope="mcp:read")
    form = {"token": revoked["access_token"]}
    assert request("POST", idp.endpoint("revocation"), form=form, auth=("app", None)).status == 200
    async with httpx2.AsyncClient(timeout=30) as http:
        for tokens, reason in (
            (other, "meant for 'http://127.0.0.1:9/other/mcp'"),
            (own, "meant for None"),
            (revoked, "the authorization server says the token is not active"),
            ({"access_token": "made-up"}, "the authorization server says the token is not active"),
        ):
            answer = await http.post(host.url, content=INITIALIZE, headers=bearer(tokens["access_token"]))
            assert answer.status_code == 401, answer.text
            assert 'error="invalid_token"' in answer.headers["www-authenticate"]
            host.wait_stderr(lambda line, reason=reason: "refused an access token" in line and reason in line)
        answer = await http.post(host.url, content=INITIALIZE, headers=bearer(narrow["access_token"]))
        assert answer.status_code == 403
        assert 'error="insufficient_scope"' in answer.headers["www-authenticate"]
        host.wait_stderr(lambda line: "lacks the scope mcp:read" in line)


async def test_an_unreachable_provider_is_503_not_a_refused_token(
    http_host: Any, idp: IdentityProvider
) -> None:
    host = introspecting_host(http_host, idp)
    tokens = idp.user_token("app", None, "carol", resource=host.url, scope="mcp:read")
    idp.stop()
    async with httpx2.AsyncClient(timeout=30) as http:
        answer = await http.post(host.url, content=INITIALIZE, headers=bearer(tokens["access_token"]))
    assert answer.status_code == 503 and answer.headers["retry-after"] == "5"
    assert "www-authenticate" not in answer.headers  # the client keeps its token and tries again
    host.wait_stderr(lambda line: "introspection failed: cannot reach" in line)


def test_introspection_needs_the_client_it_authenticates_as() -> None:
    base = [
        *HOST,
        "run",
        STREAMS,
        "--transport",
        "http",
        "--port",
        "0",
        "--oauth-issuer",
        "https://a.example",
    ]
    for more, says in (
        (["--oauth-introspect", "https://a.example/introspect"], "needs --oauth-client-id-env"),
        (
            ["--oauth-introspect", "https://a.example/i", "--oauth-jwks", "https://a.example/jwks"],
            "either --oauth-jwks (JWT access tokens) or --oauth-introspect",
        ),
        (
            [
                "--oauth-introspect",
                "https://a.example/i",
                "--oauth-client-id-env",
                "UNSET_ID",
                "--oauth-client-secret-env",
                "UNSET_SECRET",
            ],
            "the environment variable UNSET_ID is not set",
        ),
    ):
        done = subprocess.run([*base, *more], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and says in done.stderr, done.stderr
