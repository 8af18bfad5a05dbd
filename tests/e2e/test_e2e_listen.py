"""subscriptions/listen (2026-07-28) through the real host: acknowledgement first, every
notification tagged, the filter honoured, per-principal tool-list changes, reloads, cancel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.test_e2e_dev import tool_source, write_atomic
from tests.support.hosts import TOOLS

CONTROL = TOOLS / "control.py"
SUB = "io.modelcontextprotocol/subscriptionId"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _until(host: Any, request_id: Any) -> tuple[list[Any], Any]:
    """The notifications before the response with this id, and the response."""
    seen = []
    while (message := host.recv()).get("id") != request_id or "method" in message:
        seen.append(message)
    return seen, message


def _listen(host: Any, id_: Any, **wanted: Any) -> dict[str, Any]:
    host.send(
        {
            "jsonrpc": "2.0",
            "id": id_,
            "method": "subscriptions/listen",
            "params": {"notifications": wanted, "_meta": META},
        }
    )
    return host.recv()


def test_listen_ack_filter_control_and_cancel(raw_host: Any) -> None:
    host = raw_host("run", str(CONTROL))
    ack = _listen(host, "tools", toolsListChanged=True, promptsListChanged=False)
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"] == {"_meta": {SUB: "tools"}, "notifications": {"toolsListChanged": True}}
    prompts_only = _listen(host, 7, promptsListChanged=True)
    assert prompts_only["params"]["_meta"] == {SUB: 7}
    host.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "unlock", "arguments": {}, "_meta": META},
        }
    )
    notes, reply = _until(host, 1)
    assert "secret" in reply["result"]["structuredContent"]["result"]
    tools_changed = {
        "jsonrpc": "2.0",
        "method": "notifications/tools/list_changed",
        "params": {"_meta": {SUB: "tools"}},
    }
    assert notes == [tools_changed]  # only the stream that asked for tool changes, tagged
    listed = host.request(2, "tools/list", {"_meta": META})["result"]
    assert "secret" in [t["name"] for t in listed["tools"]] and listed["cacheScope"] == "private"
    # cancelled: the stream ends, later changes do not reach it
    host.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "tools"}})
    host.send(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "lock", "arguments": {}, "_meta": META},
        }
    )
    notes, _ = _until(host, 3)
    assert notes == []


def test_reload_reaches_every_listener(raw_host: Any, tmp_path: Path) -> None:
    tools = tmp_path / "tools.py"
    write_atomic(tools, tool_source("one"))
    host = raw_host("dev", str(tools))
    assert host.request(1, "tools/list", {"_meta": META})["result"]["tools"][0]["name"] == "one"
    _listen(host, 10, toolsListChanged=True)
    _listen(host, 11, toolsListChanged=True)
    write_atomic(tools, tool_source("one", "two"))
    seen = {host.recv()["params"]["_meta"][SUB] for _ in range(2)}
    assert seen == {10, 11}
