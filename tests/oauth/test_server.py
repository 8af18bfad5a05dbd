"""The whole sign-in through the real host as the authorization server in front of a real
identity provider, driven by the official Python SDK's OAuth client (discovery, registration,
PKCE, iss, token, refresh) and a scripted browser; then a tool call with the token it got."""

from __future__ import annotations

import urllib.parse
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from tests.oauth.conftest import Bed

pytestmark = pytest.mark.anyio


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
