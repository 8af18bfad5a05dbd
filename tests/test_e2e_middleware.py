"""End to end: middleware in one plugin file wrapping the tools of another, through
`protomcp run` with the official client."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import TOOLS, mcp_session

MIDDLEWARE = TOOLS / "middleware"

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def test_rewrites_arguments_and_results_in_priority_order() -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with mcp_session("run", str(MIDDLEWARE)) as session:
        result = await session.call_tool("shout", {"text": "hi"}, progress_callback=on_progress)
        # inner (priority 5) upper-cased the argument of a tool in another file and wrapped the
        # result first; outer (priority 1) is outermost and wrapped it last.
        assert text(result) == "HI[inner][outer]"
        assert result.is_error is False
        assert progress == [1]  # the tool's progress still reaches the client
        assert text(await session.call_tool("add", {"a": 2, "b": 3})) == "5"  # passed through
        assert text(await session.call_tool("mw_status", {})) == "middleware file loaded"


async def test_rewritten_arguments_are_validated_again() -> None:
    async with mcp_session("run", str(MIDDLEWARE)) as session:
        result = await session.call_tool("add", {"a": 13, "b": 1})
        assert result.is_error is True
        assert "Invalid arguments for tool 'add'" in text(result) and "thirteen" in text(result)


async def test_reject_raise_and_answer_instead() -> None:
    async with mcp_session("run", str(MIDDLEWARE)) as session:
        rejected = await session.call_tool("reject_me", {})
        assert rejected.is_error is True
        assert text(rejected) == "Rejected by middleware 'outer' (mw.py): not allowed today"
        crashed = await session.call_tool("crash_mw", {})
        assert crashed.is_error is True
        assert text(crashed) == "Middleware 'outer' (mw.py) failed: RuntimeError: middleware bug"
        assert text(await session.call_tool("short", {})) == "answered by middleware"
        assert text(await session.call_tool("shout", {"text": "ok"})) == "OK[inner][outer]"


async def test_a_hanging_middleware_times_out_naming_it() -> None:
    async with mcp_session("run", "--call-timeout", "1", str(MIDDLEWARE)) as session:
        result = await session.call_tool("hang_mw", {})
        assert result.is_error is True
        # outer and inner (one file, next to each other in the chain) run as one: either hangs
        stage = "middleware 'outer', 'inner' (mw.py)"
        assert text(result) == f"Tool 'hang_mw' failed: timed out after 1s in {stage}"
        assert text(await session.call_tool("shout", {"text": "still"})) == "STILL[inner][outer]"


async def test_a_middleware_process_that_dies_fails_the_call_naming_it() -> None:
    async with mcp_session("run", str(MIDDLEWARE)) as session:
        result = await session.call_tool("kill_mw", {})
        assert result.is_error is True
        assert text(result).startswith("Tool 'kill_mw' failed: middleware 'outer' (mw.py) failed: ")
        assert "exited with status 3" in text(result)
        # The middleware's process is restarted; the next call waits for it.
        assert text(await session.call_tool("shout", {"text": "back"})) == "BACK[inner][outer]"


def test_a_call_cancelled_inside_middleware_gets_no_answer(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(MIDDLEWARE))
    host.initialize()
    host.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hang_mw"}})
    host.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    # The next answer is the ping's: the cancelled call is never answered, and the host serves on.
    assert host.request(2, "ping") == {"jsonrpc": "2.0", "id": 2, "result": {}}
    reply = host.request(3, "tools/call", {"name": "shout", "arguments": {"text": "on"}})
    assert reply["result"]["content"] == [{"type": "text", "text": "ON[inner][outer]"}]
