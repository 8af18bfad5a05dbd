"""Scopes per tool through protomcp's own authorization server, in front of a real identity
provider: the scopes the tools declare are granted when asked for, a token without them does not see
or reach a scoped tool (403 insufficient_scope naming the scope), and a sign-in that asks for
that scope (step-up) gets a token that does. The official Python SDK's OAuth client does the
step-up by itself on the 403."""

from __future__ import annotations

from typing import Any

import httpx2
import orjson
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.oauth.conftest import (
    Beds,
    MemoryStorage,
    answer_of,
    authorize_url,
    redeem,
    register,
    sdk_auth,
)
from tests.support.hosts import TOOLS
from tests.support.http import ACCEPT, INITIALIZE, INITIALIZED, rpc
from tests.support.idp import request

SCOPED = str(TOOLS / "scoped.py")


async def test_a_token_gets_a_tools_scope_by_asking_for_it(bed_factory: Beds) -> None:
    bed = bed_factory(SCOPED)
    # The scopes tools declare are not offered up front (a client would ask for them all): a 403
    # names the one a request needs, and the client asks for it then.
    metadata = request("GET", bed.public_url + "/.well-known/oauth-authorization-server").json()
    assert "scopes_supported" not in metadata
    client_id = register(bed)

    def sign_in(**asked: str) -> dict[str, Any]:
        attempt = authorize_url(bed, client_id, **asked)
        answer = answer_of(bed.browser().sign_in(attempt.url))
        redeemed = redeem(bed, client_id, answer["code"], attempt.verifier)
        assert redeemed.status == 200, redeemed.body
        return dict(redeemed.json())

    plain = sign_in()
    assert plain.get("scope", "") == ""  # nothing asked for, no --oauth-scope: no scope
    async with httpx2.AsyncClient(timeout=30) as client:

        async def post(token: str, body: bytes, session: dict[str, str] | None = None) -> Any:
            headers = {
                "accept": ACCEPT,
                "content-type": "application/json",
                "authorization": f"Bearer {token}",
            }
            return await client.post(bed.mcp_url, content=body, headers={**headers, **(session or {})})

        created = await post(plain["access_token"], INITIALIZE)
        session = {"mcp-session-id": created.headers["mcp-session-id"]}
        await post(plain["access_token"], INITIALIZED, session)
        listed = orjson.loads((await post(plain["access_token"], rpc(1, "tools/list"), session)).text)
        assert "save" not in [tool["name"] for tool in listed["result"]["tools"]]
        save = rpc(2, "tools/call", {"name": "save", "arguments": {"text": "x"}})
        refused = await post(plain["access_token"], save, session)
        assert refused.status_code == 403
        challenge = refused.headers["www-authenticate"]
        assert 'error="insufficient_scope"' in challenge and 'scope="files:write"' in challenge

        # Step-up: the same person signs in again asking for the scope the challenge named.
        stepped = sign_in(scope="files:write")
        assert stepped["scope"] == "files:write"
        served = await post(stepped["access_token"], save, session)
        assert served.status_code == 200 and "saved x" in served.text
        # A scope nothing declares is not granted (nor one of a client's own).
        assert sign_in(scope="files:write root").get("scope") == "files:write"


async def test_the_python_sdk_steps_up_on_the_403_by_itself(bed_factory: Beds) -> None:
    bed = bed_factory(SCOPED)
    storage = MemoryStorage()
    auth = sdk_auth(bed, storage)
    async with (
        httpx2.AsyncClient(auth=auth, timeout=30) as http,
        streamable_http_client(bed.mcp_url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        assert "save" not in [tool.name for tool in (await session.list_tools()).tools]
        saved = await session.call_tool("save", {"text": "y"})  # 403, sign-in with the scope, retried
        assert saved.content[0].text == "saved y"  # type: ignore[union-attr]
        assert "files:write" in (storage.tokens.scope or "").split()  # type: ignore[union-attr]
        assert "save" in [tool.name for tool in (await session.list_tools()).tools]
        who = (await session.call_tool("who_called", {})).structured_content
        assert who is not None and "files:write" in who["scopes"] and who["subject"]
