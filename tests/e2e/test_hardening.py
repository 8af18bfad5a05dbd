"""Hardening (issue 7): nothing a tool file or a client does can hang, starve or orphan the
host. Each test drives the real host over stdio and checks the answer and that the host
keeps serving afterwards."""

from __future__ import annotations

import os
import queue
import re
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from protomcp_sdk import wire
from protomcp_sdk.wire import envelope_pb2 as pb
from tests.support.hosts import HOST, TOOLS, RawHost

HOSTILE = TOOLS / "hostile.py"


@pytest.fixture(autouse=True, params=["loop", "threads"])
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test twice: the tool process's input read by its event loop (what a file with async
    tools gets), and by its call threads in turn (what a file of sync tools gets)."""
    monkeypatch.setenv("PROTOMCP_READER", request.param)
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def host(raw_host) -> RawHost:  # type: ignore[no-untyped-def]
    h = raw_host("run", str(HOSTILE))
    h.initialize()
    return h


def call_line(request_id: int, name: str, arguments_json: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}\n' % (
        request_id,
        name.encode(),
        arguments_json,
    )


def nested(levels: int) -> bytes:
    return b'{"value":' + b"[" * (levels - 1) + b"]" * (levels - 1) + b"}"


def answer_to_call(host: RawHost) -> dict:  # type: ignore[type-arg]
    """The next response, skipping notifications (log messages the tools send)."""
    while "method" in (message := host.recv()):
        pass
    return message  # type: ignore[no-any-return]


def assert_serving(host: RawHost, request_id: int = 999) -> None:
    assert host.request(request_id, "ping") == {"jsonrpc": "2.0", "id": request_id, "result": {}}
    reply = host.request(request_id + 1, "tools/call", {"name": "quick", "arguments": {}})
    assert reply["result"]["content"] == [{"type": "text", "text": "quick"}]


# -- 1. deep arguments ---------------------------------------------------------------


@pytest.mark.parametrize("levels", [255, 600, 1023])
def test_deep_arguments_get_an_error_and_other_requests_in_the_chunk_are_answered(
    host: RawHost, levels: int
) -> None:
    chunk = (
        call_line(1, "depth", nested(levels))
        + b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n'
        + call_line(3, "depth", nested(254))
    )
    host.send_raw(chunk)
    replies = {reply["id"]: reply for reply in (host.recv(), host.recv(), host.recv())}
    assert replies[1]["error"]["code"] == -32600
    assert "nests deeper than 256 levels" in replies[1]["error"]["message"]
    assert replies[2]["result"] == {}
    assert replies[3]["result"]["structuredContent"] == {"result": 252}
    # The refused id is not left "in use".
    host.send_raw(call_line(1, "depth", nested(3)))
    assert host.recv_response(1)["result"]["structuredContent"] == {"result": 1}
    assert_serving(host)


# -- 2. valid JSON orjson cannot hold ------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "refused"),
    [
        (b'"\\ud800"', "lone UTF-16 surrogate"),
        (b'"a\\udfffb"', "lone UTF-16 surrogate"),
        (b"1e400", "the number 1e400 is too large for a double"),
        (b"-1e400", "the number -1e400 is too large for a double"),
        (b"18446744073709551616", "the integer 18446744073709551616 exceeds 64 bits"),
        (b"-9223372036854775809", "the integer -9223372036854775809 exceeds 64 bits"),
    ],
)
def test_valid_json_that_cannot_be_held_is_refused_with_the_request_id(
    host: RawHost, value: bytes, refused: str
) -> None:
    host.send_raw(call_line(7, "depth", b'{"value":' + value + b"}"))
    reply = host.recv()
    assert reply["id"] == 7 and reply["error"]["code"] == -32602
    assert refused in reply["error"]["message"]
    assert_serving(host)


def test_numbers_at_the_limits_still_pass(host: RawHost) -> None:
    host.send_raw(call_line(8, "depth", b'{"value":[18446744073709551615,-9223372036854775808,1.5e308]}'))
    assert host.recv_response(8)["result"]["structuredContent"] == {"result": 1}
    host.send_raw(call_line(9, "depth", b'{"value":"\\ud83d\\ude00 12345678901234567890123"}'))
    assert host.recv_response(9)["result"]["isError"] is False


# -- 3. BaseException from a tool -------------------------------------------------------------


@pytest.mark.parametrize("kind", ["SystemExit", "KeyboardInterrupt", "GeneratorExit", "Escape"])
def test_base_exceptions_get_one_answer_each_and_threads_survive(host: RawHost, kind: str) -> None:
    for tool in ("raise_base", "raise_base_async"):
        for request_id in range(1, 81):  # more than the pool has threads
            host.send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "tools/call",
                    "params": {"name": tool, "arguments": {"kind": kind}},
                }
            )
        answers = [answer_to_call(host) for _ in range(1, 81)]
        assert sorted(a["id"] for a in answers) == list(range(1, 81))
        assert all(a["result"]["isError"] for a in answers)
        assert all(kind in a["result"]["content"][0]["text"] for a in answers)
        assert_serving(host)
    with pytest.raises(queue.Empty):  # exactly one answer each
        host.lines.get(timeout=0.2)


# -- 4. the thread pool: stuck tools do not starve the others -------------------------------------


def test_stuck_sync_tool_does_not_starve_the_others(host: RawHost) -> None:
    stuck = 70  # more than one tool's share of threads, more than the old 32-thread pool
    for request_id in range(1, stuck + 1):
        host.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": "blocked", "arguments": {"key": "k"}},
            }
        )
    assert_serving(host)  # a fast sync call runs while every one of them is blocked
    reply = host.request(500, "tools/call", {"name": "open_gate", "arguments": {"key": "k"}})
    assert reply["result"]["content"][0]["text"] == "open"
    answers = {host.recv()["id"]: None for _ in range(stuck)}
    assert sorted(answers) == list(range(1, stuck + 1))


def test_a_cancelled_sync_call_that_keeps_its_thread_is_named(raw_host, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PROTOMCP_CANCEL_GRACE", "0.2")
    host = raw_host("run", str(HOSTILE))
    host.initialize()
    host.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "spin", "arguments": {"key": "s"}},
        }
    )
    assert_serving(host)  # the call is running
    host.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    host.wait_stderr("tool 'spin' was cancelled")
    assert_serving(host, 700)
    assert host.request(5, "tools/call", {"name": "open_gate", "arguments": {"key": "s"}})["result"]
    assert_serving(host, 800)


# -- 6. a tool process never outlives its host --------------------------------------------------


def wait_gone(pid: int, timeout: float = 15) -> bool:
    """Wait (bounded, on a pidfd) for a process that is not our child to exit."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


def spinning_pid(stderr: str) -> int:
    return int(re.search(r"spinning in pid (\d+)", stderr).group(1))  # type: ignore[union-attr]


def test_sigkill_of_the_host_ends_a_stuck_tool_process(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(HOSTILE))
    host.initialize()
    host.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "spin_loud", "arguments": {"key": "never"}},
        }
    )
    pid = spinning_pid(host.wait_stderr("spinning in pid"))
    host.proc.kill()
    host.proc.wait(10)
    assert wait_gone(pid), "the tool process outlived its host"


def test_killing_protomcp_call_mid_call_ends_its_tool_process() -> None:
    proc = subprocess.Popen(
        [*HOST, "call", str(HOSTILE), "spin_loud", "--args", '{"key": "never"}'],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stderr is not None
        seen = b""
        while b"spinning in pid" not in seen:
            line = proc.stderr.readline()
            assert line, seen
            seen += line
        pid = spinning_pid(seen.decode())
        proc.kill()
        proc.wait(10)
        assert wait_gone(pid), "the tool process outlived `protomcp call`"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_tool_process_exits_within_its_bound_when_the_host_lets_go(tool_process) -> None:  # type: ignore[no-untyped-def]
    """Without the parent-death signal (not Linux), a closed frame pipe still ends a process
    whose calls never finish: within PROTOMCP_EXIT_GRACE."""
    process = tool_process(HOSTILE, PROTOMCP_EXIT_GRACE="0.5")
    assert process.next_frame().WhichOneof("msg") == "hello"
    call = pb.Envelope(
        request_id="1", call_tool=pb.CallToolRequest(name="spin", arguments_json='{"key":"x"}')
    )
    process.send(wire.encode(call))
    process.close_input()  # the host lets go
    assert process.proc.wait(20) == 1
    assert b"exiting with calls still running" in process.proc.stderr.read()


# -- 7. shutdown is bounded and answers what is pending -------------------------------------------


def test_end_of_input_answers_stuck_calls_and_exits_promptly(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", "--drain-timeout", "0.5", str(HOSTILE))
    host.initialize()
    for request_id in (1, 2):
        host.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {
                    "name": "spin_loud" if request_id == 1 else "blocked",
                    "arguments": {"key": "never"},
                },
            }
        )
    pid = spinning_pid(host.wait_stderr("spinning in pid"))
    assert_serving(host)
    host.proc.stdin.close()
    answers = sorted((host.recv() for _ in range(2)), key=lambda reply: reply["id"])
    assert [a["id"] for a in answers] == [1, 2]
    for answer in answers:
        assert answer["result"]["isError"]
        assert (
            "shutting down and the call did not finish within 0.5s" in answer["result"]["content"][0]["text"]
        )
    assert host.proc.wait(20) == 0  # a bounded wait: a hang fails the test
    assert wait_gone(pid)


# -- 9. nobody reads stderr -------------------------------------------------------------------------


def test_unread_stderr_never_blocks_the_host(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(HOSTILE), read_stderr=False)
    host.initialize()
    reply = host.request(1, "tools/call", {"name": "chatter", "arguments": {"lines": 20000, "width": 200}})
    assert reply["result"]["content"][0]["text"] == "chattered"
    assert_serving(host)  # 4 MB of tool output went to a stderr nobody reads
    host.start_reading_stderr()
    host.wait_stderr("messages to stderr were dropped")
    assert_serving(host, 1100)


# -- 10. backpressure: in-flight calls, unread answers, log floods ---------------------------------


def test_calls_beyond_the_in_flight_bound_wait_their_turn(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", "--max-in-flight", "3", "--call-timeout", "1", str(HOSTILE))
    host.initialize()
    for request_id in range(1, 6):
        host.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": "blocked", "arguments": {"key": "b"}},
            }
        )
    host.send(
        {
            "jsonrpc": "2.0",
            "id": 6,
            "method": "tools/call",
            "params": {"name": "open_gate", "arguments": {"key": "b"}},
        }
    )
    host.send({"jsonrpc": "2.0", "id": 7, "method": "ping"})
    answers = [answer_to_call(host) for _ in range(7)]
    order = [a["id"] for a in answers]
    # 1-3 ran (and timed out, the gate being shut); 4-7 were held, not refused, until they had.
    assert sorted(order[:3]) == [1, 2, 3] and sorted(order[3:]) == [4, 5, 6, 7]
    by_id = {a["id"]: a for a in answers}
    for request_id in (1, 2, 3):
        assert "timed out after 1s" in by_id[request_id]["result"]["content"][0]["text"]
    for request_id in (4, 5):
        assert by_id[request_id]["result"]["content"][0]["text"] == "unblocked b"
    assert by_id[7]["result"] == {}
    assert_serving(host)


def test_a_batch_beyond_the_in_flight_bound_is_refused_in_part(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", "--max-in-flight", "2", str(HOSTILE))
    host.initialize("2025-03-26")  # the revision with batches
    batch = [
        {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "quick", "arguments": {}}}
        for i in range(1, 5)
    ]
    host.send(batch)
    replies = {r["id"]: r for r in host.recv()}
    assert [replies[i]["result"]["content"][0]["text"] for i in (1, 2)] == ["quick", "quick"]
    for request_id in (3, 4):
        assert replies[request_id]["error"]["code"] == -32000
        assert "2 tool calls are already running" in replies[request_id]["error"]["message"]
    assert_serving(host)


def test_unread_answers_pause_input_and_nothing_is_lost(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(HOSTILE), read_stdout=False)
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    host.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})
    count = 40_000  # ~3 KB answers each: far more than the host may queue for a client
    lines = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"tools/list"}\n' % i for i in range(1, count + 1))
    sender = threading.Thread(target=host.send_raw, args=(lines,), daemon=True)
    sender.start()
    host.wait_stderr("the client is not reading its answers")
    status = Path(f"/proc/{host.proc.pid}/status").read_bytes()
    rss_kib = int(re.search(rb"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
    assert rss_kib < 150 * 1024
    host.start_reading_stdout()
    ids = [host.recv(timeout=30)["id"] for _ in range(count + 1)]
    assert ids == list(range(count + 1))  # every answer, once, in order
    sender.join(30)
    assert_serving(host)


def test_log_floods_are_rate_limited(host: RawHost) -> None:
    host.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "shout", "arguments": {"times": 2000}},
        }
    )
    notes = []
    while "id" not in (message := host.recv()):
        notes.append(message["params"]["data"])
    assert message["result"]["content"][0]["text"] == "shouted"
    forwarded = [n for n in notes if str(n).startswith("message ")]
    assert 0 < len(forwarded) < 2000
    assert any("too many log messages" in str(n) for n in notes)
    assert_serving(host)


# -- 8. signals during start-up ---------------------------------------------------------------------

STUCK_IMPORT = """
import os, sys, threading
print(f"importing in pid {os.getpid()}", file=sys.stderr, flush=True)
threading.Event().wait()
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_start_up_shuts_down_cleanly(raw_host, tmp_path: Path, sig: int) -> None:  # type: ignore[no-untyped-def]
    file = tmp_path / "slow.py"
    file.write_text(STUCK_IMPORT)
    host = raw_host("run", str(file))
    found = re.search(r"importing in pid (\d+)", host.wait_stderr("importing in pid"))
    pid = int(found.group(1))  # type: ignore[union-attr]
    host.proc.send_signal(sig)
    assert host.proc.wait(15) == 0  # bounded: not the 30 s handshake
    assert "Aborted" not in "".join(host.stderr)
    assert wait_gone(pid)


# -- 16. a tool's exception shows where it happened -------------------------------------------------


def test_a_tool_exception_shows_the_users_frames(host: RawHost) -> None:
    host.send(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "boom", "arguments": {}}}
    )
    notes = []
    while "id" not in (message := host.recv()):
        notes.append(message["params"])
    assert message["result"]["content"][0]["text"] == "Error in tool 'boom': KeyError: 'missing'"
    debug = [n for n in notes if n["level"] == "debug"]
    assert len(debug) == 1 and "in _lookup" in debug[0]["data"] and "KeyError: 'missing'" in debug[0]["data"]
    stderr = host.wait_stderr("KeyError: 'missing'")
    assert "[hostile.py] tool 'boom' raised:" in stderr and "in boom" in stderr and "in _lookup" in stderr
    assert "protomcp_sdk" not in stderr  # only the user's own frames
    assert_serving(host)


def test_protomcp_call_shows_the_traceback() -> None:
    proc = subprocess.run([*HOST, "call", str(HOSTILE), "boom"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "KeyError: 'missing'" in proc.stdout
    assert "in _lookup" in proc.stderr and "table[key]" in proc.stderr


# -- 14. huge schemas are checked off the loop -------------------------------------------------------


def test_a_huge_schema_validates_without_checking_it_on_the_loop(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from jsonschema import Draft202012Validator

    from protomcp_host.protocol.catalog import Tool

    schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(10_000)}}
    tool = Tool("wide", "wide.py", {"name": "wide", "inputSchema": schema})
    checked: list[object] = []
    monkeypatch.setattr(Draft202012Validator, "check_schema", classmethod(lambda cls, s: checked.append(s)))
    assert tool.large
    assert "p5: 'x' is not of type 'integer'" in (tool.validate({"p5": "x"}) or "")
    assert checked == []  # the metaschema check (seconds for this schema) is prepare()'s job
    tool.prepare()
    assert checked == [schema]


def test_a_first_validation_error_on_a_huge_schema(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(TOOLS / "wide.py"))
    host.initialize()
    reply = host.request(1, "tools/call", {"name": "wide", "arguments": {"p5": "x", "p0": 7}})
    assert (
        reply["result"]["isError"]
        and "p5: 'x' is not of type 'integer'" in reply["result"]["content"][0]["text"]
    )
    reply = host.request(2, "tools/call", {"name": "wide", "arguments": {"p0": 7}})
    assert reply["result"]["structuredContent"] == {"result": 7}
    assert host.request(3, "tools/call", {"name": "narrow", "arguments": {}})["result"]["isError"] is False
    assert host.request(4, "ping")["result"] == {}


# -- 11. spool paths: only the directory the host named ----------------------------------------------


@pytest.mark.parametrize("through_symlink", [False, True])
def test_spool_paths_outside_the_hosts_directory_are_not_touched(
    raw_host, tmp_path: Path, monkeypatch, through_symlink: bool
) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "shm"
    root.mkdir()
    monkeypatch.setenv("PROTOMCP_SPOOL_DIR", str(root))
    notes = tmp_path / "protomcp-spool-notes"  # a user folder that happens to look like a spool
    notes.mkdir()
    (notes / "1.json").write_text("[]")
    host = raw_host("run", str(HOSTILE))
    host.initialize()
    arguments = {"path": str(notes / "1.json")}
    if through_symlink:
        arguments["link_spool_dir_to"] = str(notes)
    reply = host.request(1, "tools/call", {"name": "forge_spool", "arguments": arguments})
    assert reply["result"]["content"][0]["text"] == "forged"
    assert_serving(host)
    assert host.close() == 0
    assert (notes / "1.json").read_text() == "[]"  # neither read-and-deleted nor removed at exit


def test_spool_files_are_read_only_from_the_named_directory(tmp_path: Path) -> None:
    from protomcp_host.processes.spool import read_spooled

    spool = tmp_path / "protomcp-spool-abc"
    spool.mkdir()
    (spool / "1.json").write_text("[1]")
    (tmp_path / "2.json").write_text("[2]")
    os.symlink(tmp_path / "2.json", spool / "2.json")
    assert read_spooled(str(tmp_path / "2.json"), str(spool)) is None  # outside
    assert read_spooled(str(spool / "2.json"), str(spool)) is None  # a link out of it
    assert read_spooled(str(spool / "1.json"), "") is None  # no directory named
    assert (tmp_path / "2.json").read_text() == "[2]"
    parts = read_spooled(str(spool / "1.json"), str(spool))
    assert parts is not None and bytes(parts[0]) == b"[1]" and not (spool / "1.json").exists()


# -- 13. slow imports: initialize at once, tools/list when loaded ------------------------------------

GATED_IMPORT = """
from protomcp_sdk import tool

with open({gate!r}) as gate:  # the import blocks until the test writes to this fifo
    gate.read()


@tool
def late() -> str:
    return "late"
"""


def test_initialize_is_answered_at_once_and_tools_list_waits_for_the_import(raw_host, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    file = tmp_path / "slow.py"
    file.write_text(GATED_IMPORT.format(gate=str(gate)))
    host = raw_host("run", "--startup-timeout", "60", str(file))
    assert host.initialize()["result"]["capabilities"]["tools"] == {
        "listChanged": True
    }  # import still blocked
    assert host.request(1, "ping")["result"] == {}
    host.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    with open(gate, "w") as opened:  # lets the import finish
        opened.write("go")
    assert [t["name"] for t in host.recv_response(2)["result"]["tools"]] == ["late"]
    assert host.request(3, "tools/call", {"name": "late", "arguments": {}})["result"]["isError"] is False


def test_startup_timeout_is_an_option(raw_host, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    file = tmp_path / "slow.py"
    file.write_text(GATED_IMPORT.format(gate=str(gate)))
    host = raw_host("run", "--startup-timeout", "0.5", str(file))
    assert host.initialize()["result"]["serverInfo"]["name"] == "protomcp"
    assert host.proc.wait(20) == 1
    assert "did not finish its handshake within 0.5s" in host.wait_stderr("within 0.5s")


# -- 17. dev serves even when a file is broken at start-up ----------------------------------------


def test_dev_serves_a_broken_file_and_loads_it_when_fixed(raw_host, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    good = tmp_path / "good.py"
    good.write_text("from protomcp_sdk import tool\n\n@tool\ndef fine() -> str:\n    return 'fine'\n")
    broken = tmp_path / "broken.py"
    broken.write_text("import no_such_module_here\n")
    host = raw_host("dev", str(good), str(broken))
    host.initialize()
    stderr = host.wait_stderr("broken.py serves no tools until it loads")
    listed = sorted(t["name"] for t in host.request(1, "tools/list")["result"]["tools"])
    assert listed == ["broken_py_failed_to_load", "fine"]  # a placeholder says why broken.py has none
    assert "ModuleNotFoundError: No module named 'no_such_module_here'" in stderr
    assert host.request(2, "tools/call", {"name": "fine", "arguments": {}})["result"]["isError"] is False
    fixed = tmp_path / ".broken.py.tmp"
    fixed.write_text("from protomcp_sdk import tool\n\n@tool\ndef mended() -> str:\n    return 'mended'\n")
    os.replace(fixed, broken)
    while host.recv(timeout=20).get("method") != "notifications/tools/list_changed":
        pass
    assert sorted(t["name"] for t in host.request(3, "tools/list")["result"]["tools"]) == ["fine", "mended"]
    reply = host.request(4, "tools/call", {"name": "mended", "arguments": {}})
    assert reply["result"]["content"][0]["text"] == "mended"


def test_run_still_fails_fast_on_a_broken_file(raw_host, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    broken = tmp_path / "broken.py"
    broken.write_text("import no_such_module_here\n")
    host = raw_host("run", str(broken))
    assert host.proc.wait(20) == 1
    assert "ModuleNotFoundError" in host.wait_stderr("cannot start")


# -- 4. heartbeat: a blocked event loop, threads starved by stuck calls ----------------------------


def test_a_tool_blocking_the_event_loop_is_named_and_its_process_replaced(raw_host, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PROTOMCP_BLOCK_REPORT", "0.3")
    host = raw_host("run", "--heartbeat-timeout", "1.5", str(HOSTILE))
    host.initialize()
    old_pid = host.request(1, "tools/call", {"name": "pid_async", "arguments": {}})["result"][
        "structuredContent"
    ]
    host.send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "hog_loop", "arguments": {"key": "never"}},
        }
    )
    reply = answer_to_call(host)
    assert reply["id"] == 2 and reply["result"]["isError"]
    text = reply["result"]["content"][0]["text"]
    assert "stopped answering" in text and "tool 'hog_loop' blocked its event loop" in text
    assert wait_gone(old_pid["result"])
    new_pid = host.request(3, "tools/call", {"name": "pid_async", "arguments": {}})["result"]
    assert new_pid.get("structuredContent", {}).get("result") not in (None, old_pid["result"]), new_pid
    assert_serving(host)


def test_stuck_threads_that_starve_a_tool_get_a_fresh_process(raw_host, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PROTOMCP_CANCEL_GRACE", "0.1")
    host = raw_host("run", "--heartbeat-timeout", "1.5", "--call-timeout", "0.2", str(HOSTILE))
    host.initialize()
    old_pid = host.request(1, "tools/call", {"name": "pid_async", "arguments": {}})["result"][
        "structuredContent"
    ]
    for request_id in range(10, 10 + 48):  # one tool's whole share of threads, each ignoring its timeout
        host.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": "blocked", "arguments": {"key": "stuck"}},
            }
        )
    answers = [answer_to_call(host) for _ in range(48)]
    assert all("timed out after 0.2s" in a["result"]["content"][0]["text"] for a in answers)
    host.wait_stderr("calls to blocked ignored cancellation")
    assert wait_gone(old_pid["result"])  # drained (bounded) and stopped
    reply = host.request(2, "tools/call", {"name": "quick", "arguments": {}})
    assert reply["result"]["content"][0]["text"] == "quick"
    new_pid = host.request(3, "tools/call", {"name": "pid_async", "arguments": {}})["result"]
    assert new_pid["structuredContent"]["result"] != old_pid["result"]


# -- 5. a crash is noticed even when a forked child holds the pipes ---------------------------------


@pytest.mark.parametrize("leak", [False, True])
def test_a_crash_after_fork_is_noticed_and_the_child_does_not_linger(raw_host, leak: bool) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(HOSTILE))
    host.initialize()
    reply = host.request(1, "tools/call", {"name": "fork_and_crash", "arguments": {"leak_frame_fd": leak}})
    assert reply["result"]["isError"]
    assert "tool process exited with status 3" in reply["result"]["content"][0]["text"]
    child = int(re.search(r"forked child (\d+)", host.wait_stderr("forked child")).group(1))  # type: ignore[union-attr]
    assert wait_gone(child)  # its process group went with it
    host.wait_stderr("restarting")
    assert_serving(host)


# -- 12. a payload that came ahead of a cancelled call is not kept -----------------------------------


def rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_bytes()
    return int(re.search(rb"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]


def test_raw_payloads_of_timed_out_calls_are_dropped(raw_host, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PROTOMCP_SPOOL_DIR", "")  # inline raw payloads, held in the host's memory
    host = raw_host("run", "--call-timeout", "0.5", str(HOSTILE))
    host.initialize()
    assert_serving(host)
    before = rss_kib(host.proc.pid)
    for i in range(20):  # 20 x 5 MB
        reply = host.request(
            i, "tools/call", {"name": "raw_then_wait", "arguments": {"size": 5 << 20, "key": f"r{i}"}}
        )
        assert "timed out after 0.5s" in reply["result"]["content"][0]["text"]
        assert host.request(100 + i, "tools/call", {"name": "open_gate", "arguments": {"key": f"r{i}"}})[
            "result"
        ]
    assert_serving(host)  # the late results were ignored
    assert rss_kib(host.proc.pid) - before < 40 * 1024  # not the 100 MB the payloads add up to


def test_channel_forgets_the_payload_of_a_cancelled_call() -> None:
    import asyncio

    from protomcp_host.processes.channel import Channel

    class Leg:
        live = True

        def sent(self, channel: object, request_id: str) -> None:
            self.request_id = request_id

    async def scenario() -> dict:  # type: ignore[type-arg]
        read_end, write_end = os.pipe()
        channel = Channel("t.py", write_end, None)  # type: ignore[arg-type]
        leg = Leg()
        channel.start(pb.Envelope(call_tool=pb.CallToolRequest(name="t")), leg)  # type: ignore[arg-type]
        channel.feed(b"".join(wire.encode_raw(leg.request_id, b"[]" * 1000, wire.RAW_RESULT_JSON)))
        assert leg.request_id in channel.open_requests.raw
        channel.drop(leg.request_id, cancel=True)
        channel.close()
        os.close(read_end)
        return channel.open_requests.raw

    assert asyncio.run(scenario()) == {}


# -- 15. a tool process that speaks only the seed handshake --------------------------------------------


def test_a_seed_only_tool_process_is_served(raw_host, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    launcher = tmp_path / "seed-python"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} {TOOLS / 'seed_only.py'}\n")
    launcher.chmod(0o755)
    host = raw_host("run", "--python", str(launcher), str(HOSTILE))  # the file name only labels it
    host.initialize()
    assert [t["name"] for t in host.request(1, "tools/list")["result"]["tools"]] == ["seeded"]
    reply = host.request(2, "tools/call", {"name": "seeded", "arguments": {}})
    assert reply["result"]["content"] == [{"type": "text", "text": "seeded answer"}]
    assert host.request(3, "ping")["result"] == {}


def test_spool_folders_of_a_killed_host_are_swept(tmp_path: Path) -> None:
    from protomcp_host.processes.launch import SPOOL_PREFIX, sweep_spool_dirs

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = tmp_path / f"{SPOOL_PREFIX}{gone.pid}-00ff"
    live = tmp_path / f"{SPOOL_PREFIX}{os.getpid()}-00ff"
    other = tmp_path / f"{SPOOL_PREFIX}notes"  # not ours: no pid in the name
    for folder in (dead, live, other):
        folder.mkdir()
    (dead / "1.json").write_text("[]")
    sweep_spool_dirs(str(tmp_path))
    assert not dead.exists() and live.exists() and other.exists()
