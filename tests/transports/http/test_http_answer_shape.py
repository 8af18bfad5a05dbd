"""When a request's answer comes as plain JSON and when as an SSE stream, end to end: the real
host, a real tool file, the official SDK client (and raw HTTP where the wire is the subject).

A slow answer that comes alone is plain JSON in both eras: as one SSE event, an answer over
1 MiB is refused by the official client (its max_sse_event_size). Only a message before the
answer, or the keep-alive interval passing with nothing to send, makes the response a stream."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import orjson
import pytest

from protomcp_host.app import Host
from protomcp_host.transports.http.streamable import HttpOptions, StreamableHTTP
from tests.support.hosts import TOOLS
from tests.support.http import INITIALIZE, INITIALIZED, headers_for, open_raw_session, rpc, sse_events
from tests.transports.http.test_http_inprocess import Exchange

LARGE = TOOLS / "large_answers.py"
SIZE = 20 << 20  # characters: far over the official client's 1 MiB bound on an SSE event


def _call(request_id: int, name: str, **arguments: Any) -> bytes:
    return rpc(request_id, "tools/call", {"name": name, "arguments": arguments})


@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_a_slow_large_answer_reaches_the_official_client(
    http_host: Any, mode: str, version: str
) -> None:
    from mcp import Client

    host = http_host("run", str(LARGE))
    async with Client(host.url, mode=mode, cache=None) as client:  # type: ignore[arg-type]
        assert client.session.protocol_version == version
        with anyio.fail_after(120):
            result = await client.call_tool("slow_text", {"seconds": 0.3, "size": SIZE})
    text = result.content[0].text  # type: ignore[union-attr]
    assert not result.is_error and len(text) == SIZE and text.strip("x") == ""


async def test_a_slow_silent_answer_is_plain_json_on_the_wire(http_host: Any) -> None:
    host = http_host("run", str(LARGE))
    async with httpx2.AsyncClient(timeout=30) as client:
        session_id = await open_raw_session(client, host.url)
        answered = await client.post(
            host.url, content=_call(3, "slow_text", seconds=0.3, size=10), headers=headers_for(session_id)
        )
    assert answered.headers["content-type"].startswith("application/json")
    assert answered.json()["result"]["content"][0]["text"] == "x" * 10


async def test_progress_before_a_slow_answer_streams_it(http_host: Any) -> None:
    host = http_host("run", str(LARGE))
    async with httpx2.AsyncClient(timeout=30) as client:
        session_id = await open_raw_session(client, host.url)
        call = rpc(
            4,
            "tools/call",
            {
                "name": "progress_then_text",
                "arguments": {"seconds": 0.3, "size": 10},
                "_meta": {"progressToken": 1},
            },
        )
        streamed = await client.post(host.url, content=call, headers=headers_for(session_id))
    assert streamed.headers["content-type"].startswith("text/event-stream")
    events = sse_events(streamed.text)
    assert events[0]["data"] == "" and "retry" in events[0]  # the priming event, as before
    messages = [orjson.loads(e["data"]) for e in events if e.get("data")]
    assert [m.get("method") for m in messages] == ["notifications/progress"] * 2 + [None]
    assert messages[-1]["id"] == 4 and messages[-1]["result"]["content"][0]["text"] == "y" * 10

    from mcp import Client

    steps: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append(progress)

    async with Client(host.url, mode="legacy", cache=None) as official:
        result = await official.call_tool(
            "progress_then_text", {"seconds": 0.3, "size": 1000}, progress_callback=on_progress
        )
    assert result.content[0].text == "y" * 1000 and steps == [1, 2]  # type: ignore[union-attr]


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _modern_call(request_id: int, seconds: float) -> Exchange:
    params = {"name": "slow_text", "arguments": {"seconds": seconds, "size": 5}, "_meta": MODERN_META}
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "slow_text"}
    body = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
    return Exchange("POST", body, headers)


async def _stateful_session(app: StreamableHTTP) -> dict[str, str]:
    init = Exchange("POST", INITIALIZE)
    await app(init.scope, init.receive, init.send)
    given = {"mcp-session-id": init.headers()[b"mcp-session-id"].decode()}
    notified = Exchange("POST", INITIALIZED, given)
    await app(notified.scope, notified.receive, notified.send)
    return given


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_a_call_silent_past_the_keep_alive_interval_becomes_a_stream(era: str) -> None:
    """The real host with a real tool file, its HTTP app driven in-process with a short
    keep-alive interval: a call that sends nothing for longer turns into an SSE stream (a proxy
    would cut a silent connection), and its answer comes on it; a quick one stays JSON."""
    host = Host([LARGE], stderr=lambda _: None)
    app = StreamableHTTP(host, HttpOptions(keepalive=0.2))
    async with anyio.create_task_group() as tg:
        await host.start(tg)
        if era == "2026-07-28":
            quick, slow = _modern_call(2, 0), _modern_call(3, 2)
        else:
            given = await _stateful_session(app)
            quick = Exchange("POST", _call(2, "slow_text", seconds=0, size=5), given)
            slow = Exchange("POST", _call(3, "slow_text", seconds=2, size=5), given)
        await app(quick.scope, quick.receive, quick.send)
        assert quick.headers()[b"content-type"] == b"application/json"
        with anyio.fail_after(30):
            await app(slow.scope, slow.receive, slow.send)
        assert slow.headers()[b"content-type"] == b"text/event-stream"
        events = sse_events(slow.text())
        if era == "2025-11-25":
            assert events[0]["data"] == "" and "retry" in events[0]  # the priming event
        answer = orjson.loads([e for e in events if e.get("data")][-1]["data"])
        assert answer["id"] == 3 and answer["result"]["content"][0]["text"] == "xxxxx"
        app.close_all()
        await host.stop(1.0)
        tg.cancel_scope.cancel()


async def test_a_client_that_leaves_a_json_pending_call_does_not_cancel_it() -> None:
    """A client that disconnects while its answer is awaited as JSON gets no response (it has no
    event id to resume from: the answer is lost with the connection); the call runs on, as a
    disconnect is no cancellation, and the session serves on."""
    host = Host([LARGE], stderr=lambda _: None)
    app = StreamableHTTP(host, HttpOptions())
    async with anyio.create_task_group() as tg:
        await host.start(tg)
        given = await _stateful_session(app)
        hs = app.sessions[given["mcp-session-id"]]
        slow = Exchange("POST", _call(3, "gated_text", key="g"), given)
        with anyio.fail_after(30):
            async with anyio.create_task_group() as request:
                request.start_soon(app, slow.scope, slow.receive, slow.send)
                while b"3" not in hs.session.in_flight:  # the call runs
                    await anyio.wait_all_tasks_blocked()
                stream = hs.pending[b"3"]
                slow.hung_up.set()
            assert slow.sent == [] and not stream.done  # the request is over; the call is not
            opened = Exchange("POST", _call(4, "open_gate", key="g"), given)
            await app(opened.scope, opened.receive, opened.send)
            while not stream.done:
                await stream.wait(1)
        assert orjson.loads(stream.events[-1][1])["result"]["content"][0]["text"] == "through g"
        ping = Exchange("POST", rpc(5, "ping"), given)
        await app(ping.scope, ping.receive, ping.send)
        assert orjson.loads(ping.text())["result"] == {}
        app.close_all()
        await host.stop(1.0)
        tg.cancel_scope.cancel()
