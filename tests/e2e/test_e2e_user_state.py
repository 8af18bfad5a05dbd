"""ctx.user_state end to end without sign-in: the official client, the real host, a real tool
process (tests/tools/user_state.py). Over stdio every call is the local user's, in one host and
in the next one on the same store; over HTTP without OAuth every caller is one anonymous user,
not the local one. Bounds and non-JSON values are refused with errors that say why."""

from __future__ import annotations

from typing import Any

import anyio

from protomcp_sdk.wire import user_state as contract
from tests.support.hosts import TOOLS, mcp_session
from tests.support.http import HttpHost, http_session

FILE = str(TOOLS / "user_state.py")


def value_of(result: Any) -> Any:
    assert not result.is_error, result.content
    return result.structured_content["value"]


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def test_async_and_sync_tools_share_the_local_users_state() -> None:
    async with mcp_session("run", FILE) as session:
        assert value_of(await session.call_tool("recall", {"key": "a"})) == "<none>"
        nested = {"n": 1, "list": [1.5, True, None, "x"], "deep": {"é": ["ü"]}}
        assert text_of(await session.call_tool("remember", {"key": "a", "value": nested})) == "kept"
        assert value_of(await session.call_tool("recall", {"key": "a"})) == nested  # sync reads async's
        await session.call_tool("remember_sync", {"key": "b", "value": [1, 2]})
        assert value_of(await session.call_tool("recall_async", {"key": "b"})) == [1, 2]
        assert text_of(await session.call_tool("forget", {"key": "a"})) == "true"
        assert text_of(await session.call_tool("forget", {"key": "a"})) == "false"
        assert value_of(await session.call_tool("recall_async", {"key": "a"})) == "<none>"
        # resources and prompts see the same state
        (content,) = (await session.read_resource("state://b")).contents
        assert content.text == "[1, 2]"
        prompt = await session.get_prompt("recall_prompt", {"key": "b"})
        assert prompt.messages[0].content.text == "value: [1, 2]"


async def test_values_expire() -> None:
    async with mcp_session("run", FILE) as session:
        await session.call_tool("remember", {"key": "brief", "value": 1, "ttl": 0.2})
        await session.call_tool("remember", {"key": "kept", "value": 2})
        with anyio.fail_after(10):
            while value_of(await session.call_tool("recall", {"key": "brief"})) != "<none>":
                await anyio.sleep(0.05)
        assert value_of(await session.call_tool("recall", {"key": "kept"})) == 2


async def test_bounds_and_non_json_values_are_refused_clearly() -> None:
    async with mcp_session("run", FILE) as session:
        big = await session.call_tool("remember", {"key": "big", "value": "x" * contract.MAX_VALUE_BYTES})
        assert big.is_error and f"at most {contract.MAX_VALUE_BYTES} bytes" in text_of(big)
        long_key = await session.call_tool("remember", {"key": "k" * 300, "value": 1})
        assert long_key.is_error and f"at most {contract.MAX_KEY_CHARS} are kept" in text_of(long_key)
        empty = await session.call_tool("remember", {"key": "", "value": 1})
        assert empty.is_error and "non-empty" in text_of(empty)
        ttl = await session.call_tool("remember", {"key": "k", "value": 1, "ttl": -1})
        assert ttl.is_error and "positive number of seconds" in text_of(ttl)
        pair = await session.call_tool("keep_tuple", {})
        assert pair.is_error and "value['pair'] is a tuple, not JSON" in text_of(pair)
        assert value_of(await session.call_tool("recall", {"key": "big"})) == "<none>"  # nothing stored

        filled = await session.call_tool("fill", {"count": contract.MAX_KEYS + 1})
        assert text_of(filled).startswith(f"refused k{contract.MAX_KEYS}: ")
        assert f"already holds {contract.MAX_KEYS} user_state keys" in text_of(filled)
        await session.call_tool("forget", {"key": "k0"})  # a place is free again
        assert text_of(await session.call_tool("remember", {"key": "new", "value": 1})) == "kept"


async def test_only_a_running_call_reaches_the_state() -> None:
    async with mcp_session("run", FILE) as session:
        assert text_of(await session.call_tool("leave_behind", {})) == "started"
        late = text_of(await session.call_tool("left_behind", {}))
        assert "works only during a tool call" in late and "still running" in late
        assert value_of(await session.call_tool("recall", {"key": "late"})) == "<none>"


async def test_the_local_user_is_one_across_stdio_hosts_and_not_http_callers(redis_url: str) -> None:
    store = ("--store", redis_url)
    async with mcp_session("run", FILE, *store) as session:
        await session.call_tool("remember", {"key": "who", "value": "local"})
    async with mcp_session("run", FILE, *store) as session:  # another host, process and session
        assert value_of(await session.call_tool("recall", {"key": "who"})) == "local"

    host = HttpHost("run", FILE, *store)  # no OAuth: every caller is the one anonymous user
    try:
        async with http_session(host.url) as first:
            assert value_of(await first.call_tool("recall", {"key": "who"})) == "<none>"
            await first.call_tool("remember", {"key": "who", "value": "anonymous"})
        async with http_session(host.url) as second:
            assert value_of(await second.call_tool("recall_async", {"key": "who"})) == "anonymous"
    finally:
        host.terminate()
    async with mcp_session("run", FILE, *store) as session:
        assert value_of(await session.call_tool("recall", {"key": "who"})) == "local"


async def test_every_process_of_a_pool_reaches_the_hosts_state() -> None:
    async with mcp_session("run", FILE, "--processes", "2") as session:
        await session.call_tool("remember", {"key": "k", "value": "v"})
        processes: set[int] = set()

        async def recall() -> None:
            result = await session.call_tool("recall", {"key": "k"})
            assert value_of(result) == "v"
            processes.add(result.structured_content["process"])

        for _ in range(20):  # concurrent calls go to the less busy process: both serve some
            async with anyio.create_task_group() as tg:
                for _ in range(4):
                    tg.start_soon(recall)
            if len(processes) == 2:
                break
        assert len(processes) == 2


FLOOD = """
import asyncio
from protomcp_sdk import Context, tool

@tool
async def flood(n: int, ctx: Context) -> list[str]:
    \"\"\"n reads at once: what each raised ('' for none).\"\"\"
    got = await asyncio.gather(*(ctx.user_state.get("k") for _ in range(n)), return_exceptions=True)
    return [str(r) if isinstance(r, BaseException) else "" for r in got]
"""


async def test_a_flood_of_requests_waits_within_a_bound(tmp_path: Any, redis_url: str) -> None:
    """A tool's 200,000 reads at once once held ~8 KiB of host memory each (1.7 GB) while the
    store worked through them, and went on after the process was replaced. Now at most
    MAX_IN_FLIGHT of one process wait; the rest are refused at once, saying why."""
    import redis.asyncio

    tools = tmp_path / "flood.py"
    tools.write_text(FLOOD)
    asked = contract.MAX_IN_FLIGHT + 500
    redis_client = redis.asyncio.Redis.from_url(redis_url)
    try:
        async with mcp_session("run", str(tools), "--store", redis_url) as session:
            await redis_client.client_pause(3000)  # every read waits for the store meanwhile
            result = await session.call_tool("flood", {"n": asked})
            errors = result.structured_content["result"]
            assert len(errors) == asked
            refused = [e for e in errors if e]
            assert len(refused) == asked - contract.MAX_IN_FLIGHT, refused[:1]
            assert set(refused) == {contract.busy()}
    finally:
        await redis_client.aclose()
