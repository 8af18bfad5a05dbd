"""Rate limits end to end (`--rate-limit`, `@tool(rate_limit=...)`): the real host and tool
process, the official client. Which limit a tool has, the refusal the model reads, a window that
passes, the exact count under concurrent calls, a task over the limit, and a malformed spec.
(Several hosts on one Redis with two signed-in principals: tests/oauth/test_rate_limit_cluster.py.)"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.hosts import HOST, RawHost, mcp_session
from tests.support.http import http_session
from tests.support.scale import modern_rpc, task_until

TOOLS = '''
import asyncio

from protomcp_sdk import tool


@tool(rate_limit="2/minute")
def own() -> str:
    """Limited by its decorator."""
    return "own"


@tool(rate_limit="2/minute")
def overridden() -> str:
    """Limited by its decorator, which --rate-limit replaces."""
    return "overridden"


@tool
def plain() -> str:
    """No limit of its own: --rate-limit '*' applies."""
    return "plain"


@tool(rate_limit="1/second")
def per_second() -> str:
    """One call a second."""
    return "per second"


@tool(rate_limit="10/minute")
async def slow() -> str:
    """Takes a moment, so many calls run at once."""
    await asyncio.sleep(0.2)
    return "slow"


@tool(rate_limit="1/minute", task="required")
def chore() -> str:
    """Always a task."""
    return "chore done"
'''


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    path = tmp_path / "limited.py"
    path.write_text(TOOLS)
    return path


def text_of(result: Any) -> str:
    return str(result.content[0].text)


async def calls(session: Any, name: str, count: int) -> list[Any]:
    return [await session.call_tool(name, {}) for _ in range(count)]


async def test_each_tool_has_the_limit_it_should_and_the_refusal_says_when_to_retry(tools: Path) -> None:
    args = ("run", str(tools), "--rate-limit", "overridden=4/minute", "--rate-limit", "*=3/minute")
    async with mcp_session(*args) as session:
        own = await calls(session, "own", 3)  # the decorator's 2/minute beats '*'
        assert [r.is_error for r in own] == [False, False, True]
        assert text_of(own[2]).startswith(
            "Rate limit reached: tool 'own' allows 2 calls per minute per caller; retry in "
        )
        error = own[2].meta["protomcp/error"]
        assert error["code"] == "rate_limited" and error["retryable"] is True
        assert 0 < error["retryAfter"] <= 60
        overridden = await calls(session, "overridden", 5)  # --rate-limit NAME beats the decorator
        assert [r.is_error for r in overridden] == [False] * 4 + [True]
        assert "allows 4 calls per minute" in text_of(overridden[4])
        plain = await calls(session, "plain", 4)  # '*' for a tool without a limit of its own
        assert [r.is_error for r in plain] == [False] * 3 + [True]
        assert text_of(plain[0]) == "plain"


async def test_the_window_passes(tools: Path) -> None:
    async with mcp_session("run", str(tools)) as session:
        first, second = await calls(session, "per_second", 2)
        assert text_of(first) == "per second" and second.is_error
        assert "retry in" in text_of(second)
        with anyio.fail_after(10):  # admitted again once the second has passed (polled)
            while (await session.call_tool("per_second", {})).is_error:
                await anyio.sleep(0.05)


async def test_exactly_the_limit_of_concurrent_calls_runs(http_host: Any, tools: Path) -> None:
    host = http_host("run", str(tools))
    async with http_session(host.url) as session:
        results: list[Any] = []

        async def call() -> None:
            results.append(await session.call_tool("slow", {}))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for _ in range(40):
                    tg.start_soon(call)
    assert len(results) == 40
    assert sum(not r.is_error for r in results) == 10
    assert all("allows 10 calls per minute" in text_of(r) for r in results if r.is_error)
    # each refusal is one line on the host's stderr (the first ten of a minute; then summed)
    line = host.wait_stderr(lambda text: "rate limit 10/minute of tool 'slow' refused" in text)
    assert "a call of anonymous" in line


async def test_a_task_over_the_limit_ends_with_the_refusal(http_host: Any, tools: Path) -> None:
    import httpx2

    host = http_host("run", str(tools))
    async with httpx2.AsyncClient(timeout=30) as http:
        with anyio.fail_after(60):
            outcomes = []
            for _ in range(2):
                created = await modern_rpc(http, host.url, "tools/call", {"name": "chore", "arguments": {}})
                assert created["result"]["resultType"] == "task", created
                task_id = created["result"]["taskId"]
                outcomes.append(await task_until(http, host.url, task_id, "completed", "failed"))
    assert outcomes[0]["result"]["content"][0]["text"] == "chore done"
    refused = outcomes[1]["result"]
    assert refused["isError"] is True
    assert refused["content"][0]["text"].startswith("Rate limit reached: tool 'chore' allows 1 call per")


async def test_calls_go_on_unchecked_while_the_store_is_down(tools: Path, tmp_path: Path) -> None:
    """Fail open: a limit protects the service; an outage of Redis must not also stop every
    limited tool. The host says so on stderr, and counts again once Redis is back."""
    import os

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from tests.support.cluster import start_redis, stop
    from tests.support.ports import free_port

    port = free_port()
    redis = start_redis(port, tmp_path / "redis")
    args = [*HOST[1:], "run", str(tools), "--store", f"redis://127.0.0.1:{port}/0"]
    params = StdioServerParameters(command=HOST[0], args=args, env=dict(os.environ))
    errors = tmp_path / "stderr.txt"
    try:
        with errors.open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                assert [r.is_error for r in await calls(session, "own", 3)] == [False, False, True]
                stop(redis)
                assert [r.is_error for r in await calls(session, "own", 3)] == [False] * 3
                redis = start_redis(port, tmp_path / "redis")  # (empty: no persistence)
                with anyio.fail_after(30):  # counted again once the store answers (polled)
                    while not (await session.call_tool("own", {})).is_error:
                        await anyio.sleep(0.05)
    finally:
        stop(redis)
    said = errors.read_text()
    assert "protomcp: rate limits are not counted while the store cannot answer" in said
    assert "protomcp: rate limits are counted again" in said


async def test_a_retry_with_its_request_state_is_not_counted_again(
    http_host: Any, redis_url: str, tmp_path: Path
) -> None:
    """2026-07-28: a call that asked for input and is retried with its requestState on another
    host (which runs it again) was admitted once; a new call is counted."""
    import httpx2

    from tests.support.hosts import TOOLS

    rounds = TOOLS / "rounds" / "rounds.py"
    limit = ("--rate-limit", "held_thread=1/minute")
    hosts = [http_host("run", str(rounds), "--store", redis_url, *limit) for _ in range(2)]
    call = {"name": "held_thread", "arguments": {"mark": str(tmp_path / "mark")}}
    with anyio.fail_after(60):
        async with httpx2.AsyncClient(timeout=30) as http:
            first = (await modern_rpc(http, hosts[0].url, "tools/call", call))["result"]
            assert first["resultType"] == "input_required", first
            retry = {
                **call,
                "requestState": first["requestState"],
                "inputResponses": {"wait": {"action": "accept", "content": {"v": "x"}}},
            }
            done = (await modern_rpc(http, hosts[1].url, "tools/call", retry))["result"]
            assert done["content"][0]["text"].startswith("accept in "), done
            again = (await modern_rpc(http, hosts[1].url, "tools/call", call))["result"]
            assert again["isError"] is True and again["content"][0]["text"].startswith("Rate limit reached")


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("search", "expected TOOL=N/UNIT or *=N/UNIT"),
        ("search=10", "expected N/second, N/minute or N/hour"),
        ("search=10/day", "expected N/second, N/minute or N/hour"),
        ("search=0/minute", "expected N/second, N/minute or N/hour"),
        ("bad name=1/second", "expected TOOL=N/UNIT or *=N/UNIT"),
    ],
)
def test_a_malformed_rate_limit_is_refused_at_startup(tools: Path, spec: str, says: str) -> None:
    done = subprocess.run([*HOST, "run", str(tools), "--rate-limit", spec], capture_output=True, timeout=60)
    assert done.returncode == 2
    assert says in done.stderr.decode() and "--rate-limit" in done.stderr.decode()


def test_a_tool_limit_given_twice_is_refused(tools: Path) -> None:
    args = ["run", str(tools), "--rate-limit", "own=1/second", "--rate-limit", "own=2/second"]
    done = subprocess.run([*HOST, *args], capture_output=True, timeout=60)
    assert done.returncode == 2 and "'own' is given twice" in done.stderr.decode()


def test_a_limit_for_a_tool_not_served_is_warned_about(tools: Path) -> None:
    """`--rate-limit plian=...` (a typo) once left `plain` unlimited without a word."""
    limits = ("--rate-limit", "plian=1/minute", "--rate-limit", "own=5/minute", "--rate-limit", "*=9/hour")
    host = RawHost("run", str(tools), *limits)
    try:
        host.initialize()
        said = host.wait_stderr("--rate-limit 'plian'")
        assert "no tool of that name is served now" in said
    finally:
        host.close()
    said = host.stderr_text()
    assert "--rate-limit 'own'" not in said and "--rate-limit '*'" not in said
