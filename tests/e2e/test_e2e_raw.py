"""Wire level: raw JSON-RPC lines against `protomcp run`; every answer is checked exactly."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.hosts import BEHAVIOURS, RawHost


@pytest.fixture
def host(raw_host) -> RawHost:  # type: ignore[no-untyped-def]
    h = raw_host("run", str(BEHAVIOURS))
    h.initialize()
    return h


def test_malformed_json_then_session_goes_on(host: RawHost) -> None:
    host.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": \n')
    reply = host.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32700
    assert host.request(2, "ping") == {"jsonrpc": "2.0", "id": 2, "result": {}}


@pytest.mark.parametrize("line", [b"[1]", b"42", b'"text"', b"null", b"true"])
def test_non_object_line_is_invalid_request(raw_host, line: bytes) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(BEHAVIOURS))
    host.initialize("2025-06-18")
    host.send_raw(line + b"\n")
    reply = host.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32600
    assert host.request(3, "ping")["result"] == {}


def test_missing_method_is_invalid_request(host: RawHost) -> None:
    host.send({"jsonrpc": "2.0", "id": 7, "params": {}})
    assert host.recv() == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32600, "message": 'Invalid Request: missing "method"'},
    }


def test_unknown_method(host: RawHost) -> None:
    reply = host.request("abc", "tools/frobnicate", {})
    assert reply["id"] == "abc" and reply["error"]["code"] == -32601
    assert "tools/frobnicate" in reply["error"]["message"]


def test_wrong_jsonrpc_version_and_bad_id(host: RawHost) -> None:
    host.send({"jsonrpc": "1.0", "id": 1, "method": "ping"})
    assert host.recv()["error"]["code"] == -32600
    host.send({"jsonrpc": "2.0", "id": {"no": 1}, "method": "ping"})
    reply = host.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32600


def test_ids_are_echoed_exactly(host: RawHost) -> None:
    assert host.request("1", "ping")["id"] == "1"
    assert host.request(1, "ping")["id"] == 1
    assert host.request(-5, "ping")["id"] == -5
    assert host.request("", "ping")["id"] == ""


def test_notifications_get_no_answer(host: RawHost) -> None:
    host.send({"jsonrpc": "2.0", "method": "notifications/whatever"})
    host.send({"jsonrpc": "2.0", "method": "tools/list"})  # a notification: no id
    assert host.request(9, "ping")["id"] == 9


def test_five_megabyte_argument(host: RawHost) -> None:
    data = "x" * (5 * 1024 * 1024)
    reply = host.request(5, "tools/call", {"name": "size", "arguments": {"data": data}})
    assert reply["result"]["structuredContent"] == {"result": len(data)}
    assert host.request(6, "ping")["result"] == {}


def test_print_happy_tool_keeps_stdout_clean(host: RawHost) -> None:
    reply = host.request(1, "tools/call", {"name": "chatty", "arguments": {"lines": 500}})
    assert reply["result"]["content"] == [{"type": "text", "text": "printed"}]
    assert host.request(2, "ping")["result"] == {}
    # Everything on stdout parsed as JSON-RPC above; the prints went to stderr instead.
    host.close()
    assert any("chatty line 499" in line for line in host.stderr)


def test_requests_before_initialize(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(BEHAVIOURS))
    assert host.request(1, "ping")["result"] == {}
    reply = host.request(2, "tools/list")
    assert reply["error"]["code"] == -32600 and "initialize" in reply["error"]["message"]
    host.initialize()
    assert "tools" in host.request(3, "tools/list")["result"]
    reply = host.request(
        4, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {}}
    )
    assert reply["error"]["code"] == -32600


@pytest.mark.parametrize(
    ("asked", "answered"),
    [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
    ],
)
def test_version_negotiation(raw_host, asked: str, answered: str) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(BEHAVIOURS))
    assert host.initialize(asked)["result"]["protocolVersion"] == answered


def test_older_revisions_get_older_shapes(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(BEHAVIOURS))
    host.initialize("2024-11-05")
    tools = host.request(1, "tools/list")["result"]["tools"]
    assert all(set(t) <= {"name", "description", "inputSchema"} for t in tools)
    result = host.request(2, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})["result"]
    assert "structuredContent" not in result


def test_batches_only_in_2025_03_26(raw_host) -> None:  # type: ignore[no-untyped-def]
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/ping"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 1}},
        },
        {"jsonrpc": "2.0", "id": 3, "method": "nope"},
    ]
    old = raw_host("run", str(BEHAVIOURS))
    old.initialize("2025-03-26")
    old.send(batch)
    replies = old.recv()
    assert isinstance(replies, list)
    by_id = {r["id"]: r for r in replies}
    assert set(by_id) == {1, 2, 3}
    assert by_id[2]["result"]["content"] == [{"type": "text", "text": "2"}]
    assert by_id[3]["error"]["code"] == -32601

    new = raw_host("run", str(BEHAVIOURS))
    new.initialize("2025-06-18")
    new.send(batch)
    reply = new.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32600


def test_a_batch_repeating_a_fast_requests_id_gets_one_answer_per_id(raw_host) -> None:  # type: ignore[no-untyped-def]
    """The first request (ping) is answered at once; the second with its id is refused as a
    duplicate, not answered a second time; the batch's other call is answered as usual."""
    host = raw_host("run", str(BEHAVIOURS))
    host.initialize("2025-03-26")
    call = {"name": "add", "arguments": {"a": 1, "b": 1}}
    host.send(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
        ]
    )
    replies = host.recv()
    results = [r for r in replies if "result" in r]
    assert sorted(r["id"] for r in results) == [1, 2] and len(replies) == 3
    [duplicate] = [r for r in replies if "error" in r]
    assert duplicate["id"] == 1 and duplicate["error"]["code"] == -32600
    assert host.request(3, "ping") == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_cancellation_sends_no_answer_and_session_goes_on(host: RawHost) -> None:
    host.send(
        {
            "jsonrpc": "2.0",
            "id": 10,
            "method": "tools/call",
            "params": {"name": "wait_async", "arguments": {"key": "c"}},
        }
    )
    host.send(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 10, "reason": "user"}}
    )
    assert host.request(11, "ping")["id"] == 11  # no answer for 10 came before this
    host.request(12, "tools/call", {"name": "release", "arguments": {"key": "c"}})
    assert host.request(13, "ping")["id"] == 13


def test_duplicate_in_flight_id_is_rejected(host: RawHost) -> None:
    call = {"name": "wait_async", "arguments": {"key": "dup"}}
    host.send({"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": call})
    host.send({"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": call})
    reply = host.recv()
    assert reply["id"] == 20 and reply["error"]["code"] == -32600
    host.send(
        {
            "jsonrpc": "2.0",
            "id": 21,
            "method": "tools/call",
            "params": {"name": "release", "arguments": {"key": "dup"}},
        }
    )
    ids = {host.recv()["id"], host.recv()["id"]}
    assert ids == {20, 21}


def test_stdin_eof_finishes_in_flight_calls_then_exits(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(BEHAVIOURS))
    host.initialize()
    host.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "progress", "arguments": {"steps": 50}},
        }
    )
    assert host.close() == 0
    replies = []
    while (line := host.lines.get(timeout=5)) is not None:
        replies.append(orjson.loads(line))
    assert next(r for r in replies if r.get("id") == 1)["result"]["content"][0]["text"] == "done"


# -- fuzz: random lines never crash the host; each request gets exactly one response ---

_ids = st.one_of(st.integers(min_value=-(2**53), max_value=2**53), st.text(max_size=8))
_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=10) | st.floats(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_methods = st.sampled_from(
    ["ping", "tools/list", "tools/call", "initialize", "logging/setLevel", "nope", "notifications/cancelled"]
)
_requests = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "method": _methods},
    optional={
        "params": _values
        | st.fixed_dictionaries({"name": st.sampled_from(["add", "echo", "x"]), "arguments": _values})
    },
)
_lines = st.one_of(
    st.binary(max_size=40).filter(lambda b: b"\n" not in b and b.strip()),
    _values.map(orjson.dumps),
    _requests.map(orjson.dumps),
)


@pytest.fixture(scope="module")
def fuzz_host():  # type: ignore[no-untyped-def]
    host = RawHost("run", str(BEHAVIOURS))
    host.initialize("2025-06-18")
    yield host
    host.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(_lines, max_size=6),
    request_ids=st.lists(st.integers(min_value=1, max_value=10**9), min_size=6, max_size=6, unique=True),
    requests=st.lists(_requests, min_size=1, max_size=4),
)
def test_fuzz_lines(
    fuzz_host: RawHost, lines: list[bytes], request_ids: list[int], requests: list[dict]
) -> None:  # type: ignore[type-arg]
    expected: set[int] = set()
    for line in lines:
        fuzz_host.send_raw(line + b"\n")
    for request_id, request in zip(request_ids, requests, strict=False):
        if request["method"] == "notifications/cancelled":
            continue
        fuzz_host.send_raw(orjson.dumps({**request, "id": request_id}) + b"\n")
        expected.add(request_id)
    barrier = -1
    fuzz_host.send({"jsonrpc": "2.0", "id": barrier, "method": "ping"})
    seen: list[int] = []
    while True:
        message = fuzz_host.recv(timeout=15)
        if isinstance(message, dict) and message.get("id") == barrier and "result" in message:
            break
        if isinstance(message, dict) and message.get("id") in expected:
            seen.append(message["id"])
        if isinstance(message, list):
            seen.extend(m["id"] for m in message if m.get("id") in expected)
    assert sorted(seen) == sorted(expected)
    assert fuzz_host.proc.poll() is None


def test_large_result_travels_raw_and_arrives_intact(host: RawHost) -> None:
    data = "é" + "x" * (3 * 1024 * 1024) + "\n end"
    reply = host.request(30, "tools/call", {"name": "echo", "arguments": {"text": data}})
    assert reply["result"]["content"] == [{"type": "text", "text": data}]
    assert host.request(31, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})["result"][
        "structuredContent"
    ] == {"result": 3}


@pytest.mark.parametrize("spool", ["memory file", "inline"])
def test_large_results_by_spool_file_and_inline(raw_host, tmp_path, monkeypatch, spool: str) -> None:  # type: ignore[no-untyped-def]
    import os

    spool_root = tmp_path / "spool"
    spool_root.mkdir()
    monkeypatch.setenv("PROTOMCP_SPOOL_DIR", str(spool_root) if spool == "memory file" else "")
    host = raw_host("run", str(BEHAVIOURS))
    host.initialize()
    for i in range(3):
        data = f"{i}é" + "x" * (1024 * 1024)
        reply = host.request(40 + i, "tools/call", {"name": "echo", "arguments": {"text": data}})
        assert reply["result"]["content"] == [{"type": "text", "text": data}]
    spooled = [d for d in spool_root.iterdir()]
    if spool == "memory file":
        assert len(spooled) == 1 and list(spooled[0].iterdir()) == []  # each file deleted once read
    else:
        assert spooled == []
    assert host.close() == 0
    assert list(spool_root.iterdir()) == [] and os.path.isdir(spool_root)


def test_page_size_option_paginates_tools_list(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", "--page-size", "4", str(BEHAVIOURS))
    host.initialize()
    names: list[str] = []
    cursor = None
    pages = 0
    while True:
        result = host.request(100 + pages, "tools/list", {"cursor": cursor} if cursor else {})["result"]
        assert len(result["tools"]) <= 4
        names += [t["name"] for t in result["tools"]]
        pages += 1
        cursor = result.get("nextCursor")
        if cursor is None:
            break
    assert pages >= 3 and len(names) == len(set(names)) and {"add", "echo", "progress"} <= set(names)


def test_call_timeout_option_cancels_a_slow_call(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", "--call-timeout", "0.5", str(BEHAVIOURS))
    host.initialize()
    reply = host.request(1, "tools/call", {"name": "wait_async", "arguments": {"key": "never"}})
    assert reply["result"]["isError"] is True
    assert "timed out after 0.5s" in reply["result"]["content"][0]["text"]
    assert (
        host.request(2, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})["result"]["isError"]
        is False
    )
