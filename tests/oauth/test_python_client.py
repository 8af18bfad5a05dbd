"""The official MCP Python SDK's OAuth client (`mcp.client.auth.OAuthClientProvider`) signs in
through protomcp's authorization server in front of a real identity provider and calls tools:
registering dynamically, and with a client ID metadata document. The SDK does discovery,
registration, PKCE, the RFC 9207 `iss` check and the code exchange; the test is only its
browser (tests/oauth/conftest.py's scripted one)."""

from __future__ import annotations

import asyncio
import urllib.parse
from pathlib import Path
from typing import Any

from tests.oauth.conftest import Bed, Beds, add_and_whoami
from tests.oauth.documents import DocumentServer

REDIRECT = "http://127.0.0.1:9/py-callback"  # loopback (RFC 8252); the test reads the redirect


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


async def sign_in_and_call(bed: Bed, client_metadata_url: str | None = None) -> MemoryStorage:
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    storage = MemoryStorage()
    landed: list[str] = []

    async def redirect_handler(authorization_url: str) -> None:
        assert authorization_url.startswith(bed.public_url + "/oauth/authorize?")
        landed.append(await asyncio.to_thread(bed.browser().sign_in, authorization_url, "bob"))

    async def callback_handler() -> AuthorizationCodeResult:
        answer = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(landed[0]).query))
        return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))

    auth = OAuthClientProvider(
        bed.mcp_url,
        OAuthClientMetadata(
            client_name="protomcp test: the Python SDK",
            redirect_uris=[REDIRECT],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client_metadata_url=client_metadata_url,
    )
    added, claims = await add_and_whoami(bed.mcp_url, auth)
    assert added == "5"
    assert claims is not None and claims["sub"] == "bob" and claims["aud"] == bed.mcp_url
    assert landed and landed[0].startswith(REDIRECT + "?")
    return storage


async def test_the_python_sdk_registers_dynamically_signs_in_and_calls_tools(bed_factory: Beds) -> None:
    storage = await sign_in_and_call(bed_factory())
    assert not storage.client_info.client_id.startswith("https://")  # one protomcp gave it
    assert storage.tokens.refresh_token


async def test_the_python_sdk_signs_in_with_a_client_id_metadata_document(
    bed_factory: Beds, tmp_path: Path
) -> None:
    with DocumentServer(tmp_path) as documents:
        document = documents.document(
            "/clients/python.json",
            [REDIRECT],
            client_name="Python SDK test client",
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        )
        bed = bed_factory("--oauth-cimd-allow", "localhost", env={"SSL_CERT_FILE": str(documents.cert)})
        storage = await sign_in_and_call(bed, client_metadata_url=document)
        assert "/clients/python.json" in documents.requests
    assert storage.client_info.client_id == document
