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
from conftest import RawHost
from test_hardening import wait_gone

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
        host.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                   "params": {"name": name, "arguments": arguments}})  # fmt: skip

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
