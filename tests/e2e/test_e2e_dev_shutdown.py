"""`protomcp dev` on SIGTERM, like `protomcp run`: every call in flight gets its answer (stdio and
HTTP), and the host exits. (Issue 37: the dev journal was closed when the drain began while it
still watched the wire, so each answer of the drain failed on its closed file.)"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.hosts import RawHost, write_atomic
from tests.support.http import HttpHost, answer_of, headers_for, open_raw_session

CALLS = 8

GATED = """
    import asyncio
    import os

    from protomcp_sdk import tool

    GATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gate")


    @tool
    async def wait_for_gate(n: int) -> str:
        \"\"\"Answer once the test opens the gate (bounded: 30 s).\"\"\"
        for _ in range(3000):
            if os.path.exists(GATE):
                break
            await asyncio.sleep(0.01)
        return f"done {n}"
"""


def gated_tools(folder: Path) -> Path:
    file = folder / "gated.py"
    write_atomic(file, GATED)
    return file


def journal_of(pid: int) -> Path:
    """The dev host's journal (the test session's private runtime folder: tests/conftest.py)."""
    return Path(os.environ["XDG_RUNTIME_DIR"]) / "protomcp" / "dev" / f"{pid}.jsonl"


def wait_in_journal(pid: int, want: Any, timeout: float = 30) -> None:
    """Until the journal holds records for which want(records) is true (the journal is a file the
    host appends to: read it again until then, bounded)."""
    deadline = time.monotonic() + timeout
    records: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        try:
            records = [orjson.loads(line) for line in journal_of(pid).read_bytes().splitlines()]
        except FileNotFoundError:
            records = []
        if want(records):
            return
        time.sleep(0.02)
    raise AssertionError(f"not in the journal within {timeout}s: {records}")


def calls_received(count: int) -> Any:
    return lambda records: sum(record["kind"] == "call" for record in records) >= count


def signal_taken(records: list[dict[str, Any]]) -> bool:
    """The host has begun to stop (it says so in its journal)."""
    return any(record["kind"] in ("stopping", "stop") for record in records)


def call(request_id: int) -> dict[str, Any]:
    params = {"name": "wait_for_gate", "arguments": {"n": request_id}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


@pytest.mark.parametrize("ui", [[], ["--ui", "--ui-port", "0"]], ids=["journal", "journal-and-playground"])
def test_sigterm_answers_every_call_in_flight_over_stdio(tmp_path: Path, ui: list[str]) -> None:
    file = gated_tools(tmp_path)
    host = RawHost("dev", str(file), *ui)
    try:
        host.initialize()
        for request_id in range(1, CALLS + 1):
            host.send(call(request_id))
        wait_in_journal(host.proc.pid, calls_received(CALLS))  # all of them are in flight
        host.proc.send_signal(signal.SIGTERM)
        wait_in_journal(host.proc.pid, signal_taken)
        (tmp_path / "gate").touch()
        answers: dict[int, Any] = {}
        while True:
            try:
                message = host.recv(timeout=30)
            except EOFError:
                break
            if "id" in message:
                assert message["id"] not in answers, message  # exactly one answer each
                answers[message["id"]] = message
        assert sorted(answers) == list(range(1, CALLS + 1)), host.stderr_text()
        assert [answers[i]["result"]["content"][0]["text"] for i in sorted(answers)] == [
            f"done {i}" for i in range(1, CALLS + 1)
        ]
        assert host.proc.wait(30) == 0
        assert "Bad file descriptor" not in host.stderr_text()
    finally:
        host.close()


@pytest.mark.anyio
async def test_sigterm_answers_every_call_in_flight_over_http(tmp_path: Path) -> None:
    import httpx2

    file = gated_tools(tmp_path)
    host = HttpHost("dev", str(file))
    try:
        async with httpx2.AsyncClient(timeout=30) as client:
            session_id = await open_raw_session(client, host.url)
            posts = [
                asyncio.create_task(
                    client.post(host.url, content=orjson.dumps(call(i)), headers=headers_for(session_id))
                )
                for i in range(1, CALLS + 1)
            ]
            await asyncio.to_thread(wait_in_journal, host.proc.pid, calls_received(CALLS))
            host.proc.send_signal(signal.SIGTERM)
            await asyncio.to_thread(wait_in_journal, host.proc.pid, signal_taken)
            (tmp_path / "gate").touch()
            responses = await asyncio.gather(*posts)
        assert [response.status_code for response in responses] == [200] * CALLS
        texts = [answer_of(response)["result"]["content"][0]["text"] for response in responses]
        assert texts == [f"done {i}" for i in range(1, CALLS + 1)]
        assert await asyncio.to_thread(host.proc.wait, 30) == 0
        assert not any("Bad file descriptor" in line for line in host.stderr)
    finally:
        host.terminate()
