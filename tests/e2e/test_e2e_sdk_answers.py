"""Every request to a tool process gets exactly one answer, soon (issue 13, SDK side), end to end
through the real host with the official client: quick calls never wait behind a slow sync call,
a BaseException or a tool's own CancelledError is answered at once, large answers survive a
reload, and hostile resource URIs are refused without blocking anyone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.hosts import mcp_session, write_atomic

pytestmark = pytest.mark.anyio

ANSWER_SOON = 20  # seconds: far below the host's 300 s call timeout the bugs fell back on


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


SLOW_AND_QUICK = """
import threading

from protomcp_sdk import tool

RELEASE = threading.Event()


@tool
def slow() -> str:
    RELEASE.wait(60)
    return "slow"


@tool
def quick_sync() -> str:
    return "quick"


@tool
async def quick_async() -> str:
    return "quick"


@tool
async def release() -> str:
    RELEASE.set()
    return "released"
"""


@pytest.mark.parametrize("quick", ["quick_sync", "quick_async"])
async def test_a_quick_call_never_waits_behind_a_slow_sync_call(tmp_path: Path, quick: str) -> None:
    file = tmp_path / "tools.py"
    write_atomic(file, SLOW_AND_QUICK)
    async with mcp_session("run", str(file)) as session:
        for _ in range(3):  # leave idle call threads behind, the case that used to wait
            assert text_of(await session.call_tool("quick_sync", {})) == "quick"
        slow_result: list[Any] = []
        async with anyio.create_task_group() as tg:

            async def call_slow() -> None:
                slow_result.append(await session.call_tool("slow", {}))

            tg.start_soon(call_slow)
            with anyio.fail_after(ANSWER_SOON):  # before the fix: only once `slow` returned
                assert text_of(await session.call_tool(quick, {})) == "quick"
            assert text_of(await session.call_tool("release", {})) == "released"
        assert text_of(slow_result[0]) == "slow"


RAISING = """
import asyncio

from protomcp_sdk import completion, middleware, prompt, resource, tool


class Boom(BaseException):
    pass


@resource("test://exit")
def exits() -> str:
    raise SystemExit(3)


@resource("test://base")
def base() -> str:
    raise Boom("resource")


@resource("test://cancelled")
async def cancelled_read() -> str:
    raise asyncio.CancelledError()


@prompt
def leave(topic: str) -> str:
    raise SystemExit("prompt")


@completion(prompt="leave", argument="topic")
def complete_topic(value: str) -> list[str]:
    raise Boom("completion")


@tool
async def cancels_itself() -> str:
    raise asyncio.CancelledError()


@tool
def exits_tool() -> str:
    raise SystemExit(1)


@tool
async def echo(how: str = "") -> str:
    return "echo " + how


@middleware
async def guard(call, call_next):
    how = call.arguments.get("how")
    if how == "base":
        raise Boom("middleware")
    if how == "cancel":
        raise asyncio.CancelledError()
    return await call_next(call)
"""


async def test_base_exceptions_and_own_cancellation_are_answered_at_once(tmp_path: Path) -> None:
    from mcp.shared.exceptions import MCPError as McpError
    from mcp.types import PromptReference

    file = tmp_path / "tools.py"
    write_atomic(file, RAISING)
    async with mcp_session("run", str(file)) as session:
        with anyio.fail_after(ANSWER_SOON):
            for uri, kind in (
                ("test://exit", "SystemExit"),
                ("test://base", "Boom"),
                ("test://cancelled", "CancelledError"),
            ):
                with pytest.raises(McpError) as read_error:
                    await session.read_resource(uri)  # type: ignore[arg-type]
                assert kind in str(read_error.value)
            with pytest.raises(McpError) as prompt_error:
                await session.get_prompt("leave", {"topic": "x"})
            assert "SystemExit" in str(prompt_error.value)
            completed = await session.complete(
                PromptReference(type="ref/prompt", name="leave"), {"name": "topic", "value": "a"}
            )
            assert completed.completion.values == []

            own = await session.call_tool("cancels_itself", {})
            assert own.is_error and "CancelledError" in text_of(own)
            exited = await session.call_tool("exits_tool", {})
            assert exited.is_error and "SystemExit" in text_of(exited)

            for how, kind in (("base", "Boom: middleware"), ("cancel", "CancelledError")):
                result = await session.call_tool("echo", {"how": how})
                assert result.is_error and kind in text_of(result), text_of(result)
            assert text_of(await session.call_tool("echo", {"how": "ok"})) == "echo ok"


BIG_V1 = """
import pathlib
import threading

from protomcp_sdk import Context, tool

RELEASE = pathlib.Path(__file__).with_name("release")
SIZE = 300 * 1024


def _wait_for_release() -> None:
    idle = threading.Event()
    for _ in range(3000):  # at most 60 s
        if RELEASE.exists():
            return
        idle.wait(0.02)


def _answer(i: int, ctx: Context) -> str:
    ctx.info(f"started {i}")
    _wait_for_release()
    return (f"{i:03d}" * (SIZE // 3 + 1))[:SIZE]


@tool(description="Version 1.")
def big_a(i: int, ctx: Context) -> str:
    return _answer(i, ctx)


@tool
def big_b(i: int, ctx: Context) -> str:
    return _answer(i, ctx)
"""


@pytest.mark.parametrize("spool", ["memory file", "inline"])
async def test_large_sync_answers_in_flight_survive_a_reload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spool: str
) -> None:
    """50 calls of 300 KB each, all running in the old tool process when the file is saved;
    they finish after the host swapped processes and closed the old one's input, and every
    answer arrives whole (43/50 did: the calls reported done before their answers were
    written, so the process exited or removed its spool folder first)."""
    root = tmp_path / "spool"
    root.mkdir()
    monkeypatch.setenv("PROTOMCP_SPOOL_DIR", str(root) if spool == "memory file" else "")
    file = tmp_path / "big.py"
    write_atomic(file, BIG_V1)
    started: set[str] = set()
    all_started = anyio.Event()

    async def on_log(params: Any) -> None:
        if isinstance(params.data, str) and params.data.startswith("started "):
            started.add(params.data)
            if len(started) == 50:
                all_started.set()

    swapped = anyio.Event()

    async def on_message(message: Any) -> None:
        if type(getattr(message, "root", message)).__name__ == "ToolListChangedNotification":
            swapped.set()

    results: dict[int, str] = {}
    async with mcp_session("dev", str(file), logging_callback=on_log, message_handler=on_message) as session:
        await session.set_logging_level("info")
        async with anyio.create_task_group() as tg:

            async def call(i: int) -> None:
                result = await session.call_tool("big_a" if i % 2 else "big_b", {"i": i})
                assert not result.is_error, text_of(result)[:200]
                results[i] = text_of(result)

            for i in range(50):
                tg.start_soon(call, i)
            with anyio.fail_after(60):
                await all_started.wait()
                write_atomic(file, BIG_V1.replace("Version 1.", "Version 2."))
                await swapped.wait()  # the new process serves; the old one's input is closed
                (tmp_path / "release").touch()
        assert sorted(results) == list(range(50))
        for i, answer in results.items():
            assert len(answer) == 300 * 1024 and answer.startswith(f"{i:03d}{i:03d}"), i


TEMPLATES = """
from protomcp_sdk import resource

READ: list[str] = []


@resource("files://{+a}/{+b}/{+c}/end")
def three(a: str, b: str, c: str) -> str:
    return f"{a}|{b}|{c}"


@resource("notes://{id}")
def note(id: str) -> str:
    READ.append(id)
    return "note " + id


@resource("test://read")
def read() -> str:
    return ",".join(READ)
"""


async def test_hostile_resource_uris_are_refused_without_blocking(tmp_path: Path) -> None:
    from mcp.shared.exceptions import MCPError as McpError

    file = tmp_path / "templates.py"
    write_atomic(file, TEMPLATES)
    async with mcp_session("run", str(file)) as session:
        with anyio.fail_after(ANSWER_SOON):  # 6 KB took 75 s of the host's event loop before
            for uri in (
                "files://" + "a/" * 3000 + "x",
                "notes://..%2F..%2Fetc%2Fpasswd",
                "notes://%2e%2e",
                "notes://a%00b",
            ):
                with pytest.raises(McpError):
                    await session.read_resource(uri)  # type: ignore[arg-type]
            found = await session.read_resource("files://1/2/3/4/end")  # type: ignore[arg-type]
            assert found.contents[0].text == "1|2|3/4"  # type: ignore[union-attr]
            assert (await session.read_resource("notes://ok")).contents[0].text == "note ok"  # type: ignore
            # the function never saw a hostile value
            assert (await session.read_resource("test://read")).contents[0].text == "ok"  # type: ignore
