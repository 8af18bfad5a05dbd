"""--audit-log end to end: one JSON line per tool call, over stdio and over HTTP, with the official
MCP client; the arguments only with --audit-arguments. (Several workers appending to one file:
tests/e2e/test_metrics.py.)"""

from __future__ import annotations

import getpass
import json
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support.hosts import BEHAVIOURS, HOST, mcp_session
from tests.support.http import http_session

pytestmark = pytest.mark.anyio


def read(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


async def _three_calls(session: Any) -> None:
    assert (await session.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}
    assert (await session.call_tool("fail", {"message": "boom"})).is_error
    with pytest.raises(Exception, match="Unknown tool"):
        await session.call_tool("no_such_tool", {"x": 1})


def _check(lines: list[dict[str, Any]], principal: str | None, arguments: bool) -> None:
    assert [(line["tool"], line["outcome"]) for line in lines] == [
        ("add", "ok"),
        ("fail", "error"),  # an isError result
        ("no_such_tool", "refused"),  # a JSON-RPC error: the call never ran
    ]
    for line in lines:
        assert line["principal"] == principal
        assert line["client"].startswith("mcp")  # the official client's clientInfo name
        assert line["time"].endswith("Z") and datetime.fromisoformat(line["time"]).utcoffset() is not None
        assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
        assert ("arguments" in line) is arguments
    if arguments:
        assert [line["arguments"] for line in lines] == [{"a": 2, "b": 3}, {"message": "boom"}, {"x": 1}]


@pytest.mark.parametrize("arguments", [False, True], ids=["plain", "with-arguments"])
async def test_each_tool_call_over_stdio_is_one_line(tmp_path: Path, arguments: bool) -> None:
    log = tmp_path / "audit.jsonl"
    extra = ["--audit-arguments"] if arguments else []
    async with mcp_session("run", str(BEHAVIOURS), "--audit-log", str(log), *extra) as session:
        await _three_calls(session)
        await session.list_tools()  # (not a tool call: no line)
    _check(read(log), getpass.getuser(), arguments)  # over stdio, who runs the host calls


async def test_each_tool_call_over_http_is_one_line(http_host: Any, tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    host = http_host("run", str(BEHAVIOURS), "--audit-log", str(log))
    async with http_session(host.url) as session:
        await _three_calls(session)
    _check(read(log), None, False)  # (no one signed in)


async def test_the_principal_is_the_tokens_subject_in_the_modern_era(http_host: Any, tmp_path: Path) -> None:
    """2026-07-28 over HTTP with OAuth: the principal is the token's subject (ctx.principal's),
    the client what each request's _meta says."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from tests.support.jwks import ISSUER, Jwks

    jwks = Jwks()
    log = tmp_path / "audit.jsonl"
    try:
        host = http_host(
            "run",
            str(BEHAVIOURS),
            "--oauth-jwks",
            jwks.url,
            "--oauth-issuer",
            ISSUER,
            "--audit-log",
            str(log),
        )
        token = jwks.token(host.url, sub="alice@example.com", client_id="the-app")
        async with httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=30) as http:
            transport = streamable_http_client(host.url, http_client=http)
            async with Client(transport, mode="auto", cache=None) as client:  # type: ignore[arg-type]
                assert client.session.protocol_version == "2026-07-28"
                assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {"result": 2}
    finally:
        jwks.close()
    [line] = read(log)
    assert (line["principal"], line["tool"], line["outcome"]) == ("alice@example.com", "add", "ok")
    assert line["client"].startswith("mcp")


def test_dash_is_stderr_over_stdio(tmp_path: Path) -> None:
    """`-` over stdio: stdout is the MCP stream, so the lines go to stderr."""
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 1}},
        },
    ]
    done = subprocess.run(
        [*HOST, "run", str(BEHAVIOURS), "--audit-log", "-"],
        input="".join(json.dumps(m) + "\n" for m in messages),
        capture_output=True,
        text=True,
        timeout=60,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a.get("id") for a in answers] == [1, 2]  # nothing else on the MCP stream
    [line] = [json.loads(x) for x in done.stderr.splitlines() if x.startswith('{"time"')]
    assert (line["tool"], line["outcome"], line["client"]) == ("add", "ok", "t/1")


def test_an_audit_log_that_cannot_be_opened_stops_the_start(tmp_path: Path) -> None:
    done = subprocess.run(
        [*HOST, "run", str(BEHAVIOURS), "--audit-log", str(tmp_path / "missing" / "audit.jsonl")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "--audit-log" in done.stderr and "No such file" in done.stderr


def test_audit_arguments_needs_audit_log() -> None:
    from click.testing import CliRunner

    from protomcp_host.cli.main import main

    result = CliRunner().invoke(main, ["run", str(BEHAVIOURS), "--audit-arguments"])
    assert result.exit_code == 2 and "--audit-arguments: only with --audit-log" in result.output


async def test_each_tool_call_over_stdio_in_the_modern_era_is_one_line(tmp_path: Path) -> None:
    """2026-07-28 over stdio: the connection's requests are audited too (the HTTP endpoint
    measures its own; stdio's long-lived modern connection measures through its router)."""
    import os

    from mcp import Client, StdioServerParameters

    log = tmp_path / "audit.jsonl"
    args = [*HOST[1:], "run", str(BEHAVIOURS), "--audit-log", str(log)]
    params = StdioServerParameters(command=HOST[0], args=args, env=dict(os.environ))
    async with Client(params, mode="auto", cache=None) as client:  # type: ignore[arg-type]
        assert client.session.protocol_version == "2026-07-28"
        await _three_calls(client)
    _check(read(log), getpass.getuser(), False)


async def test_a_call_gone_on_as_a_task_has_a_line_for_its_end(raw_host: Any, tmp_path: Path) -> None:
    """2025-11-25 tasks over stdio: the call's line says `task` when it is answered; its task's end
    (completed, failed, cancelled, expired) is a second line naming the same task, with the same
    client."""
    from tests.e2e.test_e2e_tasks import TASK_TOOLS, TaskClient

    log = tmp_path / "audit.jsonl"
    tasks = TaskClient(raw_host("run", str(TASK_TOOLS), "--audit-log", str(log)))
    done = tasks.start("report", {"n": 1})
    tasks.request("tasks/result", {"taskId": done})  # (answered once the task ended: its line is in)
    failed = tasks.start("broken", {"reason": "out of paper"})
    tasks.request("tasks/result", {"taskId": failed})
    cancelled = tasks.start("job", {"key": "doomed"})
    tasks.status(cancelled, "working")
    tasks.request("tasks/cancel", {"taskId": cancelled})
    expired = tasks.start("job", {"key": "short"}, ttl=1000)
    tasks.status(expired, "working")
    tasks.notice(  # (its call is stopped after the task is dropped, and its line written)
        lambda n: n["method"] == "notifications/message" and n["params"]["data"] == "job short was cancelled"
    )
    lines = read(log)
    assert [(line["tool"], line["outcome"], line["task"]) for line in lines] == [
        ("report", "task", done),
        ("report", "ok", done),
        ("broken", "task", failed),
        ("broken", "error", failed),
        ("job", "task", cancelled),
        ("job", "cancelled", cancelled),
        ("job", "task", expired),
        ("job", "expired", expired),
    ]
    assert lines[-1]["duration_ms"] >= 1000  # (from its creation to its ttl)
    assert {(line["principal"], line["client"]) for line in lines} == {(getpass.getuser(), "raw/1")}


async def test_a_modern_task_has_a_line_for_its_end_over_http(http_host: Any, tmp_path: Path) -> None:
    """2026-07-28 (the tasks extension) with the official client over HTTP: the same two lines."""
    from mcp import Client

    from tests.e2e.tasks_client import Tasks, cancel_task
    from tests.e2e.test_e2e_modern_tasks import EVERYTHING

    log = tmp_path / "audit.jsonl"
    host = http_host("run", EVERYTHING, "--audit-log", str(log))
    async with Client(host.url, cache=None, extensions=[Tasks()]) as client:
        done = await client.call_tool("slow_compute", {"seconds": 0.1, "label": "x"})  # polled to its end
        assert done.content[0].text == "Computed x after 0.1s"
        assert (await client.call_tool("failing_job", {})).is_error  # a completed task, isError
        created = await client.session.call_tool("slow_compute", {"seconds": 30}, allow_claimed=True)
        await cancel_task(client.session, created.task_id)
    lines = read(log)
    first, failing, second = lines[0]["task"], lines[2]["task"], created.task_id
    assert [(line["tool"], line["outcome"], line["task"]) for line in lines] == [
        ("slow_compute", "task", first),
        ("slow_compute", "ok", first),
        ("failing_job", "task", failing),
        ("failing_job", "error", failing),
        ("slow_compute", "task", second),
        ("slow_compute", "cancelled", second),
    ]
    assert all(line["client"].startswith("mcp") for line in lines)
