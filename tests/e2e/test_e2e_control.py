"""End to end: tool-list control, tags, per-tool timeouts and standard logging, through
`protomcp run`/`dev` with raw JSON-RPC (exact message order) and the official client."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.test_e2e_dev import Watcher, write_atomic
from tests.support.hosts import TOOLS, RawHost, mcp_session

CONTROL = TOOLS / "control.py"
LIST_CHANGED = "notifications/tools/list_changed"


def exchange(host: RawHost, request_id: int, method: str, params: Any = None) -> tuple[Any, list[Any]]:
    """Send one request; return its response and the notifications that came before it."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    host.send(message)
    notes = []
    while True:
        reply = host.recv()
        if "method" in reply:
            notes.append(reply)
            continue
        assert reply.get("id") == request_id, reply
        return reply, notes


def call(host: RawHost, request_id: int, name: str, **arguments: Any) -> tuple[Any, list[str]]:
    reply, notes = exchange(host, request_id, "tools/call", {"name": name, "arguments": arguments})
    return reply, [note["method"] for note in notes]


def listed(host: RawHost) -> list[str]:
    reply, _ = exchange(host, 999, "tools/list")
    return [tool["name"] for tool in reply["result"]["tools"]]


def structured(reply: Any) -> Any:
    assert reply["result"]["isError"] is False, reply
    return reply["result"]["structuredContent"]["result"]


def test_hidden_tool_is_absent_refused_then_enabled_from_an_async_tool(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(CONTROL))
    host.initialize()
    assert "secret" not in listed(host)
    refused, _ = exchange(host, 1, "tools/call", {"name": "secret", "arguments": {}})
    assert refused["error"]["code"] == -32602
    assert "'secret' is disabled" in refused["error"]["message"]
    reply, notes = call(host, 2, "unlock")
    assert notes == [LIST_CHANGED]  # before the result, so a client refreshing at once sees it
    assert "secret" in structured(reply)
    assert "secret" in listed(host)
    reply, _ = call(host, 3, "secret")
    assert reply["result"]["content"][0]["text"] == "found"


def test_no_list_changed_for_a_no_op(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(CONTROL))
    host.initialize()
    assert call(host, 1, "unlock")[1] == [LIST_CHANGED]
    assert call(host, 2, "unlock")[1] == []  # already enabled
    assert call(host, 3, "active")[1] == []
    assert call(host, 4, "batch", enable=["secret", "public"])[1] == []  # both already shown
    assert call(host, 5, "lock")[1] == [LIST_CHANGED]
    assert call(host, 6, "lock")[1] == []


def test_list_changed_is_coalesced(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(CONTROL))
    host.initialize()
    times = 300  # 601 changes of the visible list, one control request (round trip) each
    reply, notes = call(host, 1, "flip", times=times)
    assert "secret" in structured(reply)
    assert set(notes) == {LIST_CHANGED}
    assert len(notes) < times  # they gather (at most one per 20 ms, and one before the result)
    listing, notes = exchange(host, 2, "tools/list")
    assert notes == []  # nothing left pending after the result
    assert "secret" in [tool["name"] for tool in listing["result"]["tools"]]
    reply, notes = call(host, 3, "flip", times=0)  # already enabled: no change, nothing sent
    assert notes == []


def test_disable_through_tool_result(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(CONTROL))
    host.initialize()
    call(host, 1, "unlock")
    reply, notes = call(host, 2, "lock")
    assert notes == [LIST_CHANGED]
    assert reply["result"]["content"] == [{"type": "text", "text": "locked"}]
    assert "secret" not in listed(host)


def test_allow_block_and_batch_give_exact_lists(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(CONTROL))
    host.initialize()
    everything = listed(host)
    reply, notes = call(host, 1, "allow", names=["allow", "block", "batch", "secret"])
    assert notes == [LIST_CHANGED]
    assert structured(reply) == ["secret", "allow", "block", "batch"]  # catalog order
    assert listed(host) == ["secret", "allow", "block", "batch"]
    refused, _ = exchange(host, 2, "tools/call", {"name": "public", "arguments": {}})
    assert "'public' is disabled" in refused["error"]["message"]
    reply, _ = call(host, 3, "block", names=["public", "admin_only"])
    assert listed(host) == [name for name in everything if name not in ("public", "admin_only")]
    # One atomic batch, one notification: a new allowlist, then enable, then disable.
    reply, notes = call(host, 4, "batch", allow=["batch", "active"], enable=["secret"], disable=["active"])
    assert notes == [LIST_CHANGED]
    assert listed(host) == ["secret", "batch"]


async def test_enable_from_a_sync_tool_with_the_official_client() -> None:
    watcher = Watcher()
    async with mcp_session("run", str(CONTROL), message_handler=watcher.on_message) as session:
        assert "secret" not in {t.name for t in (await session.list_tools()).tools}
        result = await session.call_tool("unlock_sync", {})
        assert "secret" in result.structured_content["result"]
        tools = await watcher.tools_after_change(session, lambda tools: "secret" in tools)
        assert tools["secret"].description == "Only visible once enabled."
        assert (await session.call_tool("secret", {})).content[0].text == "found"


async def test_state_is_kept_across_a_reload_in_dev(tmp_path: Path) -> None:
    file = tmp_path / "control.py"
    shutil.copy(CONTROL, file)
    watcher = Watcher()
    async with mcp_session("dev", str(file), message_handler=watcher.on_message) as session:
        await session.call_tool("unlock", {})
        await watcher.tools_after_change(session, lambda tools: "secret" in tools)
        source = file.read_text()
        source = source.replace('"""Only visible once enabled."""', '"""Changed."""')
        source += '\n\n@tool(hidden=True)\ndef later() -> str:\n    return "later"\n'
        write_atomic(file, source)
        tools = await watcher.tools_after_change(
            session, lambda tools: tools["secret"].description == "Changed."
        )
        assert "later" not in tools  # a new hidden tool starts hidden
        assert (await session.call_tool("secret", {})).content[0].text == "found"


def test_include_and_exclude_tags(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", "--include-tag", "public", str(CONTROL))
    host.initialize()
    assert listed(host) == ["public"]
    host = raw_host("run", "--exclude-tag", "admin", str(CONTROL))
    host.initialize()
    names = listed(host)
    assert "admin_only" not in names and "public" in names and "unlock" in names
    refused, _ = exchange(host, 1, "tools/call", {"name": "admin_only", "arguments": {}})
    assert refused["error"]["message"] == "Unknown tool: admin_only"


def test_per_tool_timeout_overrides_the_call_timeout(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", "--call-timeout", "300", str(CONTROL))
    host.initialize()
    reply, _ = call(host, 1, "stuck")
    assert reply["result"]["isError"] is True
    assert (
        reply["result"]["content"][0]["text"] == "Tool 'stuck' failed: timed out after 0.5s and was cancelled"
    )
    assert call(host, 2, "public")[0]["result"]["content"][0]["text"] == "public"  # still serving


def test_logging_records_filtered_by_set_level_and_not_duplicated(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(CONTROL))
    host.initialize()
    _, notes = exchange(host, 1, "tools/call", {"name": "log_records", "arguments": {}})
    messages = [
        (n["params"]["level"], n["params"]["data"]) for n in notes if n["method"] == "notifications/message"
    ]
    assert messages == [("info", "info record"), ("warning", "warning record")]
    assert {n["params"]["logger"] for n in notes} == {"control.audit"}
    exchange(host, 2, "logging/setLevel", {"level": "warning"})
    _, notes = exchange(host, 3, "tools/call", {"name": "log_records", "arguments": {}})
    assert [n["params"]["data"] for n in notes] == ["warning record"]
    assert host.close() == 0
    assert "warning record" not in host.stderr_text()  # not captured a second time as stderr


def test_call_command_has_a_call_timeout() -> None:
    import subprocess

    from tests.support.hosts import HOST

    done = subprocess.run(
        [*HOST, "call", "--call-timeout", "0.3", str(CONTROL), "stuck"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "timed out after 0.5s" in done.stdout  # the tool's own timeout is shorter


pytestmark = pytest.mark.anyio


del anyio


def test_control_covers_the_tools_of_every_plugin_file(raw_host, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    other = tmp_path / "other.py"
    other.write_text(
        "from protomcp_sdk import tool\n\n@tool(hidden=True)\ndef elsewhere() -> str:\n    return 'there'\n"
    )
    host = raw_host("run", str(CONTROL), str(other))
    host.initialize()
    assert "elsewhere" not in listed(host)
    reply, notes = call(host, 1, "batch", enable=["elsewhere"])
    assert notes == [LIST_CHANGED] and "elsewhere" in structured(reply)
    assert call(host, 2, "elsewhere")[0]["result"]["content"][0]["text"] == "there"


def test_a_logged_exception_carries_its_traceback(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(CONTROL))
    host.initialize()
    _, notes = exchange(host, 1, "tools/call", {"name": "log_failure", "arguments": {}})
    (note,) = [n for n in notes if n["method"] == "notifications/message"]
    assert note["params"]["level"] == "error"
    assert note["params"]["data"].startswith("division failed\nTraceback")
    assert "ZeroDivisionError" in note["params"]["data"]
