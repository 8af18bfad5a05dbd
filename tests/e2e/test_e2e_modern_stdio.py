"""The 2026-07-28 era beside the stateful one over stdio, through the real host: the official
client in auto mode (modern) and forced to legacy, and a raw Claude-Code-like probe."""

from __future__ import annotations

import itertools
import os
from typing import Any

import pytest

from tests.support.hosts import BEHAVIOURS, HOST, TOOLS

FEATURES = TOOLS / "features" / "content.py"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "1"},
}


@pytest.fixture
def legacy_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROTOMCP_MODERN", "0")


def _client(*files: str, mode: str = "auto", **kwargs: Any) -> Any:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=HOST[0], args=[*HOST[1:], "run", *files], env=dict(os.environ))
    return Client(params, mode=mode, cache=None, **kwargs)  # type: ignore[arg-type]


async def test_auto_mode_is_served_in_the_modern_era() -> None:
    async with _client(str(BEHAVIOURS), str(FEATURES)) as client:
        assert client.session.protocol_version == "2026-07-28"
        tools = await client.list_tools()
        names = [tool.name for tool in tools.tools]
        assert {"add", "echo", "bump"} <= set(names)
        result = await client.call_tool("point", {"x": 1, "y": 2})
        assert result.structured_content == {"x": 1, "y": 2}
        steps: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            steps.append(progress)

        done = await client.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
        assert done.content[0].text == "done" and steps == [1, 2, 3]
        read = await client.read_resource("test://static-text")
        assert read.contents[0].text  # type: ignore[union-attr]
        prompt = await client.get_prompt("greet", {"name": "Ada"})
        assert "Ada" in prompt.messages[0].content.text  # type: ignore[union-attr]
        resources = await client.list_resources()
        assert any(r.uri == "test://static-text" for r in resources.resources)


async def test_legacy_mode_beside_modern_against_the_same_files() -> None:
    async with _client(str(BEHAVIOURS), mode="legacy") as legacy, _client(str(BEHAVIOURS)) as modern:
        assert legacy.session.protocol_version == "2025-11-25"
        assert modern.session.protocol_version == "2026-07-28"
        assert (await legacy.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}
        assert (await modern.call_tool("add", {"a": 2, "b": 2})).structured_content == {"result": 4}


async def test_auto_mode_falls_back_when_the_modern_era_is_off(legacy_only: None) -> None:
    """Without the modern era offered, discover gets -32022 naming handshake versions: the
    official client falls back to initialize on the same process."""
    async with _client(str(BEHAVIOURS)) as client:
        assert client.session.protocol_version == "2025-11-25"
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}


def test_raw_probe_then_fallback_to_initialize(raw_host: Any, legacy_only: None) -> None:
    """Claude Code's way: server/discover first; on -32022 initialize on the same process."""
    host = raw_host("run", str(BEHAVIOURS))
    reply = host.request(1, "server/discover", {"_meta": MODERN_META})
    assert reply["error"]["code"] == -32022
    assert "2026-07-28" not in reply["error"]["data"]["supported"]
    assert reply["error"]["data"]["requested"] == "2026-07-28"
    init = host.request(
        2,
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cc", "version": "1"}},
    )
    assert init["result"]["protocolVersion"] == "2025-11-25"
    host.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    tools = host.request(3, "tools/list")
    assert "add" in [t["name"] for t in tools["result"]["tools"]]


def test_raw_probe_modern(raw_host: Any) -> None:
    """Served: discover, then a tools/list result that has resultType (Claude Code rejects one
    without), errors with the request's id, removed methods not found; legacy still works."""
    host = raw_host("run", str(BEHAVIOURS))
    discover = host.request(1, "server/discover", {"_meta": MODERN_META})["result"]
    assert discover["supportedVersions"][0] == "2026-07-28" and discover["resultType"] == "complete"
    assert discover["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "protomcp"
    tools = host.request(2, "tools/list", {"_meta": MODERN_META})["result"]
    assert (
        tools["resultType"] == "complete"
        and "ttlMs" in tools
        and tools["cacheScope"] in ("public", "private")
    )
    call = host.request(
        "c", "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": MODERN_META}
    )
    assert call["id"] == "c" and call["result"]["structuredContent"] == {"result": 2}
    assert call["result"]["resultType"] == "complete"
    ping = host.request(4, "ping", {"_meta": MODERN_META})
    assert ping["id"] == 4 and ping["error"]["code"] == -32601
    bad = host.request(5, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})
    assert bad["id"] == 5 and bad["error"]["code"] == -32602
    # a stateful session in the same process
    init = host.request(
        6,
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "cc", "version": "1"}},
    )
    assert init["result"]["protocolVersion"] == "2025-06-18"
    legacy = host.request(7, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}})
    assert legacy["result"]["structuredContent"] == {"result": 4} and "resultType" not in legacy["result"]


def test_modern_logs_only_when_asked(raw_host: Any) -> None:
    host = raw_host("run", str(BEHAVIOURS))
    quiet = host.request(
        1, "tools/call", {"name": "progress", "arguments": {"steps": 2}, "_meta": MODERN_META}
    )
    assert quiet["result"]["content"][0]["text"] == "done"
    meta = {**MODERN_META, "io.modelcontextprotocol/logLevel": "info"}
    host.send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "progress", "arguments": {"steps": 2}, "_meta": meta},
        }
    )
    seen = []
    while True:
        message = host.recv()
        if message.get("id") == 2:
            break
        seen.append(message)
    assert [m["params"]["data"] for m in seen if m.get("method") == "notifications/message"] == [
        "step 1",
        "step 2",
    ]
    # nothing logged for the first call reached the client before the second one's logs
    assert all(m.get("method") == "notifications/message" for m in seen)


def test_a_legacy_line_mentioning_cancelled_gets_one_answer(raw_host: Any) -> None:
    """After a modern probe, a legacy request whose argument merely contains the bytes
    notifications/cancelled is the tool's alone: one answer, the tool's (the era is told from
    the decoded message, not from bytes inside it)."""
    host = raw_host("run", str(BEHAVIOURS))
    assert host.request(1, "server/discover", {"_meta": MODERN_META})["result"]
    host.initialize()
    call = host.request(2, "tools/call", {"name": "echo", "arguments": {"text": "notifications/cancelled"}})
    assert call["result"]["content"][0]["text"] == "notifications/cancelled"
    assert host.request(3, "ping")["result"] == {}  # nothing else answered id 2 in between


NOTIFICATION_NAMES = [
    ("notifications/cancelled", {"requestId": 1, "reason": "no"}),
    ("notifications/initialized", {}),
    ("notifications/progress", {"progressToken": "t", "progress": 1}),
    ("notifications/roots/list_changed", {}),
]


@pytest.mark.parametrize("era", ["stateful", "modern"])
@pytest.mark.parametrize(
    ("method", "params"), NOTIFICATION_NAMES, ids=[name for name, _ in NOTIFICATION_NAMES]
)
def test_a_request_named_like_a_notification_gets_one_answer(
    raw_host: Any, era: str, method: str, params: dict[str, Any]
) -> None:
    """A message with an id is a request whatever its method: once a 2026-07-28 request was seen
    on the connection, it still gets exactly one answer (an error: no such request method), from
    the era it belongs to. A later ping's answer shows that no second one followed."""
    host = raw_host("run", str(BEHAVIOURS))
    assert host.request(1, "server/discover", {"_meta": MODERN_META})["result"]
    if era == "stateful":
        host.initialize()
    else:
        params = {**params, "_meta": MODERN_META}
    host.send({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
    host.send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
    answers = []
    while (message := host.recv()).get("id") != 8:
        if "method" not in message:
            answers.append(message)
    assert [answer["id"] for answer in answers] == [7], answers
    assert answers[0]["error"]["code"] in (-32601, -32600)


def test_an_invalid_cancellation_gets_one_answer(raw_host: Any) -> None:
    """A notifications/cancelled that is no valid JSON-RPC message (its "jsonrpc" is not "2.0")
    gets one -32600, though a 2026-07-28 request was seen on the connection."""
    host = raw_host("run", str(BEHAVIOURS))
    assert host.request(1, "server/discover", {"_meta": MODERN_META})["result"]
    host.send({"jsonrpc": "1.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    host.send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
    answers = []
    while (message := host.recv()).get("id") != 8:
        answers.append(message)
    assert [answer["error"]["code"] for answer in answers] == [-32600], answers


def test_no_line_naming_cancelled_is_answered_twice(raw_host: Any) -> None:
    """Every shape of a message named notifications/cancelled (with or without an id, valid or
    not, either era's params), after a 2026-07-28 request: at most one answer each."""
    host = raw_host("run", str(BEHAVIOURS))
    assert host.request(1, "server/discover", {"_meta": MODERN_META})["result"]
    host.initialize()
    shapes = itertools.product(
        ["absent", 7, "s", None, 1.5, [1]],
        ["absent", {"requestId": 1}, {"requestId": 1, "_meta": MODERN_META}, [1], None],
        ["2.0", "1.0", "absent"],
    )
    twice = []
    for ping, (request_id, params, version) in enumerate(shapes, start=1000):
        message: dict[str, Any] = {"method": "notifications/cancelled"}
        for key, value in (("id", request_id), ("params", params), ("jsonrpc", version)):
            if value != "absent":
                message[key] = value
        host.send(message)
        host.send({"jsonrpc": "2.0", "id": ping, "method": "ping"})
        answers = []
        while (answer := host.recv()).get("id") != ping:
            answers.append(answer)
        if len(answers) > 1:
            twice.append((message, answers))
    assert twice == [], twice[:3]
