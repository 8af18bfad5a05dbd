"""Each call owns what it starts (issue 13): tool-list control under middleware and after the
call ended, a middleware file reloaded mid-call, a `hidden` flip in dev, frames the host
cannot handle, output outside any call. Real host, real tool processes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.test_e2e_dev import Watcher, text_of, write_atomic
from tests.support.hosts import TOOLS, mcp_session

pytestmark = pytest.mark.anyio

MIDDLEWARE = TOOLS / "middleware"
CONTROL = TOOLS / "control.py"


@pytest.mark.parametrize("tool", ["unlock", "unlock_sync"])
async def test_tool_list_control_works_under_middleware(tool: str) -> None:
    async with mcp_session("run", str(MIDDLEWARE / "mw.py"), str(CONTROL)) as session:
        with anyio.fail_after(20):  # it hung forever: the control request was never answered
            result = await session.call_tool(tool, {})
        assert not result.is_error and "secret" in text_of(result)
        assert "secret" in {t.name for t in (await session.list_tools()).tools}


LATE = """
import threading
from protomcp_sdk import tool, Context

gate = threading.Event()

@tool(hidden=True)
def admin() -> str:
    return "admin"

@tool(timeout=0.5)
def slow_login(ctx: Context) -> str:
    gate.wait(30)
    try:
        names = ctx.enable_tools(["admin"])
        print(f"late control applied: {names}")
    except Exception as exc:
        print(f"late control refused: {exc}")
    return "too late"

@tool
def open_gate() -> str:
    gate.set()
    return "open"
"""


@pytest.mark.parametrize("with_middleware", [False, True])
async def test_control_after_the_call_timed_out_changes_nothing(
    raw_host: Any, tmp_path: Path, with_middleware: bool
) -> None:
    file = tmp_path / "late.py"
    file.write_text(LATE)
    files = [str(MIDDLEWARE / "mw.py"), str(file)] if with_middleware else [str(file)]
    host = raw_host("run", *files)
    host.initialize()
    reply = host.request(1, "tools/call", {"name": "slow_login", "arguments": {}})
    assert reply["result"]["isError"] and "timed out after 0.5s" in reply["result"]["content"][0]["text"]
    host.request(2, "tools/call", {"name": "open_gate", "arguments": {}})
    stderr = host.wait_stderr("late control ")
    assert "late control refused: tool-list control works only during a tool call" in stderr
    names = {t["name"] for t in host.request(3, "tools/list")["result"]["tools"]}
    assert "admin" not in names


SLOW = """
import threading
from protomcp_sdk import tool

gate = threading.Event()

@tool
def slow(x: int) -> int:
    print(f"started {x}", flush=True)
    gate.wait(30)
    return x

@tool
def release() -> str:
    gate.set()
    return "released"
"""

PASS_THROUGH = """
from protomcp_sdk import middleware, tool

@middleware
async def audit{n}(call, call_next):
    return await call_next(call)

@tool
def mw_v{n}() -> int:
    return {n}
"""


async def test_saving_the_middleware_file_mid_call_loses_no_call(tmp_path: Path) -> None:
    tools, mw = tmp_path / "slow.py", tmp_path / "mw.py"
    tools.write_text(SLOW)
    write_atomic(mw, PASS_THROUGH.format(n=1))
    watcher = Watcher()
    async with (
        mcp_session(
            "dev", str(mw), str(tools), logging_callback=watcher.on_log, message_handler=watcher.on_message
        ) as session,
        anyio.create_task_group() as tg,
    ):
        results: list[Any] = []

        async def call(x: int) -> None:
            results.append(await session.call_tool("slow", {"x": x}))

        for x in range(5):
            tg.start_soon(call, x)
        # Every call is inside the middleware (waiting in call_next) when the file is saved.
        for x in range(5):
            await watcher.wait_log(lambda p, x=x: p.data == f"started {x}", timeout=20)
        write_atomic(mw, PASS_THROUGH.format(n=2))
        await watcher.tools_after_change(session, lambda t: "mw_v2" in t, timeout=40)
        await session.call_tool("release", {})
    assert sorted(text_of(r) for r in results) == ["0", "1", "2", "3", "4"]
    assert not any(r.is_error for r in results)


async def test_flipping_hidden_in_dev_sends_list_changed(tmp_path: Path) -> None:
    file = tmp_path / "tools.py"
    source = "from protomcp_sdk import tool\n\n@tool(hidden={hidden})\ndef maybe() -> int:\n    return 1\n"
    write_atomic(file, source.format(hidden=False))
    watcher = Watcher()
    async with mcp_session("dev", str(file), message_handler=watcher.on_message) as session:
        assert [t.name for t in (await session.list_tools()).tools] == ["maybe"]
        write_atomic(file, source.format(hidden=True))
        await watcher.tools_after_change(session, lambda t: t == {})
        write_atomic(file, source.format(hidden=False))
        await watcher.tools_after_change(session, lambda t: set(t) == {"maybe"})


def test_a_failing_frame_handler_answers_the_request() -> None:
    """A handler that raises costs that frame only: the request it carried gets an error."""
    import asyncio

    from protomcp_host.processes.channel import Channel
    from protomcp_sdk import wire
    from protomcp_sdk.wire import envelope_pb2 as pb

    problems: list[str] = []

    class Events:
        def problem(self, message: str) -> None:
            problems.append(message)

    class Leg:
        live = True

        def sent(self, channel: object, request_id: str) -> None:
            self.request_id = request_id

        def control(self, envelope: object) -> list[str]:
            raise KeyError("boom")

    async def scenario() -> list[pb.Envelope]:
        read_end, write_end = os.pipe()
        channel = Channel("t.py", write_end, Events())  # type: ignore[arg-type]
        leg = Leg()
        channel.start(pb.Envelope(call_tool=pb.CallToolRequest(name="t")), leg)  # type: ignore[arg-type]
        control = pb.Envelope(request_id="c1", call_id=leg.request_id, enable_tools=pb.EnableToolsRequest())
        channel.feed(wire.encode(control))
        os.set_blocking(read_end, False)
        data = b""
        for _ in range(100):  # the batched writer flushes on a later loop turn; never block here
            await asyncio.sleep(0)
            try:
                data = os.read(read_end, 65536)
                break
            except BlockingIOError:
                continue
        channel.close()
        os.close(read_end)
        return list(wire.FrameDecoder().feed(data))

    frames = asyncio.run(scenario())
    reply = next(f for f in frames if f.WhichOneof("msg") == "active_tools")
    assert reply.request_id == "c1" and "could not handle it" in reply.active_tools.error
    assert problems and "'enable_tools' frame" in problems[0]


def test_cancelling_a_call_releases_every_client_request(raw_host: Any) -> None:
    host = raw_host("run", str(TOOLS / "features" / "asking.py"))
    host.request(
        0,
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    )
    host.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    host.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask_twice"}})
    asked = [host.recv()["id"], host.recv()["id"]]  # two sampling/createMessage requests
    host.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    cancelled = [host.recv(), host.recv()]
    assert sorted(m["params"]["requestId"] for m in cancelled) == sorted(asked)
    assert all(m["method"] == "notifications/cancelled" for m in cancelled)
    assert host.request(2, "ping")["result"] == {}


def test_a_reload_lets_old_calls_run_as_long_as_the_call_timeout(tmp_path: Path) -> None:
    """A save must not kill a long call (a 40 s task) that its timeout still allows: the old
    process drains for the call timeout plus a margin, never less than 30 s."""
    from protomcp_host.app import Host
    from protomcp_host.settings import RunSettings

    file = tmp_path / "t.py"
    file.write_text("")
    drains = {
        timeout: next(
            iter(Host([file], RunSettings(call_timeout=timeout)).supervisors.values())
        ).settings.retire_timeout
        for timeout in (10.0, 300.0, 0.0)  # (0: no limit)
    }
    assert drains == {10.0: 30.0, 300.0: 305.0, 0.0: 3605.0}
