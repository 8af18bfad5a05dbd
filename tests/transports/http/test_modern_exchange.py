"""A 2026-07-28 request over HTTP is a connection of its own for as long as its POST: the parts
that do not depend on the request are the host's (ModernShared), and the rest is freed by
reference counting when the POST is over. The cyclic GC would otherwise collect a session, its
router and their tables (about fifty objects) per request under load."""

from __future__ import annotations

import gc
from typing import Any

import anyio
import orjson
import pytest

from protomcp_host.app import Host
from protomcp_host.calls.envelope import tool_from_definition
from protomcp_host.calls.rounds import InputRounds
from protomcp_host.calls.router import Router
from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.features import FeatureMethods
from protomcp_host.protocol.modern import ModernEra, ModernFeatures
from protomcp_host.protocol.session import Call, Session, ToolAnswer
from protomcp_host.transports.http.modern import Exchange
from protomcp_sdk.wire import envelope_pb2 as pb

pytestmark = pytest.mark.fast  # starts no process

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
PER_REQUEST = (Session, ModernEra, Router, InputRounds, FeatureMethods, ModernFeatures, Exchange, Call)


def _host() -> tuple[Host, list[tuple[Call, Any]]]:
    """A host with one tool, whose calls are held (no process runs them) until answered."""
    host = Host([], stderr=lambda _: None)
    definition = pb.ToolDefinition(name="echo", description="Echo.", input_schema_json=b'{"type":"object"}')
    host.catalog.replace("tools", [tool_from_definition(definition, "tools")])
    started: list[tuple[Call, Any]] = []
    host.dispatcher.execute = lambda call, sink: started.append((call, sink))  # type: ignore[method-assign,assignment,return-value]
    return host, started


def _request(host: Host, principal: str, method: str, params: dict[str, Any]) -> tuple[Exchange, Any]:
    """What the endpoint does with a POST: a connection fed the parsed body."""
    body = orjson.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": {**params, "_meta": META}})
    parsed = orjson.loads(body)
    message = rpc.classify(parsed)
    assert isinstance(message, rpc.Request)
    exchange = Exchange(host, message, 1 << 20)
    connection = host.connect_modern(exchange.write, principal)
    connection.feed_loaded(body, parsed)
    return exchange, connection


def _end(host: Host, connection: Any) -> None:
    connection.cancel_all()
    host.disconnect(connection)


def _alive() -> list[object]:
    return [o for o in gc.get_objects() if isinstance(o, PER_REQUEST)]


async def test_a_request_leaves_nothing_for_the_cyclic_gc() -> None:
    host, started = _host()
    exchange, connection = _request(host, "alice", "tools/list", {})  # the shared parts are made once
    _end(host, connection)
    gc.collect()
    before = {id(o) for o in _alive()}
    gc.disable()
    try:
        for method, params in [
            ("tools/list", {}),
            ("server/discover", {}),
            ("tools/call", {"name": "nope"}),
            ("resources/list", {}),
        ]:
            exchange, connection = _request(host, "alice", method, params)
            assert exchange.items and exchange.items[-1].startswith(b'{"jsonrpc":"2.0","id":7,')
            _end(host, connection)
            del exchange, connection
        exchange, connection = _request(host, "alice", "tools/call", {"name": "echo", "arguments": {}})
        assert not exchange.items  # the call runs
        [(call, sink)] = started
        sink.call_answered(call, ToolAnswer([b'[{"type":"text","text":"hi"}]'], trusted=True))
        assert b'"resultType":"complete"' in exchange.items[-1]
        _end(host, connection)
        del exchange, connection, call, sink
        started.clear()
        left = [o for o in _alive() if id(o) not in before]
        assert not left  # freed by reference counting alone
        assert not host.routers
    finally:
        gc.enable()


async def test_the_shared_parts_keep_principals_and_requests_apart() -> None:
    host, started = _host()
    alice, first = _request(host, "alice", "tools/call", {"name": "echo", "arguments": {}})
    bob, second = _request(host, "bob", "tools/call", {"name": "echo", "arguments": {}})
    assert first.session.era.shared is second.session.era.shared  # the table, the stamps
    assert first.session.visibility is not second.session.visibility  # each principal's own
    assert first.session.in_flight.keys() == second.session.in_flight.keys() == {b"7"}  # same id, apart
    assert host.routers == [first, second]
    for call, sink in started:
        sink.call_answered(call, ToolAnswer([b'[{"type":"text","text":"x"}]'], trusted=True))
    assert len(alice.items) == len(bob.items) == 1
    _end(host, first)
    assert host.routers == [second]
    _end(host, second)


async def test_an_exchange_waits_for_a_message_the_client_leaving_or_the_time() -> None:
    host = Host([], stderr=lambda _: None)
    exchange = Exchange(host, rpc.Request(b"1", "tools/call", {}), 1 << 20)
    with anyio.fail_after(5):
        await exchange.wait(0.01)  # the time
        assert not exchange.items
        async with anyio.create_task_group() as tg:
            tg.start_soon(exchange.wait, 10.0)
            await anyio.sleep(0)
            exchange.write(b"not this request's", b"2")
            exchange.write(b'{"jsonrpc":"2.0","id":1,"result":{}}', b"1")  # the message
        assert list(exchange.items) == [b'{"jsonrpc":"2.0","id":1,"result":{}}']
        exchange.take()
        async with anyio.create_task_group() as tg:
            tg.start_soon(exchange.wait, 10.0)
            await anyio.sleep(0)
            exchange.leave()  # the client leaving
        assert exchange.gone
        await exchange.wait(10.0)  # (returns at once once gone)


def test_what_waits_is_counted_by_the_memory_it_takes() -> None:
    """orjson's output keeps the 4 KiB buffer it was written in: a waiting notification is
    compacted, and counted with its overhead, so the budget bounds the memory itself."""
    import tracemalloc

    host = Host([], stderr=lambda _: None)
    exchange = Exchange(host, rpc.Request(b"1", "tools/call", {}), 64 << 20)
    note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1}}
    tracemalloc.start()
    try:
        for _ in range(5000):
            exchange.write(orjson.dumps(note), b"1")
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert exchange.held == 5000 * (len(orjson.dumps(note)) + 64)
    assert held < 1.5 * exchange.held  # (20 MiB, 4 KiB each, before)


def test_a_call_stream_over_its_budget_loses_its_oldest_notifications_not_its_answer() -> None:
    lines: list[str] = []
    host = Host([], stderr=lines.append)
    exchange = Exchange(host, rpc.Request(b"1", "tools/call", {}), 1 << 20)
    note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "x" * 1000}})
    for _ in range(3000):  # 3 MB
        exchange.write(note, b"1")
    answer = b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'
    exchange.write(answer, b"1")
    assert exchange.held <= 1 << 20 and exchange.items[-1] == answer and not exchange.cut_off
    assert sum("dropped its oldest messages" in line for line in lines) == 1
    taken = exchange.take()  # a chunk at a time
    assert 0 < sum(map(len, taken)) <= 64 << 10 and exchange.items[-1] == answer


class _Recording:
    """A metrics backend that keeps the requests it is told of (telemetry.metrics.Backend)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, str, str]] = []

    def request(self, method: str, tool: str, outcome: str, error: str) -> Any:
        return lambda seconds: self.requests.append((method, tool, outcome, error))

    def __getattr__(self, name: str) -> Any:  # (sessions, streams, ...: not this test's)
        return lambda *args: None


async def test_the_endpoint_measures_its_request_once_and_its_router_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With metrics on, a 2026-07-28 request is measured by its endpoint, which finds its answer
    anyway: counted once when answered, once as cancelled when its client leaves first; its
    router wraps no write in a meter of its own (that cost ~3 µs a request)."""
    from protomcp_host.telemetry import metrics
    from protomcp_host.transports.http.modern import ModernEndpoint

    backend = _Recording()
    monkeypatch.setattr(metrics, "_backends", [])
    monkeypatch.setattr(metrics, "_recorders", {})
    monkeypatch.setattr(metrics, "ON", False)
    metrics.enable(backend)  # type: ignore[arg-type]
    host, started = _host()
    router = host.connect_modern(lambda data, related=None: None, "alice", measured=True)
    assert router.meter is None  # type: ignore[attr-defined]  # (its endpoint measures)
    host.disconnect(router)
    router = host.connect_modern(lambda data, related=None: None, "alice")
    assert router.meter is not None  # type: ignore[attr-defined]  # (stdio's: its router measures)
    host.disconnect(router)
    arrived = anyio.Event()

    def execute(call: Call, sink: Any) -> None:
        started.append((call, sink))
        arrived.set()

    host.dispatcher.execute = execute  # type: ignore[method-assign,assignment]
    endpoint = ModernEndpoint(host, 15.0, lambda scope: "alice", lambda scope: None)
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "echo",
    }
    scope = {
        "type": "http",
        "method": "POST",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }
    body = orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {}, "_meta": META},
        }
    )
    leave = anyio.Event()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        await leave.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def until_started() -> None:
        with anyio.fail_after(10):
            await arrived.wait()

    async with anyio.create_task_group() as tg:  # answered
        tg.start_soon(endpoint.post, scope, body, orjson.loads(body), receive, send)
        await until_started()
        [(call, sink)] = started
        sink.call_answered(call, ToolAnswer([b'[{"type":"text","text":"hi"}]'], trusted=True))
    assert backend.requests == [("tools/call", "echo", "ok", "")]
    assert b'"text":"hi"' in b"".join(m.get("body", b"") for m in sent)
    started.clear()
    arrived = anyio.Event()
    async with anyio.create_task_group() as tg:  # its client leaves first
        tg.start_soon(endpoint.post, scope, body, orjson.loads(body), receive, send)
        await until_started()
        leave.set()
    assert backend.requests == [
        ("tools/call", "echo", "ok", ""),
        ("tools/call", "echo", "cancelled", "cancelled"),
    ]
