"""Scopes per tool, resource and prompt end to end: the real host with OAuth (JWTs signed by a
test JWKS), two principals — one whose token grants the scopes, one whose token does not — in
both eras: the listings differ, and a call/read/get without the scopes is HTTP 403
insufficient_scope naming them (step-up), after which a token with them is served. The
official `mcp` client sees a scoped tool only with the scope; ctx.principal reaches the tool.
Without OAuth (a shared bearer token, stdio) scopes restrict nothing."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx2
import orjson
import pytest

from protomcp_sdk.testing import Client
from tests.support.hosts import TOOLS
from tests.support.http import ACCEPT, INITIALIZE, INITIALIZED, http_session, rpc
from tests.support.jwks import ISSUER, Jwks, serve_jwks

SCOPED = str(TOOLS / "scoped.py")
JSON = {"accept": ACCEPT, "content-type": "application/json"}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture
def jwks() -> Iterator[Jwks]:
    yield from serve_jwks()


def bearer(token: str, **extra: str) -> dict[str, str]:
    return {**JSON, "authorization": f"Bearer {token}", **extra}


def challenge_of(answer: Any) -> dict[str, str]:
    """The parameters of a `WWW-Authenticate: Bearer k="v", ...` header."""
    scheme, _, rest = answer.headers["www-authenticate"].partition(" ")
    assert scheme == "Bearer"
    return dict(re.findall(r'(\w+)="([^"]*)"', rest))


def assert_step_up(answer: Any, request_id: int, scopes: str, what: str) -> None:
    assert answer.status_code == 403, answer.text
    challenge = challenge_of(answer)
    assert challenge["error"] == "insufficient_scope" and challenge["scope"] == scopes
    assert challenge["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")
    error = answer.json()
    assert error["id"] == request_id and what in error["error"]["message"]


async def test_stateful_sessions_see_and_call_only_what_their_scopes_grant(
    http_host: Any, jwks: Jwks
) -> None:
    host = http_host("run", SCOPED, "--oauth-jwks", jwks.url, "--oauth-issuer", ISSUER)
    writer = jwks.token(host.url, sub="ada", scope="files:write notes:read")
    reader = jwks.token(host.url, sub="bob", scope="files:read")

    # The official client: the scoped tool, resource, template and prompt only with the scopes.
    async with http_session(host.url, {"authorization": f"Bearer {writer}"}) as session:
        assert [t.name for t in (await session.list_tools()).tools] == ["read_notes", "save", "who_called"]
        assert (await session.call_tool("save", {"text": "x"})).content[0].text == "saved x"  # type: ignore[union-attr]
        assert {str(r.uri) for r in (await session.list_resources()).resources} == {
            "notes://public",
            "notes://me",
            "notes://secret",
        }
        templates = (await session.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["notes://{name}/private"]
        assert [p.name for p in (await session.list_prompts()).prompts] == ["hello", "draft"]
        who = (await session.call_tool("who_called", {})).structured_content
        assert who == {"subject": "ada", "scopes": ["files:write", "notes:read"], "iss": ISSUER}
        # resources and prompts see who called too
        assert (await session.read_resource("notes://me")).contents[0].text == "note of ada"  # type: ignore[union-attr]
        hello = await session.get_prompt("hello", {})
        assert hello.messages[0].content.text == "Say hello to ada"  # type: ignore[union-attr]
    async with http_session(host.url, {"authorization": f"Bearer {reader}"}) as session:
        assert [t.name for t in (await session.list_tools()).tools] == ["read_notes", "who_called"]
        assert [str(r.uri) for r in (await session.list_resources()).resources] == [
            "notes://public",
            "notes://me",
        ]
        assert (await session.list_resource_templates()).resource_templates == []
        assert [p.name for p in (await session.list_prompts()).prompts] == ["hello"]

    # Raw: what the reader gets for each, and the step-up that follows.
    async with httpx2.AsyncClient(timeout=30) as client:

        async def open_session(token: str) -> dict[str, str]:
            created = await client.post(host.url, content=INITIALIZE, headers=bearer(token))
            session_id = {"mcp-session-id": created.headers["mcp-session-id"]}
            await client.post(host.url, content=INITIALIZED, headers=bearer(token, **session_id))
            return session_id

        readers, writers = await open_session(reader), await open_session(writer)

        async def post(token: str, request_id: int, method: str, params: dict[str, Any]) -> Any:
            body = rpc(request_id, method, params)
            session_id = writers if token == writer else readers
            return await client.post(host.url, content=body, headers=bearer(token, **session_id))

        save = {"name": "save", "arguments": {"text": "x"}}
        assert_step_up(await post(reader, 1, "tools/call", save), 1, "files:write", "Tool 'save'")
        assert_step_up(
            await post(reader, 2, "resources/read", {"uri": "notes://secret"}),
            2,
            "notes:read",
            "notes://secret",
        )
        assert_step_up(
            await post(reader, 3, "resources/read", {"uri": "notes://a/private"}), 3, "notes:read", "private"
        )
        assert_step_up(
            await post(reader, 4, "prompts/get", {"name": "draft"}), 4, "files:write", "Prompt 'draft'"
        )
        # Every scope the call needs is named at once, though the writer lacks only one.
        purge = await post(writer, 5, "tools/call", {"name": "purge", "arguments": {}})
        assert_step_up(purge, 5, "admin files:write", "needs the scope admin,")
        # The reader signs in again with the scope (same subject): the same session serves it.
        stepped = jwks.token(host.url, sub="bob", scope="files:read files:write")
        served = await post(stepped, 6, "tools/call", save)
        assert served.status_code == 200 and "saved x" in served.text
        listed = orjson.loads((await post(stepped, 7, "tools/list", {})).text)
        assert [t["name"] for t in listed["result"]["tools"]] == ["read_notes", "save", "who_called"]
        assert (
            await post(reader, 8, "tools/call", {"name": "read_notes", "arguments": {}})
        ).status_code == 200


async def test_a_batch_is_refused_in_json_rpc(http_host: Any, jwks: Jwks) -> None:
    """A 2025-03-26 batch has no one HTTP status: each call gets its JSON-RPC error."""
    host = http_host("run", SCOPED, "--oauth-jwks", jwks.url, "--oauth-issuer", ISSUER)
    reader = jwks.token(host.url, sub="bob", scope="files:read")
    init = rpc(
        0,
        "initialize",
        {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "r", "version": "1"}},
    )
    async with httpx2.AsyncClient(timeout=30) as client:
        created = await client.post(host.url, content=init, headers=bearer(reader))
        session_id = {"mcp-session-id": created.headers["mcp-session-id"]}
        await client.post(host.url, content=INITIALIZED, headers=bearer(reader, **session_id))
        batch = b"[" + rpc(1, "tools/call", {"name": "save", "arguments": {"text": "x"}}) + b"]"
        answer = await client.post(host.url, content=batch, headers=bearer(reader, **session_id))
        assert answer.status_code == 200
        [error] = answer.json()
        assert error["error"]["code"] == -32602 and "needs the scope files:write" in error["error"]["message"]


async def test_modern_requests_see_and_call_only_what_their_scopes_grant(http_host: Any, jwks: Jwks) -> None:
    host = http_host(
        "run", SCOPED, "--oauth-jwks", jwks.url, "--oauth-issuer", ISSUER, "--oauth-scope", "mcp"
    )
    writer = jwks.token(host.url, sub="ada", scope="mcp files:write notes:read")
    reader = jwks.token(host.url, sub="bob", scope="mcp")
    async with httpx2.AsyncClient(timeout=30) as client:

        async def post(token: str, method: str, params: dict[str, Any], name: str | None = None) -> Any:
            headers = bearer(token, **{"mcp-protocol-version": "2026-07-28", "mcp-method": method})
            if name is not None:
                headers["mcp-name"] = name
            body = rpc(1, method, {**params, "_meta": META})
            return await client.post(host.url, content=body, headers=headers)

        def names(answer: Any, key: str = "tools", field: str = "name") -> list[str]:
            assert answer.status_code == 200, answer.text
            return [entry[field] for entry in answer.json()["result"][key]]

        assert names(await post(writer, "tools/list", {})) == ["read_notes", "save", "who_called"]
        listed = await post(reader, "tools/list", {})
        assert names(listed) == ["read_notes", "who_called"]
        assert listed.json()["result"]["cacheScope"] == "private"
        assert names(await post(reader, "prompts/list", {}), "prompts") == ["hello"]
        assert names(await post(reader, "resources/list", {}), "resources", "uri") == [
            "notes://public",
            "notes://me",
        ]
        save = {"name": "save", "arguments": {"text": "x"}}
        # The server's own scope (--oauth-scope) and the tool's: all the call needs.
        assert_step_up(await post(reader, "tools/call", save, "save"), 1, "mcp files:write", "Tool 'save'")
        assert_step_up(
            await post(reader, "resources/read", {"uri": "notes://secret"}, "notes://secret"),
            1,
            "mcp notes:read",
            "notes://secret",
        )
        assert_step_up(
            await post(reader, "prompts/get", {"name": "draft"}, "draft"), 1, "mcp files:write", "draft"
        )
        served = await post(writer, "tools/call", save, "save")
        assert served.status_code == 200 and served.json()["result"]["content"][0]["text"] == "saved x"
        who = await post(reader, "tools/call", {"name": "who_called", "arguments": {}}, "who_called")
        assert who.json()["result"]["structuredContent"] == {
            "subject": "bob",
            "scopes": ["mcp"],
            "iss": ISSUER,
        }


async def test_the_official_client_in_the_modern_era_sees_the_tool_only_with_the_scope(
    http_host: Any, jwks: Jwks
) -> None:
    from mcp import Client as McpClient
    from mcp.client.streamable_http import streamable_http_client

    host = http_host("run", SCOPED, "--oauth-jwks", jwks.url, "--oauth-issuer", ISSUER)
    for scope, expected in (
        ("files:write", ["read_notes", "save", "who_called"]),
        ("files:read", ["read_notes", "who_called"]),
    ):
        token = jwks.token(host.url, sub="ada", scope=scope)
        async with httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=30) as http:
            transport = streamable_http_client(host.url, http_client=http)
            async with McpClient(transport, mode="auto", cache=None) as client:  # type: ignore[arg-type]
                assert client.session.protocol_version == "2026-07-28"
                assert [t.name for t in (await client.list_tools()).tools] == expected


async def test_without_oauth_scopes_restrict_nothing(http_host: Any) -> None:
    host = http_host("run", SCOPED, "--auth-token-env", "SCOPES_TOKEN", env={"SCOPES_TOKEN": "s3cret"})
    async with http_session(host.url, {"authorization": "Bearer s3cret"}) as session:
        assert [t.name for t in (await session.list_tools()).tools] == [
            "read_notes",
            "save",
            "purge",
            "who_called",
        ]
        assert (await session.call_tool("purge", {})).content[0].text == "purged"  # type: ignore[union-attr]
        assert (await session.call_tool("who_called", {})).structured_content == {"principal": None}
    async with Client(SCOPED) as stdio:  # stdio: the same
        assert [t["name"] for t in await stdio.list_tools()] == ["read_notes", "save", "purge", "who_called"]
        assert (await stdio.call("save", text="y")).text == "saved y"
        assert [p["name"] for p in await stdio.list_prompts()] == ["hello", "draft"]
        assert (await stdio.call("who_called")).structured == {"principal": None}
        assert (await stdio.read_resource("notes://me"))[0]["text"] == "note of nobody"
