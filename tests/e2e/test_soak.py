"""Soak (issue 7): thousands of mixed calls through the real host while its tool process is
killed with SIGKILL and the tool file is reloaded, checking that every request is answered
exactly once and that no process, file descriptor or spool file is left behind.

CI runs the short default; PROTOMCP_SOAK_CALLS=20000 makes it long:
    PROTOMCP_SOAK_CALLS=20000 pytest -m soak
"""

from __future__ import annotations

import os
import signal
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_hardening import wait_gone
from tests.support.hosts import RawHost

CALLS = int(os.environ.get("PROTOMCP_SOAK_CALLS", "") or 2000)
WINDOW = 32  # requests in flight
KILL_EVERY = 500  # a pid call, then SIGKILL of the process that answered it
RELOAD_EVERY = 700

TOOLS = """
import asyncio
import os
import sys

from protomcp_sdk import tool

VERSION = {version}


@tool
def sync_echo(text: str) -> str:
    return text


@tool
async def async_echo(text: str) -> str:
    await asyncio.sleep(0)
    return text


@tool
def failing(text: str) -> str:
    raise ValueError(text)


@tool
async def slow(text: str) -> str:
    await asyncio.sleep(0.02)
    return text


@tool
def printing(text: str) -> str:
    for i in range(5):
        print(f"line {{i}} of {{text}}")
    print("and stderr", file=sys.stderr)
    return text


@tool
def large(text: str) -> str:
    return text * (300 * 1024 // max(1, len(text)))


@tool
def pid() -> int:
    return os.getpid()


@tool
def version() -> int:
    \"\"\"Version {version}.\"\"\"
    return VERSION
"""

KINDS = ("sync_echo", "async_echo", "failing", "slow", "printing", "large", "sync_echo", "async_echo")


def write_tools(path: Path, version: int) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(textwrap.dedent(TOOLS.format(version=version)))
    os.replace(tmp, path)


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.mark.soak
def test_soak_mixed_calls_kills_and_reloads(raw_host, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setenv("PROTOMCP_SPOOL_DIR", str(spool))
    file = tmp_path / "soak.py"
    write_tools(file, 0)
    host: RawHost = raw_host("dev", str(file))
    host.initialize()
    assert host.request(-1, "tools/list")["result"]["tools"]  # loaded
    fds_at_start = fd_count(host.proc.pid)

    answers: Counter[int] = Counter()
    pids: set[int] = set()
    kills = reloads = 0
    version = 0
    sent = in_flight = 0
    pid_calls: set[int] = set()

    def send(request_id: int) -> None:
        if request_id % KILL_EVERY == KILL_EVERY - 1:
            name, arguments = "pid", {}
            pid_calls.add(request_id)
        else:
            name, arguments = KINDS[request_id % len(KINDS)], {"text": f"t{request_id}"}
        host.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        )

    while sent < CALLS or in_flight:
        while sent < CALLS and in_flight < WINDOW:
            send(sent)
            sent += 1
            in_flight += 1
            if sent % RELOAD_EVERY == 0:
                version += 1
                reloads += 1
                write_tools(file, version)
        message: dict[str, Any] = host.recv(timeout=60)
        if "method" in message:
            continue  # list_changed, log messages
        request_id = message["id"]
        answers[request_id] += 1
        in_flight -= 1
        check_answer(request_id, message, pid_calls)
        if request_id in pid_calls and not message["result"]["isError"]:
            pid = message["result"]["structuredContent"]["result"]
            pids.add(pid)
            os.kill(pid, signal.SIGKILL)
            kills += 1

    assert sorted(answers) == list(range(CALLS)) and set(answers.values()) == {1}  # each once
    assert kills >= 1 and reloads >= 1
    assert host.request(CALLS, "ping")["result"] == {}
    assert fd_count(host.proc.pid) <= fds_at_start + 4  # no fd growth (a standby may come and go)
    assert host.close() == 0
    for pid in pids:
        assert wait_gone(pid)
    assert list(spool.iterdir()) == []  # every spool directory removed


def check_answer(request_id: int, message: dict[str, Any], pid_calls: set[int]) -> None:
    result = message["result"]
    if request_id in pid_calls:
        return  # may fail if its process was the one just killed
    kind = KINDS[request_id % len(KINDS)]
    text = result["content"][0]["text"]
    if result["isError"]:  # a failing tool, or a call caught in a kill: either says so
        assert kind == "failing" or "tool process" in text, (request_id, text)
        if kind == "failing" and "tool process" not in text:
            assert text == f"Error in tool 'failing': ValueError: t{request_id}"
    elif kind == "large":
        assert len(text) >= 300 * 1024 - 16 and text.startswith(f"t{request_id}")
    else:
        assert text == f"t{request_id}", (request_id, text)


SESSION_CALLS = int(os.environ.get("PROTOMCP_SOAK_SESSION_CALLS", "") or 400)  # per session
SESSION_WINDOW = 8  # concurrent POSTs per session


@pytest.mark.soak
async def test_soak_two_http_subjects_through_middleware(tmp_path: Path) -> None:
    """Mixed calls from two HTTP sessions of two OAuth subjects, through a middleware loaded from
    a second file: every request is answered exactly once, on its own session, and nothing of one
    session (printed output, logs, answers) reaches the other, on its POST or its GET stream."""
    import anyio
    import httpx2
    import orjson

    from tests.support.http import ACCEPT, HttpHost, open_raw_session, sse_events
    from tests.support.matrix import MATRIX_MW, SUBJECTS, Auth

    file = tmp_path / "soak.py"
    write_tools(file, 0)
    auth = Auth(tmp_path)
    host = HttpHost("run", str(file), str(MATRIX_MW), *auth.options())
    received: dict[str, list[dict[str, Any]]] = {s: [] for s in SUBJECTS}
    answers: dict[str, Counter[int]] = {s: Counter() for s in SUBJECTS}
    try:
        async with anyio.create_task_group() as tg:

            async def run_session(subject: str) -> None:
                headers = {"authorization": f"Bearer {auth.token(subject)}"}
                async with httpx2.AsyncClient(headers=headers, timeout=60) as client:
                    session_id = await open_raw_session(client, host.url)
                    post_headers = {
                        "accept": ACCEPT,
                        "content-type": "application/json",
                        "mcp-session-id": session_id,
                    }
                    get_done = anyio.Event()

                    async def get_stream() -> None:
                        with anyio.CancelScope() as scope:
                            tg.start_soon(_cancel_when, get_done, scope)
                            get_headers = {**post_headers, "accept": "text/event-stream"}
                            async with client.stream("GET", host.url, headers=get_headers) as stream:
                                buffer = ""
                                async for chunk in stream.aiter_text():
                                    buffer += chunk
                                    *blocks, buffer = buffer.replace("\r\n", "\n").split("\n\n")
                                    for event in sse_events("\n\n".join(blocks)):
                                        if event.get("data"):
                                            received[subject].append(orjson.loads(event["data"]))

                    tg.start_soon(get_stream)
                    ids = iter(range(1, SESSION_CALLS + 1))

                    async def worker() -> None:
                        for request_id in ids:
                            kind = KINDS[request_id % len(KINDS)]
                            text = f"{subject}-t{request_id}"
                            params = {"name": kind, "arguments": {"text": text}}
                            body = orjson.dumps(
                                {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
                            )
                            response = await client.post(host.url, content=body, headers=post_headers)
                            assert response.status_code == 200, response.text
                            if response.headers["content-type"].startswith("application/json"):
                                messages = [response.json()]
                            else:
                                messages = [
                                    orjson.loads(e["data"])
                                    for e in sse_events(response.text)
                                    if e.get("data")
                                ]
                            received[subject].extend(messages)
                            for message in messages:
                                if "method" not in message:
                                    answers[subject][message["id"]] += 1
                                    check_session_answer(request_id, subject, message)

                    async with anyio.create_task_group() as workers:
                        for _ in range(SESSION_WINDOW):
                            workers.start_soon(worker)
                    ping = await client.post(
                        host.url, content=b'{"jsonrpc":"2.0","id":0,"method":"ping"}', headers=post_headers
                    )
                    assert ping.json()["result"] == {}
                    get_done.set()

            with anyio.fail_after(240):
                for subject in SUBJECTS:
                    tg.start_soon(run_session, subject)
    finally:
        host.terminate()
    for subject in SUBJECTS:
        counts = answers[subject]
        assert sorted(counts) == list(range(1, SESSION_CALLS + 1)), subject
        assert set(counts.values()) == {1}, {i: n for i, n in counts.items() if n != 1}
        other = next(s for s in SUBJECTS if s != subject)
        leaked = [m for m in received[subject] if f"{other}-t" in orjson.dumps(m).decode()]
        assert not leaked, f"{subject}'s session received {len(leaked)} messages of {other}'s: {leaked[:3]}"


async def _cancel_when(event: Any, scope: Any) -> None:
    await event.wait()
    scope.cancel()


def check_session_answer(request_id: int, subject: str, message: dict[str, Any]) -> None:
    assert message["id"] == request_id, (request_id, message)
    result = message["result"]
    kind = KINDS[request_id % len(KINDS)]
    text = result["content"][0]["text"]
    expected = f"{subject}-t{request_id}"
    if kind == "failing":
        assert result["isError"] and expected in text, text
    elif kind == "large":
        assert not result["isError"] and text.startswith(expected) and len(text) >= 300 * 1024 - 32
    else:
        assert not result["isError"] and text == expected, (request_id, text)
