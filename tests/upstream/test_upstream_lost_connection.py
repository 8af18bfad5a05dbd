"""An upstream connection lost while requests are sent on it: each request's own outcome says
what became of it. A 404 for the session (the upstream's new process never saw the request)
sends it again on the next connection, even when the ping or another request heard of the
loss first; a request that ran on the process that died fails once, saying it went away; one
that never hears back fails once the lost connection's wait is over. Fake `mcp` sessions
(no process), so the test decides the order of events."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any

import anyio
import orjson
import pytest

pytest.importorskip("mcp")

from mcp import types
from mcp.shared.exceptions import MCPError

from protomcp_host.upstream.errors import CONNECTION_CLOSED, INVALID_REQUEST
from protomcp_host.upstream.settings import UpstreamSettings
from protomcp_host.upstream.source import Upstream
from protomcp_host.upstream.spec import UpstreamSpec
from protomcp_sdk.wire import envelope_pb2 as pb

pytestmark = pytest.mark.fast

Script = Callable[[dict[str, Any]], Awaitable[Any]]


def session_gone() -> MCPError:
    """What the mcp client raises for a request whose POST got a 404 for its session."""
    return MCPError(code=INVALID_REQUEST, message="Session not found")


def connection_closed() -> MCPError:
    """What the mcp client raises for a request whose connection closed under it."""
    return MCPError(code=CONNECTION_CLOSED, message="Connection closed")


async def answer(arguments: dict[str, Any]) -> Any:
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"hi {arguments['n']}")])


async def pong() -> None:
    await anyio.lowlevel.checkpoint()


class FakeSession:
    """What Upstream uses of an mcp ClientSession; what a call and a ping get is the test's."""

    server_capabilities = SimpleNamespace(tools=object(), resources=None, prompts=None, completions=None)

    def __init__(self, call: Script = answer, ping: Callable[[], Awaitable[None]] = pong) -> None:
        self.call, self.ping = call, ping
        self.watch_ended = anyio.Event()  # the watcher saw the connection lost

    async def initialize(self) -> Any:
        return SimpleNamespace(server_info=SimpleNamespace(name="fake"))

    async def list_tools(self, params: Any = None) -> Any:
        tool = types.Tool(name="ask", input_schema={"type": "object"})
        return SimpleNamespace(tools=[tool], next_cursor=None)

    async def send_ping(self) -> None:
        await self.ping()

    async def call_tool(self, name: str, arguments: dict[str, Any], progress_callback: Any = None) -> Any:
        return await self.call(arguments)


class Events:
    """ProcessEvents that keep nothing."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args: None


class Scripted(Upstream):
    """An HTTP Upstream whose connections are the given fake sessions, in order."""

    def __init__(self, *sessions: FakeSession, **timings: Any) -> None:
        spec = UpstreamSpec(name="up", url="http://127.0.0.1:9/mcp")
        super().__init__(spec, Events(), UpstreamSettings(startup_timeout=30.0, **timings))  # type: ignore[arg-type]
        self.sessions = list(sessions)
        self.watch = self.connection.watch
        self.connection.open_client = self._client  # type: ignore[method-assign]
        self.connection.watch = self._watch  # type: ignore[method-assign]

    @asynccontextmanager
    async def _client(self) -> AsyncIterator[Any]:
        yield self.sessions.pop(0)

    async def _watch(self, session: Any) -> str:
        try:
            return await self.watch(session)
        finally:
            session.watch_ended.set()


class Leg:
    """A Leg that keeps every outcome it is given (there must be one)."""

    live = True

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.outcomes: list[str] = []

    def sent(self, channel: Any, request_id: str) -> None:
        pass

    def answered(self, envelope: pb.Envelope, raw: Any, trusted: bool) -> None:
        [block] = orjson.loads(envelope.call_result.result_json)
        self.outcomes.append(f"answer {block['text']}")
        self.done.set()

    def failed(self, reason: str) -> None:
        self.outcomes.append(f"failed {reason}")
        self.done.set()

    async def outcome(self) -> list[str]:
        with anyio.fail_after(10):
            await self.done.wait()
        await anyio.lowlevel.checkpoint()  # room for a second outcome, which must not come
        return self.outcomes


def call(upstream: Upstream, n: int) -> Leg:
    leg = Leg()
    arguments = orjson.dumps({"n": n}).decode()
    upstream.start(pb.Envelope(call_tool=pb.CallToolRequest(name="up_ask", arguments_json=arguments)), leg)  # type: ignore[arg-type]
    return leg


@asynccontextmanager
async def running(upstream: Upstream) -> AsyncIterator[None]:
    async with anyio.create_task_group() as tg:
        await tg.start(upstream.run)
        yield
        await upstream.stop(0)
        tg.cancel_scope.cancel()


async def test_a_call_whose_404_comes_after_the_pings_is_sent_again() -> None:
    sent = anyio.Event()

    async def gone_after_the_ping(arguments: dict[str, Any]) -> Any:
        sent.set()
        await old.watch_ended.wait()  # the ping's 404 was handled first
        raise session_gone()

    async def ping() -> None:
        await sent.wait()
        raise session_gone()

    old = FakeSession(gone_after_the_ping, ping)
    upstream = Scripted(old, FakeSession(), ping_interval=0.01)
    async with running(upstream):
        assert await call(upstream, 1).outcome() == ["answer hi 1"]
        assert upstream.connects == 2


async def test_a_call_whose_404_comes_after_another_calls_is_sent_again() -> None:
    second_sent = anyio.Event()

    async def gone(arguments: dict[str, Any]) -> Any:
        if arguments["n"] == 1:
            await second_sent.wait()
        else:
            second_sent.set()
            await old.watch_ended.wait()  # the first call's 404 ended the connection first
        raise session_gone()

    old = FakeSession(gone)
    upstream = Scripted(old, FakeSession(), ping_interval=3600)
    async with running(upstream):
        first, second = call(upstream, 1), call(upstream, 2)
        assert await first.outcome() == ["answer hi 1"]
        assert await second.outcome() == ["answer hi 2"]
        assert upstream.connects == 2


async def test_a_call_on_the_upstream_that_died_fails_once_saying_it_went_away() -> None:
    sent = anyio.Event()

    async def closed_after_the_ping(arguments: dict[str, Any]) -> Any:
        sent.set()
        await old.watch_ended.wait()
        raise connection_closed()

    async def ping() -> None:
        await sent.wait()
        raise connection_closed()

    old = FakeSession(closed_after_the_ping, ping)
    upstream = Scripted(old, FakeSession(), ping_interval=0.01)
    async with running(upstream):
        [outcome] = await call(upstream, 1).outcome()
        assert outcome.startswith("failed upstream up went away"), outcome
        assert await call(upstream, 2).outcome() == ["answer hi 2"]  # on the next connection


async def test_a_call_that_never_hears_back_fails_once_the_lost_connection_is_given_up() -> None:
    sent = anyio.Event()

    async def hangs(arguments: dict[str, Any]) -> Any:
        sent.set()
        await anyio.sleep_forever()

    async def ping() -> None:
        await sent.wait()
        raise connection_closed()

    upstream = Scripted(FakeSession(hangs, ping), FakeSession(), ping_interval=0.01, settle_wait=0.05)
    async with running(upstream):
        assert await call(upstream, 1).outcome() == ["failed upstream up went away"]
        assert await call(upstream, 2).outcome() == ["answer hi 2"]
