"""End to end, through `protomcp run` with the official client: middleware in one plugin file
wrapping the tools of another, and middleware wrapping the tools of their own file (run by that
process around the tool, in the call's frame), with the same results, errors and guarantees."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.hosts import TOOLS, mcp_session, write_atomic

MIDDLEWARE = TOOLS / "middleware"

pytestmark = pytest.mark.anyio


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


# -- middleware in the tool's own file: run by its process around it, in the call's frame --

HERE = TOOLS / "middleware_here" / "here.py"
PLAIN = TOOLS / "middleware_here" / "plain.py"


async def test_rewrites_and_wraps_async_and_sync_tools_in_their_process() -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with mcp_session("run", str(HERE)) as session:
        result = await session.call_tool("shout", {"text": "hi"}, progress_callback=on_progress)
        assert (text(result), result.is_error) == ("HI[inner][outer]", False)
        assert progress == [1]  # the tool's progress still reaches the client
        # A sync tool still runs in a worker thread (a slow one blocks no other call).
        assert text(await session.call_tool("shout_sync", {"text": "hi"})) == "HI@protomcp-tool[inner][outer]"
        assert text(await session.call_tool("add", {"a": 2, "b": 3})) == "5"
        invalid = await session.call_tool("add", {"a": 13, "b": 1})
        assert invalid.is_error is True
        assert "Invalid arguments for tool 'add'" in text(invalid) and "thirteen" in text(invalid)


async def test_rejections_failures_and_answers_name_the_middleware() -> None:
    async with mcp_session("run", str(HERE)) as session:
        cases = {
            "reject_me": "Rejected by middleware 'outer' (here.py): not allowed today",
            "inner_rejects": "Rejected by middleware 'inner' (here.py): inner says no",
            "crash_mw": "Middleware 'outer' (here.py) failed: RuntimeError: middleware bug",
            "bad_return": "Middleware 'outer' (here.py) failed: TypeError: "
            "middleware 'outer' must return a ToolResult (or a str), not int",
        }
        for name, message in cases.items():
            result = await session.call_tool(name, {})
            assert (text(result), result.is_error) == (message, True)
        answered = await session.call_tool("short", {})
        assert (text(answered), answered.is_error) == ("answered by middleware", False)


async def test_the_tools_list_changes_stand_when_a_middleware_replaces_its_result() -> None:
    async with mcp_session("run", str(HERE)) as session:
        assert "add" in {tool.name for tool in (await session.list_tools()).tools}
        assert text(await session.call_tool("hide_add", {})) == "add is hidden[outer]"
        assert "add" not in {tool.name for tool in (await session.list_tools()).tools}


async def test_a_hanging_middleware_times_out_and_the_host_serves_on() -> None:
    async with mcp_session("run", "--call-timeout", "1", str(HERE)) as session:
        result = await session.call_tool("hang_mw", {})
        assert result.is_error is True
        assert text(result) == "Tool 'hang_mw' failed: timed out after 1s and was cancelled"
        assert text(await session.call_tool("shout", {"text": "still"})) == "STILL[inner][outer]"


async def test_another_files_tools_cross_to_the_middleware_process_once_per_phase() -> None:
    # outer, inner and passthrough are next to each other in the chain: one segment, one frame
    async with mcp_session("run", str(HERE), str(PLAIN)) as session:
        assert text(await session.call_tool("echo_plain", {"text": "hi"})) == "HI[inner][outer]"
        rejected = await session.call_tool("inner_rejects", {})
        assert text(rejected) == "Rejected by middleware 'inner' (here.py): inner says no"
        assert text(await session.call_tool("shout", {"text": "hi"})) == "HI[inner][outer]"


def test_a_call_cancelled_inside_middleware_here_gets_no_answer(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(HERE))
    host.initialize()
    host.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hang_mw"}})
    host.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow"}})
    host.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    host.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
    # The next answer is the ping's: the cancelled calls are never answered, and the host serves on.
    assert host.request(3, "ping") == {"jsonrpc": "2.0", "id": 3, "result": {}}
    reply = host.request(4, "tools/call", {"name": "shout", "arguments": {"text": "on"}})
    assert reply["result"]["content"] == [{"type": "text", "text": "ON[inner][outer]"}]


def test_a_files_middleware_next_to_each_other_run_as_one_and_the_tools_own_run_in_its_process() -> None:
    from protomcp_host.calls.execution import Dispatcher
    from protomcp_host.calls.middleware import Middleware

    dispatcher = Dispatcher({}, None)
    dispatcher.set_middleware(
        [
            Middleware("a", 1, "x.py", before_only=True, composes=True),
            Middleware("b", 2, "y.py", composes=True),
            Middleware("c", 3, "y.py", before_only=True, composes=True),
            Middleware("d", 4, "x.py", before_only=True, composes=True),
            Middleware("e", 5, "x.py", before_only=True, composes=True),
        ]
    )
    outer, here = dispatcher.plan("x.py")  # a tool of x.py: d and e run in its process
    segments = [(m.names, m.owner, m.before_only) for m in outer]
    assert segments == [(("a",), "x.py", True), (("b", "c"), "y.py", False)]
    assert here is not None and (here.names, here.before_only) == (("d", "e"), True)
    outer, here = dispatcher.plan("z.py")  # a tool of a file without middleware: three segments
    assert [m.names for m in outer] == [("a",), ("b", "c"), ("d", "e")] and here is None
    assert outer[1].stage == "middleware 'b', 'c' (y.py)" and str(outer[1]) == "middleware 'b' (y.py)"
    a = Middleware("a", 1, "x.py", composes=True)
    dispatcher.set_middleware([a])
    assert dispatcher.plan("x.py") == ([], a)  # the plans follow the chain


def test_middleware_of_a_process_that_does_not_compose_them_are_each_asked_alone() -> None:
    """Another SDK may not know `chain` or `CallToolRequest.middleware` (it would skip them):
    its middleware are asked one by one, tools of its own file included."""
    from protomcp_host.calls.execution import Dispatcher
    from protomcp_host.calls.middleware import Middleware

    dispatcher = Dispatcher({}, None)
    dispatcher.set_middleware([Middleware("a", 1, "go.py"), Middleware("b", 2, "go.py")])
    outer, here = dispatcher.plan("go.py")
    assert [m.names for m in outer] == [("a",), ("b",)] and here is None


BEFORE = TOOLS / "middleware_here" / "before.py"


async def test_before_only_middleware_here_rewrite_reject_and_suspend() -> None:
    async with mcp_session("run", "--call-timeout", "1", str(BEFORE)) as session:
        assert text(await session.call_tool("echo_sync", {"text": "a"})) == "[a]@protomcp-tool"
        assert text(await session.call_tool("echo_async", {"text": "a"})) == "[a]"
        assert text(await session.call_tool("waits", {"text": "a"})) == "[a+waited]"
        cases = {
            "blocked": "Rejected by middleware 'gate' (before.py): blocked here",
            "crash": "Middleware 'gate' (before.py) failed: RuntimeError: gate bug",
        }
        for name, message in cases.items():
            result = await session.call_tool(name, {})
            assert (text(result), result.is_error) == (message, True)
        invalid = await session.call_tool("count", {"n": 1})
        assert invalid.is_error is True and "Invalid arguments for tool 'count'" in text(invalid)
        hung = await session.call_tool("hangs", {})
        assert text(hung) == "Tool 'hangs' failed: timed out after 1s and was cancelled"
        assert text(await session.call_tool("echo_sync", {"text": "on"})) == "[on]@protomcp-tool"


def test_a_call_cancelled_in_suspended_before_only_middleware_gets_no_answer(raw_host) -> None:  # type: ignore[no-untyped-def]
    host = raw_host("run", str(BEFORE))
    host.initialize()
    host.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hangs"}})
    host.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    assert host.request(2, "ping") == {"jsonrpc": "2.0", "id": 2, "result": {}}
    reply = host.request(3, "tools/call", {"name": "echo_async", "arguments": {"text": "on"}})
    assert reply["result"]["content"] == [{"type": "text", "text": "[on]"}]


@pytest.mark.parametrize(("file", "letter"), [(HERE, "x"), (BEFORE, "y")])
async def test_a_20_mb_answer_through_its_files_middleware_arrives_whole(file: Path, letter: str) -> None:
    """Middleware that see the result (here.py) pass it on unchanged, before-only ones (before.py)
    never see it: either way the tool's own 20 MB answer goes out as it was made (spool or raw)."""
    size = 20 * 1024 * 1024
    async with mcp_session("run", str(file)) as session:
        result = await session.call_tool("big", {"n": size})
        assert result.is_error is False
        assert text(result) == letter * size


RELOADED = """
import threading
from pathlib import Path

from protomcp_sdk import Context, ToolResult, middleware, tool

RELEASE = Path(__file__).with_name("release")


@middleware(priority=1)
async def gate(call, call_next):
    call.arguments["text"] += "+gate"
    return await call_next(call)


@middleware(priority=2)
async def wrap(call, call_next):
    result = await call_next(call)
    return ToolResult(content=[block.text + "[VERSION]" for block in result.content])


@tool(description="VERSION")
def held(text: str, ctx: Context) -> str:
    ctx.info(f"started {text}")
    idle = threading.Event()
    while not RELEASE.exists():
        idle.wait(0.02)
    return text * 100_000
"""


async def test_calls_inside_middleware_of_their_own_file_survive_a_reload(tmp_path: Path) -> None:
    """Calls running in the old process (through its own middleware) when the file is saved
    finish there after the new process took over, each answer whole and from the old code."""
    file = tmp_path / "held.py"
    write_atomic(file, RELOADED.replace("VERSION", "v1"))
    swapped, all_started = anyio.Event(), anyio.Event()
    started: set[str] = set()

    async def on_message(message: Any) -> None:
        if type(getattr(message, "root", message)).__name__ == "ToolListChangedNotification":
            swapped.set()

    async def on_log(params: Any) -> None:
        if isinstance(params.data, str) and params.data.startswith("started "):
            started.add(params.data)
            if len(started) == 10:
                all_started.set()

    results: dict[int, str] = {}
    async with mcp_session("dev", str(file), message_handler=on_message, logging_callback=on_log) as session:
        await session.set_logging_level("info")
        async with anyio.create_task_group() as tg:

            async def call(i: int) -> None:
                result = await session.call_tool("held", {"text": f"{i:02d}"})
                assert not result.is_error, text(result)[:200]
                results[i] = text(result)

            for i in range(10):
                tg.start_soon(call, i)
            with anyio.fail_after(60):
                await all_started.wait()  # every call runs in the old process
                write_atomic(file, RELOADED.replace("VERSION", "v2"))
                await swapped.wait()  # the new process serves; the old one still runs the calls
                (tmp_path / "release").touch()
        assert sorted(results) == list(range(10))
        for i, answer in results.items():
            assert answer == f"{i:02d}+gate" * 100_000 + "[v1]", i
        after = await session.call_tool("held", {"text": "n"})
        assert text(after) == "n+gate" * 100_000 + "[v2]"
