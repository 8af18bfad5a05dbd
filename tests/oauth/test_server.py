"""The whole sign-in through the real host as the authorization server in front of a real
identity provider, driven by the official Python SDK's OAuth client (discovery, registration,
PKCE, iss, token, refresh) and a scripted browser; then a tool call with the token it got."""

from __future__ import annotations

from pathlib import Path

from tests.oauth.conftest import (
    CLIENT_REDIRECT,
    Bed,
    Beds,
    MemoryStorage,
    authorize_url,
    call_add,
    call_tools_list,
    sdk_auth,
)
from tests.oauth.documents import DocumentServer
from tests.support.idp import request


async def test_the_sdk_client_signs_in_through_registration_and_calls_a_tool(bed: Bed) -> None:
    storage = MemoryStorage()
    result = await call_add(bed, sdk_auth(bed, storage))
    assert result.is_error is False and result.content[0].text == "5"
    assert storage.client is not None and storage.tokens is not None
    assert storage.tokens.refresh_token


async def test_the_sdk_client_signs_in_with_a_client_id_metadata_document(
    bed_factory: Beds, tmp_path: Path
) -> None:
    with DocumentServer(tmp_path) as documents:
        url = documents.document("/sdk-client.json", ["http://127.0.0.1:33418/callback"])
        bed = bed_factory("--oauth-cimd-allow", "localhost", env={"SSL_CERT_FILE": str(documents.cert)})
        storage = MemoryStorage()
        result = await call_add(bed, sdk_auth(bed, storage, client_metadata_url=url))
        assert result.is_error is False and result.content[0].text == "5"
        assert storage.client is not None and storage.client.client_id == url  # no registration
        assert documents.requests == ["/sdk-client.json"]


def test_a_metadata_document_on_loopback_is_refused_without_cimd_allow(bed: Bed, tmp_path: Path) -> None:
    with DocumentServer(tmp_path) as documents:
        url = documents.document("/client.json", [CLIENT_REDIRECT])
        answer = bed.browser().open(authorize_url(bed, url).url)
        assert answer.status == 400 and "location" not in answer.headers
        assert b"loopback, private or link-local" in answer.body
        assert documents.requests == []


def test_the_metadata_says_what_claude_ai_checks(bed: Bed) -> None:
    metadata = request("GET", bed.public_url + "/.well-known/oauth-authorization-server").json()
    assert metadata["issuer"] == bed.public_url + "/"
    assert metadata["client_id_metadata_document_supported"] is True
    assert "none" in metadata["token_endpoint_auth_methods_supported"]
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["authorization_response_iss_parameter_supported"] is True
    resource = request("GET", bed.public_url + "/.well-known/oauth-protected-resource/mcp").json()
    assert resource["resource"] == bed.mcp_url and resource["authorization_servers"] == [bed.public_url + "/"]
    refused = call_tools_list(bed, "not-a-token")
    assert refused.status == 401
    assert (
        f'resource_metadata="{bed.public_url}/.well-known/oauth-protected-resource/mcp"'
        in (refused.headers["www-authenticate"])
    )
