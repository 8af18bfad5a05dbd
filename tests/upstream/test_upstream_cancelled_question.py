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


class _Leg:
    """The calls layer's side of one request to a real Upstream: its answer, and what it was asked."""

    live = True

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.answer: Any = None
        self.failure = ""
        self.asked: list[str] = []

    def sent(self, channel: Any, request_id: str) -> None:
        pass

    def progress(self, note: Any) -> None:
        pass

    def answered(self, envelope: Any, raw: Any, trusted: bool) -> None:
        self.answer = envelope
        self.done.set()

    def failed(self, reason: str) -> None:
        self.failure = reason
        self.done.set()

    def ask_client(self, method: str, params: Any, timeout: Any, reply: Any, key: str = "") -> None:
        self.asked.append(params["message"])
        content = {"name": "Ada"} if "name" in params["message"] else {"confirm": True}
        reply({"action": "accept", "content": content}, None)


class _Events:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def loaded(self, label: str, offer: Any) -> None: ...

    def problem(self, message: str) -> None:
        self.problems.append(message)


async def test_an_idle_stdio_upstream_is_restarted_to_forget_a_cancelled_request(marks: Path) -> None:
    """The real Upstream and a real SDK server over stdio, with the grace (a constructor
    setting, no flag) at 0: the cancelled transfer still owns its question while Bob's call
    runs, then, as nothing runs, the upstream is restarted and a question reaches the one call
    in flight again."""
    import sys

    from protomcp_host.upstream.settings import UpstreamSettings
    from protomcp_host.upstream.source import Upstream
    from protomcp_host.upstream.spec import UpstreamSpec
    from protomcp_sdk.wire import envelope_pb2 as pb
    from tests.upstream.test_upstream import SERVER

    events = _Events()
    spec = UpstreamSpec("ex", command=(sys.executable, str(SERVER)))
    settings = UpstreamSettings(startup_timeout=30.0, cancel_grace=0.0, ping_interval=0.05)
    upstream = Upstream(spec, events, settings)  # type: ignore[arg-type]

    def call(name: str, arguments: str = "{}") -> _Leg:
        leg = _Leg()
        envelope = pb.Envelope(call_tool=pb.CallToolRequest(name=name, arguments_json=arguments))
        upstream.start(envelope, leg)  # type: ignore[arg-type]
        return leg

    async with anyio.create_task_group() as tg:
        await tg.start(upstream.run)
        try:
            bob = call("ex_hold")
            await wait_for_file(marks / "hold-started")
            call("ex_transfer", '{"amount": 500, "account": "alice-7731"}')
            await wait_for_file(marks / "transfer-started")
            upstream.drop("u2")  # Alice cancels: the server goes on, and never answers it
            await wait_for_file(marks / "transfer-cancelled")
            (marks / "transfer-go").touch()
            await wait_for_file(marks / "transfer-answer")
            assert (marks / "transfer-answer").read_text().split() == ["decline"]
            assert upstream.connects == 1  # past the grace, but Bob's call runs: no restart
            (marks / "release").touch()
            with anyio.fail_after(20):
                await bob.done.wait()
            assert bob.failure == "" and bob.asked == []
            with anyio.fail_after(20):  # nothing runs now: restarted
                while upstream.connects < 2:
                    await anyio.sleep(0.02)
            assert len((marks / "started").read_text().split()) == 2
            [line] = [p for p in events.problems if "restarting" in p]
            assert line.startswith("upstream ex: restarting it: it is idle and 1 cancelled request")
            carol = call("ex_ask_name")
            with anyio.fail_after(20):
                await carol.done.wait()
            assert carol.asked == ["What is your name?"]
            assert "hello Ada" in carol.answer.call_result.result_json
        finally:
            await upstream.stop(1)
            tg.cancel_scope.cancel()
