"""Flow control and shutdown of the transports (issue 13): large answers over stdio, memory for
unread answers bounded in bytes, every in-flight request answered at SIGTERM, HTTP batches whose
ids collide, idle sessions that expire, --max-in-flight over HTTP, bounded SSE replay buffers."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import orjson

from tests.support.hosts import HOST, TOOLS, RawHost
from tests.support.http import (
    ACCEPT,
    INITIALIZE,
    INITIALIZED,
    HttpHost,
    answer_of,
    headers_for,
    rpc,
    sse_events,
)
from tests.transports.http.test_http_inprocess import Exchange

FLOW = TOOLS / "flow.py"
NOT_STARTED = "the host is shutting down; the request was not started"
BIG = 20_000_000  # larger than the stdio writer's 16 MiB high-water mark


def call(request_id: int, name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def answer(host: RawHost, request_id: int, timeout: float = 60) -> dict[str, Any]:
    """The answer to `request_id`, skipping notifications."""
    while True:
        message = host.recv(timeout)
        if "method" not in message:
            assert message["id"] == request_id, message
            return message


def text_of(message: dict[str, Any]) -> str:
    return message["result"]["content"][0]["text"]


# -- 1. stdio: one large answer must not stall the session -------------------------------------------


def test_after_an_answer_larger_than_the_high_water_mark_the_session_goes_on(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(FLOW))
    host.initialize()
    host.send(call(1, "big", size=BIG))
    assert len(text_of(answer(host, 1))) == BIG
    for request_id in (2, 3):  # before the fix: never answered, input stayed paused
        host.send(call(request_id, "add", a=request_id, b=1))
        assert text_of(answer(host, request_id)) == str(request_id + 1)
    host.send({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "nowhere://x"}})
    assert "error" in answer(host, 4)
    assert host.close(timeout=30) == 0  # end of input is seen: the host ends on its own


def test_large_answers_a_client_leaves_unread_are_all_delivered(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(FLOW), read_stdout=False)
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    host.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})
    count = 6  # 120 MB of answers while the client reads nothing
    for request_id in range(1, count + 1):
        host.send(call(request_id, "big", size=BIG))
    host.wait_stderr("the client is not reading its answers")
    host.start_reading_stdout()
    assert host.recv()["id"] == 0  # initialize
    seen = []
    for _ in range(count):  # concurrent calls: answered as they finish, each whole and once
        message = host.recv(timeout=60)
        assert len(text_of(message)) == BIG
        seen.append(message["id"])
    assert sorted(seen) == list(range(1, count + 1))
    host.send(call(count + 1, "add", a=1, b=1))
    assert text_of(answer(host, count + 1)) == "2"
    assert host.close(timeout=30) == 0


async def test_memory_for_unread_answers_is_bounded_in_bytes() -> None:
    """However many answers finish while the client reads nothing, the transport holds at most its
    high-water mark plus the one answer that crossed it; the rest waits in a file, in order."""
    from protomcp_host.transports.outbox import Outbox

    read_end, write_end = os.pipe()
    high, size, count = 256 * 1024, 100_000, 60  # 6 MB of answers, far beyond the pipe's buffer
    changes: list[bool] = []
    out = Outbox(write_end, on_pressure=changes.append, chunk=64 * 1024, high_water=high, low_water=high // 4)
    messages = [bytes([65 + i % 26]) * size + b"\n" for i in range(count)]
    for message in messages:
        out.write(message)
        assert out.held <= high + size  # not count * size
    assert out.full and changes == [True]
    assert out.spilled > 0 and out.held + out.spilled == count * size + count

    received = bytearray()
    reader = threading.Thread(target=_read_all, args=(read_end, received))
    reader.start()  # the client reads at last
    await out.drain(30)
    assert out.spilled == 0 and out.held == 0 and not out.full and changes[-1] is False
    out.writer.close()
    reader.join(30)
    assert bytes(received) == b"".join(messages)


async def test_notifications_past_the_limit_are_dropped_while_answers_are_kept() -> None:
    """A tool that logs in a loop while the client reads nothing cannot fill the disk: past
    `notice_limit` bytes in the file, notifications are dropped (reported once); answers never."""
    from protomcp_host.protocol import jsonrpc as rpc
    from protomcp_host.transports.outbox import Outbox

    read_end, write_end = os.pipe()
    high = 64 * 1024
    told: list[bool] = []
    out = Outbox(
        write_end,
        on_pressure=lambda full: None,
        high_water=high,
        low_water=high // 4,
        notice_limit=200_000,
        on_drop=lambda: told.append(True),
    )
    log = rpc.notification("notifications/message", {"level": "info", "data": "x" * 1000})
    answers = [rpc.result(f"{i}".encode(), {"content": [], "pad": "y" * 5000}) for i in range(100)]
    for answer in answers:
        for _ in range(10):
            out.send(log)
        out.send(answer)
    assert told == [True] and out.dropped > 0
    assert out.held + out.spilled < 200_000 + high + 100 * 5100 + 20_000  # not 1,000 log lines more

    received = bytearray()
    reader = threading.Thread(target=_read_all, args=(read_end, received))
    reader.start()
    await out.drain(30)
    out.writer.close()
    reader.join(30)
    lines = bytes(received).splitlines()
    assert [line for line in lines if b'"result"' in line] == answers  # every answer, in order
    assert lines.count(log) == 1000 - out.dropped


def _read_all(fd: int, into: bytearray) -> None:
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while chunk := pipe.read(1 << 20):
            into += chunk


# -- 4. SIGTERM: every request gets an answer before the stream ends ------------------------------------


def test_sigterm_answers_running_and_held_calls_over_stdio(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(FLOW), "--drain-timeout", "0.5", "--max-in-flight", "1")
    host.initialize()
    host.send(call(1, "hold", key="never"))
    assert host.recv()["params"]["data"] == "holding never"  # it runs
    host.send(call(2, "add", a=1, b=2))  # held: one call at a time
    host.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    host.send(call(4, "add", a=1, b=2))
    host.proc.send_signal(signal.SIGTERM)
    answers = {}
    while True:
        try:
            message = host.recv(timeout=30)
        except EOFError:
            break
        if "id" in message:
            assert message["id"] not in answers, message  # exactly one answer each
            answers[message["id"]] = message
    assert sorted(answers) == [1, 2, 3, 4]
    assert "shutting down" in text_of(answers[1]) and answers[1]["result"]["isError"]
    for held in (2, 4):
        assert answers[held]["error"]["message"] == NOT_STARTED
    assert answers[3]["result"] == {}


def test_sigterm_answers_requests_still_in_the_pipe(raw_host) -> None:  # type: ignore[no-untyped-def]
    """Reading pauses while a request is held (--max-in-flight), so what the client writes next
    waits in the pipe; a signal then still answers every whole line written before it."""
    host = raw_host("run", str(FLOW), "--drain-timeout", "0.5", "--max-in-flight", "1")
    host.initialize()
    host.send(call(1, "hold", key="never"))
    assert host.recv()["params"]["data"] == "holding never"
    host.send(call(2, "add", a=1, b=2))  # held: the host stops reading after it
    stdin = host.proc.stdin.fileno()
    os.set_blocking(stdin, False)
    written = 0
    while True:  # pings (each under PIPE_BUF: written whole or not at all) until the pipe is full
        try:
            os.write(stdin, b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % (100 + written))
        except BlockingIOError:
            break
        written += 1
    host.proc.send_signal(signal.SIGTERM)
    answered = set()
    while True:
        try:
            message = host.recv(timeout=30)
        except EOFError:
            break
        if "id" in message:
            assert message["id"] not in answered, message  # exactly one answer each
            answered.add(message["id"])
    assert answered == {1, 2, *range(100, 100 + written)}, (written, len(answered))
    assert host.close() == 0


STUCK_IMPORT = """
import threading
threading.Event().wait()
"""


def test_sigterm_before_the_tool_files_load_answers_held_requests(raw_host, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    file = tmp_path / "slow.py"
    file.write_text(STUCK_IMPORT)
    host = raw_host("run", str(file), "--drain-timeout", "0.5")
    host.initialize()  # answered at once; tools/* wait for the files
    host.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    host.send(call(2, "anything"))
    host.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})  # held behind them, in order
    host.proc.send_signal(signal.SIGTERM)
    answers = {message["id"]: message for message in (host.recv(timeout=30) for _ in range(3))}
    assert sorted(answers) == [1, 2, 3]
    for request_id in (1, 2):
        assert answers[request_id]["error"]["message"] == NOT_STARTED
    assert answers[3]["result"] == {}
    assert host.close() == 0


# -- HTTP ------------------------------------------------------------------------------------------


async def _open(client: Any, url: str, version: str = "2025-11-25") -> str:
    """Initialize a session over raw HTTP in `version`; returns its id."""
    hello = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    headers = {"accept": ACCEPT, "content-type": "application/json"}
    response = await client.post(url, content=rpc(0, "initialize", hello), headers=headers)
    assert response.status_code == 200, response.text
    session_id: str = response.headers["mcp-session-id"]
    notified = await client.post(url, content=INITIALIZED, headers=headers_for(session_id))
    assert notified.status_code == 202
    return session_id


class Streamed:
    """A POST whose answer streams (SSE): its messages as they come, and its end."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.grew = asyncio.Event()
        self.ended = asyncio.Event()

    async def run(self, client: Any, url: str, body: bytes, session_id: str) -> None:
        try:
            async with client.stream("POST", url, content=body, headers=headers_for(session_id)) as response:
                buffer = ""
                async for text in response.aiter_text():
                    buffer += text
                    *events, buffer = buffer.split("\n\n")
                    for event in sse_events("\n\n".join(events)):
                        if event.get("data"):
                            self.messages.append(orjson.loads(event["data"]))
                            self.grew.set()
        finally:
            self.ended.set()

    async def wait_for(self, want: Any) -> dict[str, Any]:
        async with asyncio.timeout(30):
            while True:
                for message in self.messages:
                    if want(message):
                        return message
                self.grew.clear()
                await self.grew.wait()

    def answers(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if "result" in m or "error" in m]


def _call_body(request_id: int, name: str, **arguments: Any) -> bytes:
    return orjson.dumps(call(request_id, name, **arguments))


def _logged(text: str) -> Any:
    return lambda m: m.get("method") == "notifications/message" and m["params"]["data"] == text


async def test_a_batch_reusing_ids_in_use_is_answered_in_the_batch_and_the_session_expires() -> None:
    import httpx2

    host = HttpHost("run", str(FLOW), "--session-timeout", "1")
    try:
        async with httpx2.AsyncClient(timeout=20) as client, asyncio.TaskGroup() as tg:
            session_id = await _open(client, host.url, "2025-03-26")  # the revision with batches
            held = Streamed()
            tg.create_task(held.run(client, host.url, _call_body(1, "hold", key="b1"), session_id))
            await held.wait_for(_logged("holding b1"))  # id 1 is in progress
            # A quick request, then its id again, then the id of the call in progress, last (before
            # the fix: the batch's answer went to request 1's stream and the POST never ended).
            ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
            batch = [ping, ping, call(1, "add", a=1, b=1)]
            response = await client.post(
                host.url, content=orjson.dumps(batch), headers=headers_for(session_id)
            )
            assert response.status_code == 200
            answers = response.json()
            assert sorted((a["id"], "error" in a) for a in answers) == [
                (1, True),
                (2, False),
                (2, True),
            ]
            for refused in (a for a in answers if "error" in a):
                assert refused["error"]["code"] == -32600
                assert f"id {refused['id']} is already in use" in refused["error"]["message"]
            mixed = [call(3, "add", a=3, b=3), {"jsonrpc": "2.0", "id": 1, "method": "ping"}]
            response = await client.post(
                host.url, content=orjson.dumps(mixed), headers=headers_for(session_id)
            )
            ran, refused = sorted(response.json(), key=lambda a: a["id"], reverse=True)
            assert (
                ran["result"]["content"][0]["text"] == "6" and "already in use" in refused["error"]["message"]
            )
            release = await client.post(
                host.url, content=_call_body(4, "release", key="b1"), headers=headers_for(session_id)
            )
            assert answer_of(release)["result"]["content"][0]["text"] == "ok"
            async with asyncio.timeout(30):
                await held.ended.wait()
            assert [a["result"]["content"][0]["text"] for a in held.answers()] == [
                "released b1"
            ]  # one answer
        # Nothing is in progress and no connection is open: the idle session expires.
        host.wait_stderr(lambda line: f"session {session_id[:8]}" in line and "expired" in line)
        async with httpx2.AsyncClient(timeout=20) as client:
            gone = await client.post(host.url, content=rpc(5, "ping"), headers=headers_for(session_id))
            assert gone.status_code == 404
    finally:
        host.terminate()


async def test_a_single_request_reusing_a_batch_id_in_progress_is_refused() -> None:
    import httpx2

    host = HttpHost("run", str(FLOW))
    try:
        async with httpx2.AsyncClient(timeout=20) as client, asyncio.TaskGroup() as tg:
            session_id = await _open(client, host.url, "2025-03-26")
            body = orjson.dumps([call(7, "hold_sync", key="b2")])
            batch = tg.create_task(client.post(host.url, content=body, headers=headers_for(session_id)))
            async with asyncio.timeout(30):  # the batch's call runs
                while True:
                    again = await client.post(
                        host.url, content=rpc(7, "ping"), headers=headers_for(session_id)
                    )
                    if "error" in again.json():
                        break
            assert "already in use" in again.json()["error"]["message"]
            await client.post(
                host.url, content=_call_body(8, "release", key="b2"), headers=headers_for(session_id)
            )
            assert [a["result"]["content"][0]["text"] for a in (await batch).json()] == ["released b2"]
    finally:
        host.terminate()


async def test_calls_beyond_max_in_flight_wait_their_turn_over_http() -> None:
    import httpx2

    host = HttpHost("run", str(FLOW), "--max-in-flight", "1")
    try:
        async with httpx2.AsyncClient(timeout=20) as client, asyncio.TaskGroup() as tg:
            session_id = await _open(client, host.url)
            other = await _open(client, host.url)
            held = Streamed()
            tg.create_task(held.run(client, host.url, _call_body(1, "hold", key="m1"), session_id))
            await held.wait_for(_logged("holding m1"))
            waiting = tg.create_task(
                client.post(host.url, content=_call_body(2, "add", a=1, b=2), headers=headers_for(session_id))
            )
            # Another session has its own bound: it releases the first call, and the second runs.
            await client.post(
                host.url, content=_call_body(1, "release", key="m1"), headers=headers_for(other)
            )
            assert answer_of(await waiting)["result"]["structuredContent"] == {"result": 3}  # not refused
            assert [a["result"]["content"][0]["text"] for a in held.answers()] == ["released m1"]
    finally:
        host.terminate()


async def test_sigterm_answers_calls_past_the_drain_timeout_over_http() -> None:
    import httpx2

    host = HttpHost("run", str(FLOW), "--drain-timeout", "0.5")
    try:
        async with httpx2.AsyncClient(timeout=20) as client, asyncio.TaskGroup() as tg:
            session_id = await _open(client, host.url)
            held = Streamed()
            tg.create_task(held.run(client, host.url, _call_body(1, "hold", key="never"), session_id))
            await held.wait_for(_logged("holding never"))
            host.proc.send_signal(signal.SIGTERM)
            async with asyncio.timeout(30):
                await held.ended.wait()
        [answer_] = held.answers()
        assert answer_["result"]["isError"]
        assert (
            "shutting down and the call did not finish within 0.5s" in answer_["result"]["content"][0]["text"]
        )
        assert host.proc.wait(30) == 0
    finally:
        host.terminate()


async def test_a_draining_host_refuses_new_connections_and_serves_open_ones() -> None:
    """After SIGTERM a new connection is refused (a balancer tries another host: nothing was
    sent), while a request on a connection already open is served and closes it (before: 503,
    which a balancer does not repeat elsewhere for a POST)."""
    import httpx2

    host = HttpHost("run", str(FLOW), "--drain-timeout", "30")
    try:
        async with httpx2.AsyncClient(timeout=20) as client, asyncio.TaskGroup() as tg:
            session_id = await _open(client, host.url)
            held = Streamed()
            tg.create_task(held.run(client, host.url, _call_body(1, "hold", key="d"), session_id))
            await held.wait_for(_logged("holding d"))
            ping = await client.post(host.url, content=rpc(3, "ping"), headers=headers_for(session_id))
            assert ping.status_code == 200  # (on a second connection, which stays open, idle)
            host.proc.send_signal(signal.SIGTERM)
            await asyncio.to_thread(host.wait_stderr, lambda line: "draining" in line, 10)
            async with httpx2.AsyncClient(timeout=20) as newcomer:
                try:
                    await newcomer.post(host.url, content=INITIALIZE, headers=headers_for(session_id))
                except httpx2.ConnectError:
                    pass
                else:
                    raise AssertionError("a new connection was accepted while the host drains")
            released = await client.post(
                host.url, content=_call_body(2, "release", key="d"), headers=headers_for(session_id)
            )
            assert released.status_code == 200 and answer_of(released)["result"]["content"][0]["text"] == "ok"
            assert released.headers["connection"] == "close"
            async with asyncio.timeout(30):
                await held.ended.wait()
        assert [text_of(a) for a in held.answers()] == ["released d"]  # it finished in the drain
        assert host.proc.wait(30) == 0
    finally:
        host.terminate()


# -- in-process: the pieces behind the HTTP behaviour -----------------------------------------------


async def _answered(exchange: Any) -> None:
    while not (
        exchange.sent
        and exchange.sent[-1]["type"] == "http.response.body"
        and not exchange.sent[-1].get("more_body")
    ):
        await exchange.changed.wait()


class _Connection:
    """Stands in for the bridge's Router: transports see only transports.ports.Connection."""

    def __init__(self) -> None:
        self.session = SimpleNamespace(in_flight={})
        self.on_call_end: Any = None

    def cancel_all(self) -> None:
        pass


class _Host:
    """Stands in for app.Host: transports see only transports.ports.Sessions."""

    max_in_flight = 1

    def __init__(self) -> None:
        self.lines: list[str] = []

    def connect(self, write: Any) -> _Connection:
        return _Connection()

    def disconnect(self, connection: Any) -> None:
        pass

    def stderr(self, text: str) -> None:
        self.lines.append(text)


def test_a_sessions_stream_messages_are_bounded_in_bytes_oldest_first() -> None:
    from protomcp_host.transports.http.event_stream import MESSAGE_OVERHEAD
    from protomcp_host.transports.http.sessions import HttpSession

    host = _Host()
    limit, size = 1 << 20, 60_000
    hs = HttpSession("s" * 32, host, replay_bytes=limit)  # type: ignore[arg-type]
    note = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"%s"}}'
    for i in range(100):  # 6 MB for a GET stream nobody reads: was kept whole (1,000 messages)
        hs.write(note % (b"%05d" % i + b"y" * size), None)
    assert hs.budget.held <= limit
    kept = [data for _, data in hs.get_stream.events]
    assert kept and b'"%05d' % 99 in kept[-1]  # the newest stay, the oldest went
    assert b'"%05d' % 0 not in b"".join(kept)
    assert hs.budget.held == sum(len(data) + MESSAGE_OVERHEAD for data in kept)
    # A request's stream shares the bound; its answer (the newest message) is kept.
    stream = hs.open_stream(b"5")
    answer = b'{"jsonrpc":"2.0","id":5,"result":{"text":"' + b"z" * (2 * limit) + b'"}}'
    hs.write(answer, b"5")
    assert stream.done and stream.events[-1][1] == answer
    assert hs.get_stream.events == type(hs.get_stream.events)()  # everything older went for it
    hs.forget(stream)
    assert hs.budget.held == 0 and hs.budget.count == 0
    dropped = [line for line in host.lines if "dropped its oldest stream messages" in line]
    assert len(dropped) == 1  # one line, not one per message


def test_a_legacy_sse_sessions_stream_is_bounded_in_bytes_too() -> None:
    from protomcp_host.transports.http.sse import SseSession

    host = _Host()
    session = SseSession("l" * 32, host, None, replay_bytes=1 << 20)  # type: ignore[arg-type]
    for i in range(100):  # 6 MB: was kept up to 10,000 messages whatever their size
        session.write(b'{"n":%d,"pad":"%s"}' % (i, b"y" * 60_000))
    assert session.budget.held <= 1 << 20 and session.stream.events[-1][1].startswith(b'{"n":99,')
    assert len([line for line in host.lines if "dropped its oldest stream messages" in line]) == 1


def test_a_finished_stream_whose_messages_were_dropped_ends_a_resumption() -> None:
    from protomcp_host.transports.http.event_stream import MESSAGE_OVERHEAD, EventStream, ReplayBudget

    budget = ReplayBudget(200)
    old = EventStream("1", budget=budget)
    old.push(b"x" * 80, last=True)  # (each costs 80 + MESSAGE_OVERHEAD)
    new = EventStream("2", budget=budget)
    new.push(b"y" * 80)
    assert not old.events and budget.held == 80 + MESSAGE_OVERHEAD
    assert old.after(0) == [] and old.finished(0)  # nothing to wait for: the stream is over


async def test_a_call_beyond_max_in_flight_waits_bounded_then_is_refused() -> None:
    from protomcp_host.app import Host
    from protomcp_host.settings import RunSettings
    from protomcp_host.transports.http.streamable import HttpOptions, StreamableHTTP

    host = Host([], RunSettings(max_in_flight=1), stderr=lambda _: None)
    app = StreamableHTTP(host, HttpOptions(turn_timeout=0.2))
    init = Exchange("POST", INITIALIZE)
    await app(init.scope, init.receive, init.send)
    session_id = init.headers()[b"mcp-session-id"].decode()
    hs = app.sessions[session_id]
    hs.session.in_flight[b"99"] = SimpleNamespace(execution=None)  # type: ignore[assignment]  # a call that runs on and on
    given = {"mcp-session-id": session_id}
    refused = Exchange("POST", _call_body(1, "add", a=1, b=1), given)
    await app(refused.scope, refused.receive, refused.send)
    error = orjson.loads(refused.text())["error"]
    assert error["code"] == -32000 and "none ended within 0.2s" in error["message"]
    assert b"1" not in hs.pending and "1" not in [s.key for s in hs.streams.values() if s.key != "0"]

    app.options.turn_timeout = 30
    async with anyio.create_task_group() as tg:
        cancelled = Exchange("POST", _call_body(2, "add", a=1, b=1), given)
        tg.start_soon(app, cancelled.scope, cancelled.receive, cancelled.send)
        turn = Exchange("POST", _call_body(3, "add", a=1, b=1), given)
        tg.start_soon(app, turn.scope, turn.receive, turn.send)
        with anyio.fail_after(10):
            while b"2" not in hs.pending or b"3" not in hs.pending:  # both wait their turn
                await anyio.wait_all_tasks_blocked()
        notice = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
        bye = Exchange("POST", orjson.dumps(notice), given)
        await app(bye.scope, bye.receive, bye.send)
        with anyio.fail_after(10):
            await _answered(cancelled)
        assert cancelled.status == 202  # cancelled while waiting: never run, no answer
        del hs.session.in_flight[b"99"]
        hs.router.on_call_end()  # type: ignore[misc]  # the long call ends: the next one runs
        with anyio.fail_after(10):
            await _answered(turn)
    assert "Unknown tool" in orjson.loads(turn.text())["error"]["message"]  # it ran (no tool files here)

    # Shutdown: a call still waiting for its turn is answered too (never started).
    hs.session.in_flight[b"99"] = SimpleNamespace(execution=None)  # type: ignore[assignment]
    async with anyio.create_task_group() as tg:
        late = Exchange("POST", _call_body(4, "add", a=1, b=1), given)
        tg.start_soon(app, late.scope, late.receive, late.send)
        with anyio.fail_after(10):
            while b"4" not in hs.pending:
                await anyio.wait_all_tasks_blocked()
        app.drain()
        app.close_all()
        with anyio.fail_after(10):
            await _answered(late)
    assert late.status == 200
    assert orjson.loads(late.text())["error"]["message"] == NOT_STARTED


async def test_several_calls_waiting_for_one_slot_each_get_their_turn() -> None:
    """When one call ends and several wait, one takes the slot and the others wait on (until
    the turn timeout), instead of being refused as "busy" at once."""
    from protomcp_host.app import Host
    from protomcp_host.settings import RunSettings
    from protomcp_host.transports.http.streamable import HttpOptions, StreamableHTTP

    host = Host([], RunSettings(max_in_flight=1), stderr=lambda _: None)
    app = StreamableHTTP(host, HttpOptions(turn_timeout=30))
    init = Exchange("POST", INITIALIZE)
    await app(init.scope, init.receive, init.send)
    session_id = init.headers()[b"mcp-session-id"].decode()
    hs = app.sessions[session_id]
    running = hs.session.in_flight
    running[b"99"] = SimpleNamespace(execution=None)  # type: ignore[assignment]  # a call that runs on
    feed = hs.router.feed

    def feed_long_call(body: bytes) -> None:  # the call that gets the turn runs on too
        feed(body)
        running[orjson.dumps(orjson.loads(body)["id"])] = SimpleNamespace(execution=None)  # type: ignore[assignment]

    hs.router.feed = feed_long_call  # type: ignore[method-assign]
    given = {"mcp-session-id": session_id}
    waiters = [Exchange("POST", _call_body(n, "add", a=1, b=1), given) for n in (5, 6, 7)]
    async with anyio.create_task_group() as tg:
        for waiter in waiters:
            tg.start_soon(app, waiter.scope, waiter.receive, waiter.send)
        with anyio.fail_after(10):
            while not all(key in hs.pending for key in (b"5", b"6", b"7")):
                await anyio.wait_all_tasks_blocked()
        for _ in waiters:  # each call that ends lets exactly one more run
            del running[next(iter(running))]
            hs.router.on_call_end()  # type: ignore[misc]
            with anyio.fail_after(10):
                while len(running) < 1:
                    await anyio.wait_all_tasks_blocked()
            await anyio.wait_all_tasks_blocked()
            refused = [w for w in waiters if w.sent and "Server busy" in w.text()]
            assert not refused, refused[0].text()
        with anyio.fail_after(10):
            for waiter in waiters:
                await _answered(waiter)
    for waiter in waiters:
        assert "Unknown tool" in orjson.loads(waiter.text())["error"]["message"]  # each one ran


def test_max_in_flight_help_says_what_each_transport_does() -> None:
    from protomcp_host.transports.http.streamable import HttpOptions

    shown = subprocess.run([*HOST, "run", "--help"], capture_output=True, text=True, timeout=60).stdout
    text = " ".join(shown.split())
    assert f"over HTTP it waits up to {HttpOptions().turn_timeout:g} s" in text
    assert "over stdio it and the requests after it wait, in order" in text


async def test_a_proto_mcp_frame_marked_as_a_notice_is_dropped_like_a_notification() -> None:
    from protomcp_host.transports.outbox import Outbox

    read_end, write_end = os.pipe()
    marks = {"high_water": 1024, "low_water": 256}
    out = Outbox(write_end, on_pressure=lambda full: None, notice_limit=2048, **marks)
    try:
        for _ in range(10):
            out.send(b"a" * 1000, notice=False, end=b"")  # answers: kept, spilled
        out.send(b"progress frame", notice=True, end=b"")
        assert out.dropped == 1 and out.spilled > 2048
        out.send(b"answer frame", notice=False, end=b"")
        assert out.dropped == 1
    finally:
        out.writer.close()
        os.close(read_end)
