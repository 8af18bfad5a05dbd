"""Streamable HTTP end to end: the real host, real tool processes, the official SDK client (and
raw HTTP where the wire itself is the subject)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2
import orjson
import pytest

from tests.e2e.test_e2e_dev import Watcher, tool_source, write_atomic
from tests.support.hosts import BEHAVIOURS, TOOLS
from tests.support.http import (
    ACCEPT,
    INITIALIZE,
    answer_of,
    headers_for,
    http_session,
    open_raw_session,
    rpc,
    sse_events,
)

STREAMS = TOOLS / "streams.py"


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def test_tools_progress_and_logging_over_http(http_host: Any) -> None:
    host = http_host("run", str(BEHAVIOURS))
    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params)

    async with http_session(host.url, logging_callback=on_log) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert {"add", "progress", "point"} <= names
        assert text_of(await session.call_tool("add", {"a": 2, "b": 3})) == "5"
        point = await session.call_tool("point", {"x": 1, "y": 2})
        assert point.structured_content == {"x": 1, "y": 2}
        progress: list[tuple[float, float | None, str | None]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((value, total, message))

        result = await session.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
        assert text_of(result) == "done"
        # Progress and logs of a call travel on its own POST stream, before its answer.
        assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        assert [entry.data for entry in logs] == ["step 1", "step 2", "step 3"]
        failed = await session.call_tool("fail", {"message": "boom"})
        assert failed.is_error and "boom" in text_of(failed)


async def test_a_reload_is_seen_by_every_session(http_host: Any, tmp_path: Path) -> None:
    file = tmp_path / "tools.py"
    write_atomic(file, tool_source("alpha"))
    host = http_host("dev", str(file))
    first, second = Watcher(), Watcher()
    async with (
        http_session(host.url, message_handler=first.on_message) as one,
        http_session(host.url, message_handler=second.on_message) as two,
    ):
        assert [t.name for t in (await one.list_tools()).tools] == ["alpha"]
        write_atomic(file, tool_source("alpha", "beta"))
        await first.tools_after_change(one, lambda t: set(t) == {"alpha", "beta"})
        await second.tools_after_change(two, lambda t: set(t) == {"alpha", "beta"})
        assert text_of(await two.call_tool("beta", {"x": 7})) == "7"


async def test_two_sessions_see_their_own_tool_lists(http_host: Any) -> None:
    host = http_host("run", str(STREAMS))
    watcher = Watcher()
    async with (
        http_session(host.url, message_handler=watcher.on_message) as one,
        http_session(host.url) as two,
    ):
        assert text_of(await one.call_tool("hide", {"name": "add"})) == "hidden"
        tools_one = await watcher.tools_after_change(one, lambda t: "add" not in t)
        assert "hide" in tools_one
        assert "add" in {t.name for t in (await two.list_tools()).tools}
        assert text_of(await two.call_tool("add", {"a": 1, "b": 2})) == "3"
        with pytest.raises(Exception, match="disabled in this session"):
            await one.call_tool("add", {"a": 1, "b": 2})


async def test_resuming_a_dropped_stream_loses_no_message(http_host: Any) -> None:
    host = http_host("run", str(STREAMS))
    async with httpx2.AsyncClient(timeout=30) as client:
        session_id = await open_raw_session(client, host.url)
        call = rpc(
            5, "tools/call", {"name": "staged", "arguments": {"key": "k"}, "_meta": {"progressToken": 9}}
        )
        seen: list[dict[str, str]] = []
        async with client.stream("POST", host.url, content=call, headers=headers_for(session_id)) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            buffer = ""
            async for chunk in response.aiter_text():
                buffer += chunk
                seen = sse_events(buffer)
                if any("progressToken" in e.get("data", "") for e in seen):
                    break  # drop the connection after the first progress message
        assert seen[0]["data"] == "" and "retry" in seen[0]  # the priming event comes first
        last_id = [e["id"] for e in seen if "id" in e][-1]
        # While nobody listens, the call goes on and its remaining messages are kept.
        opened = await client.post(
            host.url,
            content=rpc(6, "tools/call", {"name": "open_gate", "arguments": {"key": "k"}}),
            headers=headers_for(session_id),
        )
        assert opened.status_code == 200
        resumed = await client.get(
            host.url,
            headers={**headers_for(session_id), "accept": "text/event-stream", "last-event-id": last_id},
        )
        assert resumed.status_code == 200
        messages = [orjson.loads(e["data"]) for e in sse_events(resumed.text) if e.get("data")]
        assert [m.get("method") for m in messages] == [
            "notifications/progress",
            "notifications/message",
            None,
        ]
        assert messages[0]["params"]["progress"] == 2
        assert messages[1]["params"]["data"] == "k done"  # a log of the call travels with it
        assert messages[2]["id"] == 5 and messages[2]["result"]["content"][0]["text"] == "finished k"
        # Everything before last_id was delivered already: nothing is sent twice.
        first_ids = {e["id"] for e in seen if "id" in e}
        assert not first_ids & {e["id"] for e in sse_events(resumed.text) if e.get("data")}


async def test_a_delivered_answer_can_still_be_resumed(http_host: Any) -> None:
    """The host wrote a stream's answer (handed to the connection, not known to be received): a
    client whose connection dropped then resumes with Last-Event-ID and gets it (before: the
    stream was forgotten once written; the resumption came back empty)."""
    host = http_host("run", str(STREAMS))
    async with httpx2.AsyncClient(timeout=30) as client:
        session_id = await open_raw_session(client, host.url)
        call = rpc(
            5, "tools/call", {"name": "tick", "arguments": {"seconds": 0}, "_meta": {"progressToken": 1}}
        )
        streamed = await client.post(host.url, content=call, headers=headers_for(session_id))
        assert streamed.headers["content-type"].startswith("text/event-stream")
        events = sse_events(streamed.text)
        assert orjson.loads(events[-1]["data"])["id"] == 5  # the answer was written, to the end
        resume = {**headers_for(session_id), "accept": "text/event-stream"}
        for last_id, expected in ((events[0]["id"], 2), (events[1]["id"], 1), (events[0]["id"], 2)):
            resumed = await client.get(host.url, headers={**resume, "last-event-id": last_id})
            again = [e for e in sse_events(resumed.text) if e.get("data")]
            assert [e["id"] for e in again] == [e["id"] for e in events[-expected:]], resumed.text
            assert orjson.loads(again[-1]["data"])["result"]["content"][0]["text"] == "ticked"


async def test_cancelling_a_request_ends_its_stream_without_an_answer(http_host: Any) -> None:
    host = http_host("run", str(STREAMS))
    async with httpx2.AsyncClient(timeout=30) as client:
        session_id = await open_raw_session(client, host.url)
        headers = headers_for(session_id)
        call = rpc(
            7, "tools/call", {"name": "staged", "arguments": {"key": "c"}, "_meta": {"progressToken": 1}}
        )
        cancel = orjson.dumps(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
        )
        buffer = ""
        sent = False
        with anyio.fail_after(20):
            async with client.stream("POST", host.url, content=call, headers=headers) as stream:
                async for chunk in stream.aiter_text():
                    buffer += chunk
                    if not sent and "progressToken" in buffer:
                        sent = True
                        cancelled = await client.post(host.url, content=cancel, headers=headers)
                        assert cancelled.status_code == 202
        messages = [orjson.loads(e["data"]) for e in sse_events(buffer) if e.get("data")]
        assert [m.get("method") for m in messages] == ["notifications/progress"]  # and no answer
        ping = await client.post(host.url, content=rpc(8, "ping"), headers=headers)
        assert ping.json()["result"] == {}


async def test_standalone_get_stream_carries_unrelated_messages(http_host: Any, tmp_path: Path) -> None:
    file = tmp_path / "tools.py"
    write_atomic(file, tool_source("alpha"))
    host = http_host("dev", str(file))
    async with httpx2.AsyncClient(timeout=30) as client:
        session_id = await open_raw_session(client, host.url)
        headers = {**headers_for(session_id), "accept": "text/event-stream"}
        async with client.stream("GET", host.url, headers=headers) as stream:
            assert stream.status_code == 200
            second = await client.get(host.url, headers=headers)
            assert second.status_code == 409  # one standalone stream per session
            write_atomic(file, tool_source("alpha", "beta"))
            buffer = ""
            with anyio.fail_after(20):
                async for chunk in stream.aiter_text():
                    buffer += chunk
                    if "notifications/tools/list_changed" in buffer:
                        break


async def test_session_rules_expiry_and_delete(http_host: Any) -> None:
    host = http_host("run", str(STREAMS), "--session-timeout", "1")
    async with httpx2.AsyncClient(timeout=30) as client:
        ping = rpc(1, "ping")
        no_session = await client.post(
            host.url, content=ping, headers={"accept": ACCEPT, "content-type": "application/json"}
        )
        assert no_session.status_code == 400
        unknown = await client.post(host.url, content=ping, headers=headers_for("no-such-session"))
        assert unknown.status_code == 404
        session_id = await open_raw_session(client, host.url)
        assert len(session_id) >= 22 and session_id.isascii() and session_id.isprintable()
        bad_version = await client.post(
            host.url, content=ping, headers=headers_for(session_id, **{"mcp-protocol-version": "1999-01-01"})
        )
        assert bad_version.status_code == 400 and "1999-01-01" in bad_version.text
        ok = await client.post(
            host.url, content=ping, headers=headers_for(session_id, **{"mcp-protocol-version": "2025-11-25"})
        )
        assert ok.status_code == 200 and ok.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
        wrong_accept = await client.post(
            host.url, content=ping, headers=headers_for(session_id, accept="text/html")
        )
        assert wrong_accept.status_code == 406
        # Idle sessions expire: the client is told 404 and initializes again.
        host.wait_stderr(lambda line: f"session {session_id[:8]}" in line and "expired" in line)
        expired = await client.post(host.url, content=ping, headers=headers_for(session_id))
        assert expired.status_code == 404
        again = await open_raw_session(client, host.url)
        assert again != session_id
        # DELETE ends a session.
        assert (await client.delete(host.url, headers=headers_for(again))).status_code == 200
        assert (await client.post(host.url, content=ping, headers=headers_for(again))).status_code == 404


async def test_load_fifty_sessions(http_host: Any) -> None:
    """50 concurrent sessions x 200 calls on loopback: every answer arrives and is right."""
    host = http_host("run", str(STREAMS))
    sessions, calls = 50, 200
    wrong: list[Any] = []
    limits = httpx2.Limits(max_connections=sessions)
    async with httpx2.AsyncClient(timeout=60, limits=limits) as client:

        async def one_session(n: int) -> None:
            session_id = await open_raw_session(client, host.url)
            headers = headers_for(session_id)
            for i in range(calls):
                body = rpc(i + 1, "tools/call", {"name": "add", "arguments": {"a": n, "b": i}})
                response = await client.post(host.url, content=body, headers=headers)
                answer = answer_of(response)
                if answer.get("id") != i + 1 or answer["result"]["structuredContent"] != {"result": n + i}:
                    wrong.append(answer)
            assert (await client.delete(host.url, headers=headers)).status_code == 200

        with anyio.fail_after(240):
            async with anyio.create_task_group() as tg:
                for n in range(sessions):
                    tg.start_soon(one_session, n)
    assert wrong == []


async def test_sigterm_under_load_finishes_answered_calls(http_host: Any) -> None:
    """SIGTERM with calls in flight: each still gets its answer, then the host exits cleanly."""
    host = http_host("run", str(STREAMS))
    count = 20
    in_flight = 0
    all_started = anyio.Event()
    answers: list[Any] = []
    async with httpx2.AsyncClient(timeout=60, limits=httpx2.Limits(max_connections=count + 2)) as client:
        session_id = await open_raw_session(client, host.url)

        async def one_call(n: int) -> None:
            nonlocal in_flight
            arguments = {"name": "tick", "arguments": {"seconds": 1.0}, "_meta": {"progressToken": n}}
            body = rpc(n, "tools/call", arguments)
            async with client.stream(
                "POST", host.url, content=body, headers=headers_for(session_id)
            ) as stream:
                buffer = ""
                counted = False
                async for chunk in stream.aiter_text():
                    buffer += chunk
                    if not counted and "progressToken" in buffer:
                        counted = True
                        in_flight += 1
                        if in_flight == count:
                            all_started.set()
            messages = [orjson.loads(e["data"]) for e in sse_events(buffer) if e.get("data")]
            answers.extend(m for m in messages if "result" in m)

        get_ended = anyio.Event()

        async def standalone_stream() -> None:
            headers = {**headers_for(session_id), "accept": "text/event-stream"}
            async with client.stream("GET", host.url, headers=headers) as stream:
                async for _ in stream.aiter_bytes():
                    pass
            get_ended.set()  # shutdown ends the GET stream instead of waiting on it

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(standalone_stream)
                for n in range(count):
                    tg.start_soon(one_call, n)
                await all_started.wait()
                host.proc.send_signal(15)
    assert get_ended.is_set()
    assert sorted(a["id"] for a in answers) == list(range(count))
    assert all(a["result"]["content"][0]["text"] == "ticked" for a in answers)
    assert host.proc.wait(30) == 0


async def test_legacy_sse_transport_with_the_sdk_sse_client(http_host: Any) -> None:
    from mcp import ClientSession
    from mcp.client.sse import sse_client

    host = http_host("run", str(BEHAVIOURS), transport="sse")
    assert host.url.endswith("/sse")
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with sse_client(host.url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        assert "add" in {t.name for t in (await session.list_tools()).tools}
        assert text_of(await session.call_tool("add", {"a": 4, "b": 5})) == "9"
        result = await session.call_tool("progress", {"steps": 2}, progress_callback=on_progress)
        assert text_of(result) == "done" and progress == [1, 2]
    async with httpx2.AsyncClient(timeout=30) as client:
        gone = await client.post(host.url.replace("/sse", "/messages?session_id=nope"), content=b"{}")
        assert gone.status_code == 404


async def test_batch_in_a_2025_03_26_session(http_host: Any) -> None:
    host = http_host("run", str(STREAMS))
    async with httpx2.AsyncClient(timeout=30) as client:
        init = rpc(
            0,
            "initialize",
            {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        )
        response = await client.post(
            host.url, content=init, headers={"accept": ACCEPT, "content-type": "application/json"}
        )
        session_id = response.headers["mcp-session-id"]
        headers = headers_for(session_id, **{"mcp-protocol-version": "2025-03-26"})
        await client.post(
            host.url, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers=headers
        )
        batch = (
            b"["
            + rpc(1, "ping")
            + b","
            + rpc(2, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 5}})
            + b"]"
        )
        answer = await client.post(host.url, content=batch, headers=headers)
        assert answer.status_code == 200
        by_id = {item["id"]: item for item in answer.json()}
        assert by_id[1]["result"] == {} and by_id[2]["result"]["content"][0]["text"] == "7"
        only_notifications = (
            b'[{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}]'
        )
        assert (await client.post(host.url, content=only_notifications, headers=headers)).status_code == 202


async def test_refused_values_and_deep_bodies_are_answered_as_over_stdio(http_host: Any) -> None:
    """A batch with a value orjson cannot hold refuses only the message holding it, and a body
    nested too deep is refused with its request's id (-32600), as stdio answers both (before:
    one answer for the whole batch; -32700 with a null id)."""
    host = http_host("run", str(STREAMS))
    async with httpx2.AsyncClient(timeout=30) as client:
        init = rpc(
            0,
            "initialize",
            {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        )
        response = await client.post(
            host.url, content=init, headers={"accept": ACCEPT, "content-type": "application/json"}
        )
        headers = headers_for(response.headers["mcp-session-id"], **{"mcp-protocol-version": "2025-03-26"})
        await client.post(
            host.url, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers=headers
        )
        add = rpc(3, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 5}})
        for value in (b"18446744073709551616", b'"\\ud800"'):  # orjson: a float / an error
            held = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"v":' + value + b"}}"
            batch = b"[" + rpc(1, "ping") + b"," + held + b"," + add + b"]"
            answer = await client.post(host.url, content=batch, headers=headers)
            assert answer.status_code == 200, answer.text
            by_id = {item["id"]: item for item in answer.json()}
            assert sorted(by_id) == [1, 2, 3], answer.text
            assert by_id[2]["error"]["code"] == -32602 and by_id[3]["result"]["content"][0]["text"] == "7"
        deep = b"[" * 3000 + b"]" * 3000  # beyond orjson's depth limit
        body = b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"v":' + deep + b"}}"
        refused = await client.post(host.url, content=body, headers=headers)
        assert refused.status_code == 400
        assert refused.json()["id"] == 9 and refused.json()["error"]["code"] == -32600


async def test_max_sessions(http_host: Any) -> None:
    host = http_host("run", str(STREAMS), "--max-sessions", "2")
    async with httpx2.AsyncClient(timeout=30) as client:
        first = await open_raw_session(client, host.url)
        await open_raw_session(client, host.url)
        headers = {"accept": ACCEPT, "content-type": "application/json"}
        third = await client.post(host.url, content=INITIALIZE, headers=headers)
        assert third.status_code == 503 and "2 sessions" in third.text
        assert (await client.delete(host.url, headers=headers_for(first))).status_code == 200
        assert (await client.post(host.url, content=INITIALIZE, headers=headers)).status_code == 200


def test_http_flags_are_refused_with_stdio() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "protomcp_host", "run", str(STREAMS), "--port", "9000", "--allow-host", "x"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "--port, --allow-host: only with --transport http or sse" in done.stderr
    legacy = subprocess.run(
        [sys.executable, "-m", "protomcp_host", "run", str(STREAMS), "--transport", "sse", "--path", "/x"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert legacy.returncode == 2 and "--path: only with --transport http" in legacy.stderr


def test_a_port_in_use_is_a_clear_startup_error(http_host: Any) -> None:
    import subprocess
    import sys

    port = http_host("run", str(STREAMS)).url.split(":")[2].split("/")[0]
    done = subprocess.run(
        [sys.executable, "-m", "protomcp_host", "run", str(STREAMS), "--transport", "http", "--port", port],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
