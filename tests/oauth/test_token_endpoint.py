"""The token and revocation endpoints (oauth/token_endpoint.py) through the real host, attacked:
a wrong or missing verifier, a code used twice or by another client, a refresh token used twice,
an unknown client, tokens that are not this server's. Each is refused and nothing is issued."""

from __future__ import annotations

import jwt
import pytest

from tests.oauth.conftest import (
    APP_ID,
    APP_SECRET,
    Bed,
    Beds,
    call_tools_list,
    code_for,
    redeem,
    refresh,
    register,
    token,
)
from tests.support.idp import request


def test_a_code_gives_a_jwt_for_this_resource_and_a_refresh_token(bed: Bed) -> None:
    client_id = register(bed)
    code, asked = code_for(bed, client_id, "carol")
    answer = redeem(bed, client_id, code, asked.verifier)
    assert answer.status == 200 and answer.headers["cache-control"] == "no-store"
    body = answer.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] == 900 and body["refresh_token"]
    jwks = request("GET", bed.public_url + "/oauth/jwks").json()
    header = jwt.get_unverified_header(body["access_token"])
    [key] = [jwt.PyJWK(k) for k in jwks["keys"] if k["kid"] == header["kid"]]
    claims = jwt.decode(body["access_token"], key.key, algorithms=[key.algorithm_name], audience=bed.mcp_url)
    assert claims["iss"] == bed.public_url + "/" and claims["sub"] == "carol"
    assert claims["client_id"] == client_id and claims["idp"] == bed.idp.issuer
    assert claims["exp"] - claims["iat"] == 900
    assert "id_token" not in body and bed.idp.issuer not in str(body)  # the provider's tokens stay here
    assert call_tools_list(bed, body["access_token"]).status == 200


def test_the_same_provider_user_gets_the_same_subject(bed: Bed) -> None:
    subjects = set()
    for _ in range(2):
        client_id = register(bed)
        code, asked = code_for(bed, client_id, "dave")
        access = redeem(bed, client_id, code, asked.verifier).json()["access_token"]
        subjects.add(jwt.decode(access, options={"verify_signature": False})["sub"])
    assert subjects == {"dave"}


@pytest.mark.parametrize("verifier", ["", "w" * 43, "short"])
def test_a_wrong_or_missing_verifier_gets_nothing_and_spends_the_code(bed: Bed, verifier: str) -> None:
    client_id = register(bed)
    code, asked = code_for(bed, client_id)
    answer = redeem(bed, client_id, code, verifier)
    assert answer.status == 400 and answer.json()["error"] == "invalid_grant"
    assert "access_token" not in answer.json()
    assert redeem(bed, client_id, code, asked.verifier).status == 400


def test_a_code_used_twice_gets_nothing_and_revokes_what_it_gave(bed: Bed) -> None:
    client_id = register(bed)
    code, asked = code_for(bed, client_id)
    first = redeem(bed, client_id, code, asked.verifier)
    assert first.status == 200
    again = redeem(bed, client_id, code, asked.verifier)
    assert (
        again.status == 400
        and again.json()["error"] == "invalid_grant"
        and "access_token" not in again.json()
    )
    assert refresh(bed, client_id, first.json()["refresh_token"]).status == 400  # the family is revoked


def test_a_code_of_another_client_gets_nothing(bed: Bed) -> None:
    owner, thief = register(bed), register(bed)
    code, asked = code_for(bed, owner)
    answer = redeem(bed, thief, code, asked.verifier)
    assert answer.status == 400 and answer.json()["error"] == "invalid_grant"


def test_a_refresh_token_rotates_and_its_reuse_revokes_the_family(bed: Bed) -> None:
    client_id = register(bed)
    code, asked = code_for(bed, client_id)
    first = redeem(bed, client_id, code, asked.verifier).json()["refresh_token"]
    second = refresh(bed, client_id, first)
    assert second.status == 200 and second.json()["refresh_token"] != first
    assert call_tools_list(bed, second.json()["access_token"]).status == 200
    reused = refresh(bed, client_id, first)  # a thief replays the old one
    assert (
        reused.status == 400
        and reused.json()["error"] == "invalid_grant"
        and "access_token" not in reused.json()
    )
    assert refresh(bed, client_id, second.json()["refresh_token"]).status == 400  # the whole family


def test_a_refresh_token_of_another_client_is_refused(bed: Bed) -> None:
    owner, thief = register(bed), register(bed)
    code, asked = code_for(bed, owner)
    stolen = redeem(bed, owner, code, asked.verifier).json()["refresh_token"]
    assert refresh(bed, thief, stolen).status == 400
    assert refresh(bed, owner, stolen).status == 200  # (the owner's family is not touched)


def test_revocation_ends_a_refresh_family(bed: Bed) -> None:
    client_id = register(bed)
    code, asked = code_for(bed, client_id)
    refresh_token = redeem(bed, client_id, code, asked.verifier).json()["refresh_token"]
    answer = request(
        "POST", bed.public_url + "/oauth/revoke", form={"token": refresh_token, "client_id": client_id}
    )
    assert answer.status == 200
    assert refresh(bed, client_id, refresh_token).status == 400


def test_an_unknown_client_or_a_wrong_secret_is_401_invalid_client(bed: Bed) -> None:
    answer = token(bed, {"grant_type": "refresh_token", "refresh_token": "x.y", "client_id": "nobody"})
    assert answer.status == 401 and answer.json()["error"] == "invalid_client"
    assert answer.headers["www-authenticate"].startswith("Basic")
    confidential = register(bed, token_endpoint_auth_method="client_secret_basic")
    wrong = token(bed, {"grant_type": "refresh_token", "refresh_token": "x.y"}, auth=(confidential, "wrong"))
    assert wrong.status == 401 and wrong.json()["error"] == "invalid_client"
    unsent = token(bed, {"grant_type": "refresh_token", "refresh_token": "x.y", "client_id": confidential})
    assert unsent.status == 401


def test_a_confidential_client_authenticates_with_its_secret(bed: Bed) -> None:
    from tests.oauth.conftest import CLIENT_REDIRECT, post_json

    registered = post_json(
        bed.public_url + "/oauth/register",
        {"redirect_uris": [CLIENT_REDIRECT], "token_endpoint_auth_method": "client_secret_basic"},
    ).json()
    client_id, secret = registered["client_id"], registered["client_secret"]
    code, asked = code_for(bed, client_id)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": CLIENT_REDIRECT,
        "code_verifier": asked.verifier,
    }
    assert token(bed, form, auth=(client_id, secret)).status == 200


def test_an_unsupported_grant_is_refused(bed: Bed) -> None:
    client_id = register(bed)
    answer = token(bed, {"grant_type": "client_credentials", "client_id": client_id})
    assert answer.status == 400 and answer.json()["error"] == "unsupported_grant_type"


def test_the_providers_own_tokens_are_refused_at_the_mcp_endpoint(bed: Bed) -> None:
    """What the provider issues (to protomcp's own app there) is not a token for this server."""
    issued = bed.idp.user_token(APP_ID, APP_SECRET, "alice", resource=bed.mcp_url, scope="openid mcp:read")
    for presented in (issued["access_token"], issued["id_token"]):
        answer = call_tools_list(bed, presented)
        assert answer.status == 401 and 'error="invalid_token"' in answer.headers["www-authenticate"]


def test_a_token_for_another_audience_is_refused(bed_factory: Beds) -> None:
    """Two servers sharing a signing key: a token one issued (for itself) is refused by the other."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    pem = (
        ec.generate_private_key(ec.SECP256R1())
        .private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        .decode()
    )
    env = {"SIGNING_KEY": pem}
    one = bed_factory("--oauth-signing-key-env", "SIGNING_KEY", env=env)
    other = bed_factory("--oauth-signing-key-env", "SIGNING_KEY", env=env)
    client_id = register(one)
    code, asked = code_for(one, client_id)
    access = redeem(one, client_id, code, asked.verifier).json()["access_token"]
    assert call_tools_list(one, access).status == 200
    answer = call_tools_list(other, access)
    assert answer.status == 401 and 'error="invalid_token"' in answer.headers["www-authenticate"]
    assert (
        request("GET", one.public_url + "/oauth/jwks").json()
        == request("GET", other.public_url + "/oauth/jwks").json()
    )


@pytest.mark.parametrize("path", ["/oauth/token", "/oauth/revoke", "/oauth/register"])
def test_other_methods_get_a_json_405(bed: Bed, path: str) -> None:
    answer = request("GET", bed.public_url + path)
    assert answer.status == 405 and answer.headers["allow"] == "POST"
    assert answer.json()["error"] == "invalid_request"


def test_a_token_request_that_is_not_a_form_is_a_json_400(bed: Bed) -> None:
    from tests.oauth.conftest import post_json

    answer = post_json(bed.public_url + "/oauth/token", {"grant_type": "authorization_code"})
    assert answer.status == 400 and answer.json()["error"] == "invalid_request"
