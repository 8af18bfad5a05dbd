"""End to end: the official MCP SDK client against `protomcp run` over stdio."""

from __future__ import annotations

import anyio
import pytest

from tests.support.hosts import BEHAVIOURS, mcp_session

pytestmark = pytest.mark.anyio

RUN = ("run", str(BEHAVIOURS))


def text_of(result: object) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")  # type: ignore[attr-defined]


async def test_initialize_and_list() -> None:
    async with mcp_session(*RUN) as session:
        assert session.server_info.name == "protomcp"
        assert session.protocol_version == "2025-11-25"
        caps = session.server_capabilities
        assert caps.tools is not None and caps.tools.list_changed is True
        assert caps.resources is not None and caps.resources.subscribe and caps.resources.list_changed
        assert caps.prompts is not None and caps.prompts.list_changed
        assert caps.completions is None  # declared only by a file that defines a completion
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert {"add", "echo", "wait_async", "point", "refuse"} <= set(tools)
        assert tools["add"].description == "Add two numbers."
        assert tools["add"].input_schema["required"] == ["a", "b"]


async def test_sync_and_async_calls_and_structured_output() -> None:
    async with mcp_session(*RUN) as session:
        result = await session.call_tool("add", {"a": 2, "b": 40})
        assert not result.is_error and text_of(result) == "42"
        assert result.structured_content == {"result": 42}
        result = await session.call_tool("point", {"x": 1, "y": 2})
        assert result.structured_content == {"x": 1, "y": 2}
        assert text_of(result) == '{"x":1,"y":2}'
        result = await session.call_tool("release", {"key": "nobody-waits"})
        assert text_of(result) == "ok"


@pytest.mark.parametrize("waiter", ["wait_async", "wait_sync"])
async def test_slow_call_does_not_delay_fast_one(waiter: str) -> None:
    """The waiting call finishes only after release: if calls were serialised this deadlocks."""
    order: list[str] = []
    async with mcp_session(*RUN) as session:

        async def slow() -> None:
            result = await session.call_tool(waiter, {"key": waiter})
            order.append(text_of(result))

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(slow)
                assert text_of(await session.call_tool("add", {"a": 1, "b": 1})) == "2"
                order.append("fast")
                await session.call_tool("release", {"key": waiter})
        assert order == ["fast", f"released {waiter}"]


async def test_unknown_tool_is_a_protocol_error() -> None:
    from mcp import MCPError

    async with mcp_session(*RUN) as session:
        with pytest.raises(MCPError) as info:
            await session.call_tool("no_such_tool", {})
        assert info.value.error.code == -32602
        assert "no_such_tool" in info.value.error.message
        assert text_of(await session.call_tool("echo", {"text": "still here"})) == "still here"


async def test_bad_arguments_name_the_field() -> None:
    async with mcp_session(*RUN) as session:
        result = await session.call_tool("add", {"a": 1, "b": "two"})
        assert result.is_error
        assert "b" in text_of(result) and "integer" in text_of(result)
        result = await session.call_tool("add", {"a": 1})
        assert result.is_error and "'b' is a required property" in text_of(result)


async def test_exception_and_tool_error_are_readable() -> None:
    async with mcp_session(*RUN) as session:
        result = await session.call_tool("fail", {"message": "disk on fire"})
        assert result.is_error
        assert "RuntimeError" in text_of(result) and "disk on fire" in text_of(result)
        result = await session.call_tool("refuse", {"item": "x"})
        assert result.is_error
        assert "no item named x" in text_of(result)
        assert "call list_items first" in text_of(result)


async def test_progress_and_log_messages_reach_the_client() -> None:
    logs: list[str] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_log(params: object) -> None:
        logs.append(params.data)  # type: ignore[attr-defined]

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async with mcp_session(*RUN, logging_callback=on_log) as session:
        result = await session.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
        assert text_of(result) == "done"
    assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert logs == ["step 1", "step 2", "step 3"]


async def test_print_in_a_tool_does_not_corrupt_the_session() -> None:
    async with mcp_session(*RUN) as session:
        assert text_of(await session.call_tool("chatty", {"lines": 200})) == "printed"
        assert text_of(await session.call_tool("add", {"a": 1, "b": 2})) == "3"


async def test_example_notes_file() -> None:
    """The realistic example works as documented: typed arguments, structured output, an
    async tool with progress and a log message, annotations, and a ToolError with a suggestion."""
    from tests.support.hosts import EXAMPLES

    progress: list[float] = []
    logs: list[str] = []

    async def on_log(params: object) -> None:
        logs.append(params.data)  # type: ignore[attr-defined]

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with mcp_session("run", str(EXAMPLES / "notes.py"), logging_callback=on_log) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert tools["delete_note"].annotations.destructive_hint is True
        assert tools["get_note"].annotations.read_only_hint is True
        assert tools["add_note"].input_schema["required"] == ["title"]
        added = await session.call_tool("add_note", {"title": "Milk", "priority": "high", "tags": ["shop"]})
        note = added.structured_content
        assert note["title"] == "Milk" and note["priority"] == "high" and note["tags"] == ["shop"]
        await session.call_tool("add_note", {"title": "Call Bob", "body": "about milk"})
        found = await session.call_tool("search_notes", {"query": "MILK"}, progress_callback=on_progress)
        assert [n["title"] for n in found.structured_content["result"]] == ["Milk", "Call Bob"]
        assert progress == [1, 2] and logs == ["2 of 2 notes match 'MILK'"]
        bad = await session.call_tool("add_note", {"title": "x", "priority": "urgent"})
        assert bad.is_error and "priority" in text_of(bad)
        missing = await session.call_tool("get_note", {"note_id": 99})
        assert missing.is_error and "no note with id 99" in text_of(missing)
        assert "list_notes" in text_of(missing)  # the suggestion


async def test_example_hello_file() -> None:
    from tests.support.hosts import EXAMPLES

    async with mcp_session("run", str(EXAMPLES / "hello.py")) as session:
        (hello,) = (await session.list_tools()).tools
        result = await session.call_tool(hello.name, {"name": "Ada"})
        assert not result.is_error and "Ada" in text_of(result)
