"""A cancelled call's upstream question never reaches another user (issue 37, item 2).

A stdio upstream (an official-SDK server) may finish what it started after a cancel; over stdio
nothing says which request its elicitation belongs to. Alice cancels a transfer; while Bob's
call runs, the upstream asks "Confirm the transfer ... alice-7731?": Bob must never see it, and
the upstream is told "decline". Two principals (OAuth JWTs) on one HTTP host, official SDK clients.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.http import HttpHost, http_session
from tests.upstream.test_upstream import POLICY, texts, upstream_arg, wait_for_file

pytest.importorskip("mcp")
pytest.importorskip("jwt")


@pytest.fixture
def marks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "marks"
    folder.mkdir()
    monkeypatch.setenv("UPSTREAM_MARKS", str(folder))
    return folder


async def test_a_cancelled_calls_question_is_declined_never_asked_of_another_user(
    marks: Path, tmp_path: Path
) -> None:
    import jwt
    from mcp import types

    from tests.transports.http.test_http_security import _keypair

    key, jwks = _keypair(tmp_path)
    issuer = "https://auth.example.com"
    host = HttpHost(
        "run", str(POLICY), "--upstream", upstream_arg(), "--oauth-jwks", jwks, "--oauth-issuer", issuer
    )
    asked: dict[str, list[str]] = {"alice": [], "bob": []}

    def user(name: str) -> dict[str, Any]:
        claims = {"iss": issuer, "aud": host.url, "exp": int(time.time()) + 600, "sub": name}
        token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})

        async def elicit(context: Any, params: Any) -> Any:
            asked[name].append(params.message)
            return types.ElicitResult(action="accept", content={"confirm": True})

        return {"headers": {"authorization": f"Bearer {token}"}, "elicitation_callback": elicit}

    try:
        async with (
            http_session(host.url, **user("alice")) as alice,
            http_session(host.url, **user("bob")) as bob,
        ):
            async with anyio.create_task_group() as tg:
                tg.start_soon(alice.call_tool, "ex_transfer", {"amount": 500, "account": "alice-7731"})
                await wait_for_file(marks / "transfer-started")
                tg.cancel_scope.cancel()  # the SDK client sends notifications/cancelled
            await wait_for_file(marks / "transfer-cancelled")  # it reached the upstream, which goes on

            held: list[Any] = []

            async def bob_holds() -> None:
                held.append(await bob.call_tool("ex_hold", {}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(bob_holds)
                await wait_for_file(marks / "hold-started")  # Bob's call is the one in flight
                (marks / "transfer-go").touch()
                await wait_for_file(marks / "transfer-answer")
                (marks / "release").touch()
            assert texts(held[0]) == ["held"]
        assert asked == {"alice": [], "bob": []}
        assert (marks / "transfer-answer").read_text().split() == ["decline"]
    finally:
        host.terminate()
