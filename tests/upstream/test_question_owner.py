"""Whose an upstream's question is over stdio, counting requests whose owner dropped them
(unit tests of `Questions.owner_of` and `_ask`; the end-to-end case is in
test_upstream_cancelled_question.py)."""

from __future__ import annotations

from typing import Any

import pytest

from protomcp_host.upstream.requests import Forwarded
from protomcp_host.upstream.settings import UpstreamSettings
from protomcp_host.upstream.source import Upstream
from protomcp_host.upstream.spec import UpstreamSpec

pytest.importorskip("mcp")


class Leg:
    """What `_owner_of` and `_ask` read of the calls layer's leg."""

    def __init__(self) -> None:
        self.live = True
        self.asked: list[str] = []

    def ask_client(
        self, method: str, params: dict[str, Any], timeout: Any, reply: Any, key: str = ""
    ) -> None:
        self.asked.append(method)
        reply({"action": "accept", "content": {"ok": True}}, None)


def connected(grace: float = 60.0, ping_interval: float = 1.0) -> Upstream:
    settings = UpstreamSettings(startup_timeout=30.0, cancel_grace=grace, ping_interval=ping_interval)
    upstream = Upstream(UpstreamSpec("ex", command=("server",)), None, settings)  # type: ignore[arg-type]
    upstream.connection.session = object()  # the connection it has now
    return upstream


def sent(upstream: Upstream, request_id: str) -> Forwarded:
    request = upstream.in_flight.running[request_id] = Forwarded(Leg(), "call_tool", {})  # type: ignore[arg-type]
    request.on = upstream.connection.session
    return request


async def test_the_one_request_in_flight_owns_the_question() -> None:
    upstream = connected()
    request = sent(upstream, "u1")
    assert upstream.questions.owner_of(None) == (request, "", False)


async def test_a_dropped_request_keeps_its_questions_while_the_upstream_may_finish_it() -> None:
    upstream = connected()
    sent(upstream, "u1")
    upstream.drop("u1")
    assert upstream.questions.owner_of(None) == (None, "the request it belongs to was cancelled", True)
    sent(upstream, "u2")  # another user's call: never the owner while u1 may still ask
    owner, why, gone = upstream.questions.owner_of(None)
    assert owner is None and gone and "(1 of them cancelled)" in why


async def test_a_dropped_request_past_the_grace_still_owns_the_question_while_another_runs() -> None:
    upstream = connected(grace=0.0)  # long past: time alone never hands its questions out
    sent(upstream, "u1")
    upstream.drop("u1")
    sent(upstream, "u2")  # another user's call, the only live one
    owner, why, gone = upstream.questions.owner_of(None)
    assert owner is None and gone and "(1 of them cancelled)" in why
    assert not upstream.connection.recycle_due()  # u2 runs: a restart now would lose it


async def test_a_dropped_request_the_upstream_answered_owns_no_more_questions() -> None:
    upstream = connected()
    dropped = sent(upstream, "u1")
    upstream.drop("u1")
    request = sent(upstream, "u2")
    dropped.answered = True  # its answer came after all (the mcp client drops it): it is over
    assert upstream.questions.owner_of(None) == (request, "", False)


async def test_a_dropped_request_is_forgotten_when_the_upstream_restarts() -> None:
    upstream = connected()
    sent(upstream, "u1")
    upstream.drop("u1")
    upstream.connection.session = object()  # restarted: what ran on the old process asks nothing more
    request = sent(upstream, "u2")
    assert upstream.questions.owner_of(None) == (request, "", False)


class Session:
    async def send_ping(self) -> None:
        pass


async def test_an_idle_upstream_is_restarted_once_a_dropped_request_is_unanswered_past_the_grace() -> None:
    upstream = connected(grace=0.0, ping_interval=0.01)
    old = upstream.connection.session = Session()
    sent(upstream, "u1")
    upstream.drop("u1")
    assert upstream.connection.recycle_due()
    reason = await upstream.connection.watch(old)  # the connection ends: run() connects again
    assert "1 cancelled request it had is still unanswered after 0s" in reason
    assert (
        upstream.connection.session is None and upstream.connection.recycling
    )  # no call is sent on it meanwhile
    upstream.connection.session = object()  # the new process
    request = sent(upstream, "u2")
    assert upstream.questions.owner_of(None) == (request, "", False)  # its questions reach it again
    assert not upstream.connection.recycle_due()


async def test_no_restart_before_the_grace() -> None:
    upstream = connected(grace=3600.0)
    sent(upstream, "u1")
    upstream.drop("u1")
    assert not upstream.connection.recycle_due()


async def test_a_question_that_may_be_a_dropped_requests_is_declined() -> None:
    from mcp import types

    upstream = connected()
    sent(upstream, "u1")
    upstream.drop("u1")
    request = sent(upstream, "u2")
    params = types.ElicitRequestFormParams(
        message="Confirm?", requested_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}}
    )
    assert await upstream.questions.elicitation(None, params) == types.ElicitResult(action="decline")
    sampled = await upstream.questions.sampling(
        None, types.CreateMessageRequestParams(messages=[], max_tokens=5)
    )
    assert isinstance(sampled, types.ErrorData) and "cancelled" in sampled.message
    assert request.leg.asked == []  # type: ignore[attr-defined]


async def test_over_http_a_question_on_a_dropped_requests_stream_is_declined() -> None:
    spec = UpstreamSpec("ex", url="http://upstream.test/mcp")
    upstream = Upstream(spec, None, UpstreamSettings(startup_timeout=30.0))  # type: ignore[arg-type]
    upstream.connection.session = object()
    request = sent(upstream, "u1")
    other = sent(upstream, "u2")
    assert upstream.questions.owner_of(request) == (request, "", False)  # its own stream says whose
    upstream.drop("u1")
    assert upstream.questions.owner_of(request) == (None, "the request it belongs to is over", True)
    assert upstream.questions.owner_of(other) == (other, "", False)
