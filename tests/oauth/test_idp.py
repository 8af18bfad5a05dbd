"""The identity provider the OAuth tests sign in at (tests/support/idp.py: oidc-provider from npm)
works as they rely on: discovery, the scripted code flow with PKCE, opaque tokens introspected,
and nothing left running."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator

import jwt
import pytest

from tests.support.idp import IdentityProvider, client, pkce_pair, request

REDIRECT = "http://127.0.0.1:9/oauth/callback"  # never fetched: sign_in stops at the redirect
RESOURCE = "http://127.0.0.1:9/mcp"


@pytest.fixture(scope="module")
def idp() -> Iterator[IdentityProvider]:
    clients = [client("app", "app-secret", [REDIRECT]), client("public", None, [REDIRECT])]
    with IdentityProvider(clients) as provider:
        yield provider


def test_discovery_names_the_endpoints_a_client_needs(idp: IdentityProvider) -> None:
    meta = idp.discovery()
    assert meta["issuer"] == idp.issuer
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["authorization_response_iss_parameter_supported"] is True
    for name in ("authorization", "token", "introspection", "revocation", "userinfo"):
        assert meta[f"{name}_endpoint"].startswith(idp.issuer + "/")
    assert request("GET", meta["jwks_uri"]).json()["keys"][0]["alg"] == "RS256"


def test_code_flow_signs_in_the_account_named_in_the_form(idp: IdentityProvider) -> None:
    tokens = idp.user_token("app", "app-secret", "alice", scope="openid email")
    keys = jwt.PyJWKClient(idp.discovery()["jwks_uri"])
    claims = jwt.decode(
        tokens["id_token"], keys.get_signing_key_from_jwt(tokens["id_token"]), ["RS256"], audience="app"
    )
    assert claims["sub"] == "alice" and claims["iss"] == idp.issuer
    bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
    userinfo = request("GET", idp.endpoint("userinfo"), headers=bearer)
    assert userinfo.json()["email"] == "alice@example.test"


def test_a_public_client_signs_in_with_pkce_and_its_token_introspects(idp: IdentityProvider) -> None:
    tokens = idp.user_token("public", None, "bob", resource=RESOURCE, scope="openid mcp:read")
    assert "." not in tokens["access_token"]  # opaque: only introspection can read it
    seen = idp.introspect(tokens["access_token"], "app", "app-secret")
    assert seen["active"] is True
    assert (seen["sub"], seen["aud"], seen["client_id"]) == ("bob", RESOURCE, "public")
    assert seen["scope"] == "mcp:read"


def test_authorization_without_pkce_is_refused(idp: IdentityProvider) -> None:
    query = urllib.parse.urlencode(
        {"client_id": "app", "response_type": "code", "redirect_uri": REDIRECT, "scope": "openid"}
    )
    answer = request("GET", f"{idp.endpoint('authorization')}?{query}")
    assert answer.status == 303
    assert "error=invalid_request" in answer.headers["location"]


def test_client_credentials_token_introspects_and_a_revoked_one_is_inactive(idp: IdentityProvider) -> None:
    token = idp.client_credentials("app", "app-secret", resource=RESOURCE, scope="mcp:write")["access_token"]
    assert idp.introspect(token, "app", "app-secret")["active"] is True
    revoked = request("POST", idp.endpoint("revocation"), form={"token": token}, auth=("app", "app-secret"))
    assert revoked.status == 200
    assert idp.introspect(token, "app", "app-secret") == {"active": False}
    assert idp.introspect("not-a-token", "app", "app-secret") == {"active": False}


def test_the_provider_is_gone_after_the_block() -> None:
    with IdentityProvider([]) as provider:
        proc = provider.proc
        assert proc is not None and proc.poll() is None
    assert proc.returncode is not None  # reaped


def test_pkce_pair_is_s256_of_the_verifier() -> None:
    verifier, challenge = pkce_pair()
    assert 43 <= len(verifier) <= 128 and len(challenge) == 43
