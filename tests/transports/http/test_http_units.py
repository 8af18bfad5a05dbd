"""Unit tests for the HTTP transport's pure parts: event streams, routing helpers, the guard."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from protomcp_host.transports.http.event_stream import EventStream, parse_event_id, sse_event, sse_priming
from protomcp_host.transports.http.guard import KNOWN_HOSTS, BearerToken, Guard, Identity
from protomcp_host.transports.http.sessions import is_response

pytestmark = pytest.mark.fast  # starts no process


def test_event_stream_replays_after_a_cursor_and_ends() -> None:
    stream = EventStream("3", keep=3)
    for n in range(4):
        stream.push(b"m%d" % n)
    assert stream.after(0) == [(2, b"m1"), (3, b"m2"), (4, b"m3")]  # the oldest went past `keep`
    assert stream.after(3) == [(4, b"m3")]
    assert stream.after(4) == []
    assert not stream.finished(4)
    stream.push(b"answer", last=True)
    assert not stream.finished(4) and stream.finished(5)
    assert stream.event_id(5) == "3-5" and parse_event_id("3-5") == ("3", 5)
    assert parse_event_id("nonsense") is None and parse_event_id("3-x") is None


def test_event_stream_takeover() -> None:
    stream = EventStream("1")
    first = stream.attach()
    second = stream.attach()
    assert stream.attached == second != first
    stream.detach(first)  # a stale connection leaving does not detach the new one
    assert stream.attached == second
    stream.detach(second)
    assert stream.attached == 0


async def test_event_stream_wait_reports_change() -> None:
    stream = EventStream("1")
    assert await stream.wait(0.01) is False
    assert not stream._waiters  # a wait whose time passed leaves nothing behind
    stream.push(b"x")
    assert stream.seq == 1


async def test_event_stream_wakes_every_waiter_and_forgets_cancelled_ones() -> None:
    stream = EventStream("1")
    async with anyio.create_task_group() as tg:
        woken: list[bool] = []

        async def waiter() -> None:
            woken.append(await stream.wait(30))

        tg.start_soon(waiter)
        tg.start_soon(waiter)
        await wait_until(lambda: len(stream._waiters) == 2)
        stream.push(b"x")  # one change wakes both (a resumed connection and the one it replaced)
    assert woken == [True, True] and not stream._waiters
    with anyio.move_on_after(0.01):
        await stream.wait(30)  # cancelled from outside
    assert not stream._waiters
    stream.wake()  # (nobody waits: nothing to do)


async def wait_until(condition: Any) -> None:
    with anyio.fail_after(5):
        while not condition():
            await anyio.sleep(0)


def test_sse_encoding() -> None:
    assert sse_event("1-2", b'{"a":1}') == b'event: message\nid: 1-2\ndata: {"a":1}\n\n'
    assert sse_priming("1-0", 500) == b"id: 1-0\nretry: 500\ndata: \n\n"


def test_response_detection() -> None:
    assert is_response(b'{"jsonrpc":"2.0","id":"a","result":{}}', b'"a"')
    assert is_response(b'{"jsonrpc":"2.0","id":7,"error":{"code":1}}', b"7")
    assert not is_response(b'{"jsonrpc":"2.0","method":"notifications/progress","params":{}}', b"7")
    assert not is_response(b'{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage"}', b"7")
    assert not is_response(b'{"jsonrpc":"2.0","id":77,"result":{}}', b"7")


def scope(headers: dict[str, str], path: str = "/mcp") -> dict[str, Any]:
    return {"type": "http", "path": path, "headers": [(k.encode(), v.encode()) for k, v in headers.items()]}


async def _app(scope: Any, receive: Any, send: Any) -> None:  # pragma: no cover - never reached
    raise AssertionError


def test_guard_hosts_and_origins() -> None:
    guard = Guard(_app, bind="127.0.0.1", max_body=100)
    for ok in ("127.0.0.1:8000", "localhost:1", "[::1]:80", "localhost"):
        assert guard.inspect(scope({"host": ok})) is None, ok
    refusal = guard.inspect(scope({"host": "evil.com:8000"}))
    assert refusal is not None and refusal.status == 403 and "--allow-host evil.com" in refusal.message
    refusal = guard.inspect(scope({"host": "localhost", "origin": "http://evil.com"}))
    assert refusal is not None and refusal.status == 403
    assert guard.inspect(scope({"host": "localhost", "origin": "http://127.0.0.1:5173"})) is None
    assert guard.inspect(scope({"host": "localhost", "origin": "null"})) is not None
    too_big = guard.inspect(scope({"host": "localhost", "content-length": "101"}))
    assert too_big is not None and too_big.status == 413


def test_guard_remembers_allowed_hosts_only_and_only_so_many() -> None:
    guard = Guard(_app, bind="127.0.0.1", max_body=100)
    for _ in range(2):  # the second time from memory, with the same answers
        assert guard.inspect(scope({"host": "localhost:8000"})) is None
        refusal = guard.inspect(scope({"host": "evil.com"}))
        assert refusal is not None and refusal.status == 403
    assert guard._allowed_hosts == {"localhost:8000"}
    for port in range(KNOWN_HOSTS + 10):  # a client can send any number of Host values
        assert guard.inspect(scope({"host": f"127.0.0.1:{port}"})) is None
    assert len(guard._allowed_hosts) == KNOWN_HOSTS


def test_guard_refuses_hosts_and_origins_that_only_start_like_local_ones() -> None:
    guard = Guard(_app, bind="127.0.0.1", max_body=100)
    for bad in ("[::1]evil.com", "localhost:evil.com", "[::1]:evil.com", "127.0.0.1:80:80", "a b"):
        refusal = guard.inspect(scope({"host": bad}))
        assert refusal is not None and refusal.status in (400, 403), bad
    for bad in ("http://[::1]evil.com", "http://localhost:evil.com", "http://evil.com@localhost"):
        refusal = guard.inspect(scope({"host": "localhost", "origin": bad}))
        assert refusal is not None and refusal.status in (400, 403), bad


def test_guard_refuses_a_duplicated_host_or_origin() -> None:
    guard = Guard(_app, bind="127.0.0.1", max_body=100)

    def twice(name: bytes, first: bytes, last: bytes) -> dict[str, Any]:
        return {
            "type": "http",
            "path": "/mcp",
            "headers": [(b"host", b"localhost"), (name, first), (name, last)],
        }

    for duplicated in (
        twice(b"host", b"evil.com", b"localhost"),
        twice(b"origin", b"http://evil.com", b"http://localhost"),
    ):
        refusal = guard.inspect(duplicated)
        assert refusal is not None and refusal.status == 400 and "more than once" in refusal.message


def test_guard_wildcard_bind_checks_host_only_when_told() -> None:
    assert Guard(_app, bind="0.0.0.0", max_body=1).inspect(scope({"host": "anything.example"})) is None
    strict = Guard(_app, bind="0.0.0.0", allow_hosts=["mcp.example.com"], max_body=1)
    assert strict.inspect(scope({"host": "mcp.example.com"})) is None
    assert strict.inspect(scope({"host": "other.example"})) is not None


async def test_bearer_token() -> None:
    auth = BearerToken("t0k")
    assert (await auth.check("Bearer t0k")) == Identity("token holder")
    assert (await auth.check("bearer t0k")) == Identity("token holder")
    for bad in (None, "Bearer t0", "Basic t0k", "Bearer "):
        refusal = await auth.check(bad)
        assert refusal is not None and refusal.status == 401
        assert dict(refusal.headers)[b"www-authenticate"].startswith(b"Bearer")


async def test_deadline_and_body_read_timeout() -> None:
    import anyio
    import pytest

    from protomcp_host.transports.http.asgi import BodyTooLarge, read_body
    from protomcp_host.transports.http.timers import Deadline

    with Deadline(0.01) as deadline:
        await anyio.sleep_forever()
    assert deadline.expired
    with Deadline(10) as deadline:
        pass
    assert not deadline.expired

    async def first_chunk_then_silence() -> dict[str, Any]:
        if not sent:
            sent.append(1)
            return {"type": "http.request", "body": b"{", "more_body": True}
        await anyio.sleep_forever()
        raise AssertionError

    sent: list[int] = []
    with pytest.raises(TimeoutError):  # a client that stops sending its body is not waited for
        await read_body(first_chunk_then_silence, 100, 0.01)

    sent.clear()
    with anyio.move_on_after(0.01) as outer:  # a cancellation from outside stays one (no 408)
        await read_body(first_chunk_then_silence, 100, 10)
    assert outer.cancelled_caught

    async def big() -> dict[str, Any]:
        return {"type": "http.request", "body": b"x" * 101, "more_body": False}

    with pytest.raises(BodyTooLarge):
        await read_body(big, 100, 1)


def test_a_sessions_unread_messages_are_bounded_by_the_memory_they_take() -> None:
    """orjson's output keeps the 4 KiB buffer it was written in: a session's stream compacts
    what it keeps, so its 1 MiB budget holds about 1 MiB (before: ~30 MiB for these)."""
    import tracemalloc

    import orjson

    from protomcp_host.transports.http.event_stream import ReplayBudget

    budget = ReplayBudget(1 << 20)
    stream = EventStream("1", budget=budget)
    note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1}}
    tracemalloc.start()
    try:
        for _ in range(7000):  # the bound keeps about 7,000 of these, whatever they hold
            stream.push(orjson.dumps(note))
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 2 << 20 and budget.held <= 1 << 20
