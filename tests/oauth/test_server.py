"""The whole sign-in through the real host as the authorization server in front of a real
identity provider, driven by the official Python SDK's OAuth client (discovery, registration,
PKCE, iss, token, refresh) and a scripted browser; then a tool call with the token it got."""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from tests.oauth.conftest import CLIENT_REDIRECT, Bed, Beds, authorize_url, call_tools_list
from tests.oauth.documents import DocumentServer
from tests.support.idp import request


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


async def call_add(bed: Bed, auth: OAuthClientProvider) -> Any:
    async with (
        httpx2.AsyncClient(auth=auth, timeout=30) as client,
        streamable_http_client(bed.mcp_url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await session.call_tool("add", {"a": 2, "b": 3})


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
