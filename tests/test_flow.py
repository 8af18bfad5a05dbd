"""Flow control and shutdown of the transports (issue 13): large answers over stdio, memory for
unread answers bounded in bytes, every in-flight request answered at SIGTERM, HTTP batches whose
ids collide, idle sessions that expire, --max-in-flight over HTTP, bounded SSE replay buffers."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

from conftest import TOOLS, RawHost

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
    from protomcp_host.transports.stdio import Outbox

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
