"""protomcp_sdk.testing answers a tool's requests to the client (sampling, elicitation, roots),
runs tasks, and RecordingContext pretends a session's tool list (issue 21, item 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from protomcp_sdk import ClientRequestError
from protomcp_sdk.testing import Client, RecordingContext, load_tool_module

ASKING = """
import asyncio
from dataclasses import dataclass

from protomcp_sdk import Context, tool


@dataclass
class Name:
    name: str


@tool
async def poem(topic: str, ctx: Context) -> str:
    answer = await ctx.sample(f"A poem about {topic}", max_tokens=50)
    return answer.text


@tool
def greet(ctx: Context) -> str:
    reply = ctx.elicit("Your name?", schema=Name)
    return f"hello {reply.data.name}" if reply.action == "accept" else reply.action


@tool
async def where(ctx: Context) -> list[str]:
    return [root.uri for root in await ctx.list_roots()]


@tool
async def caps(ctx: Context) -> list[str]:
    return sorted(ctx.client_capabilities)


@tool(task="optional")
async def long(n: int, ctx: Context) -> int:
    await ctx.report_progress(1, 2, "half way")
    await asyncio.sleep(0.05)
    return n * 2


@tool
async def admin(ctx: Context) -> list[str]:
    await ctx.disable_tools(["poem"])
    return await ctx.enable_tools(["secret"])


@tool(hidden=True)
def secret() -> str:
    return "s"


@tool
def admin_sync(ctx: Context) -> list[str]:
    ctx.set_allowed(["greet", "where"])
    return ctx.active_tools()
"""


@pytest.fixture
def asking(tmp_path: Path) -> Path:
    file = tmp_path / "asking.py"
    file.write_text(ASKING)
    return file


async def test_the_client_answers_sampling_elicitation_and_roots(asking: Path) -> None:
    async def model(params: dict) -> str:
        return "roses are red: " + params["messages"][0]["content"]["text"]

    async with Client(
        asking,
        sampling=model,
        elicitation={"name": "Ada"},
        roots=["file:///work", {"uri": "file:///tmp", "name": "t"}],
    ) as c:
        assert (await c.call("caps")).structured == {"result": ["elicitation", "roots", "sampling"]}
        assert (await c.call("poem", topic="tea")).text == "roses are red: A poem about tea"
        assert (await c.call("greet")).text == "hello Ada"
        assert (await c.call("where")).structured == {"result": ["file:///work", "file:///tmp"]}
        assert [method for method, _ in c.requests] == [
            "sampling/createMessage",
            "elicitation/create",
            "roots/list",
        ]
        c.set_roots(["file:///other"])
        assert (await c.call("where")).structured == {"result": ["file:///other"]}
        c.elicitation = "decline"
        assert (await c.call("greet")).text == "decline"


async def test_a_client_without_answers_declares_nothing(asking: Path) -> None:
    async with Client(asking) as c:
        assert (await c.call("caps")).structured == {"result": []}
        result = await c.call("poem", topic="tea")
        assert result.is_error and "does not support sampling" in result.text


async def test_an_answer_that_raises_is_the_clients_error(asking: Path) -> None:
    def broken(params: dict) -> str:
        raise ValueError("model offline")

    async with Client(asking, sampling=broken) as c:
        result = await c.call("poem", topic="tea")
        assert result.is_error and "model offline" in result.text


async def test_tasks(asking: Path) -> None:
    async with Client(asking) as c:
        task = await c.call_task("long", n=21)
        assert task["status"] in ("working", "completed")
        result = await c.task_result(task["taskId"])
        assert result.structured == {"result": 42}
        assert (await c.get_task(task["taskId"]))["status"] == "completed"
        assert [t["taskId"] for t in await c.list_tasks()] == [task["taskId"]]


async def test_recording_context_answers_requests() -> None:
    ctx = RecordingContext(sampling="fine", elicitation={"name": "Bo"}, roots=["file:///a"])
    file_tools = _asking_module()
    assert await file_tools.poem("tea", ctx) == "fine"
    assert file_tools.greet(ctx) == "hello Bo"  # a sync tool gets plain values, even in async tests
    assert await file_tools.where(ctx) == ["file:///a"]
    assert [kind for kind, _ in ctx.requests] == ["sample", "elicit", "roots"]
    assert ctx.requests[0][1]["maxTokens"] == 50
    with pytest.raises(ClientRequestError, match="does not support sampling"):
        await file_tools.poem("tea", RecordingContext())


async def test_recording_context_pretends_a_tool_list() -> None:
    file_tools = _asking_module()
    ctx = RecordingContext(tools=["poem", "greet", "where", "admin"], hidden=["secret"])
    assert await file_tools.admin(ctx) == ["greet", "where", "admin", "secret"]
    assert file_tools.admin_sync(ctx) == ["greet", "where"]
    assert [change.allow for change in ctx.tool_changes] == [None, None, ("greet", "where")]


def test_recording_context_in_sync_code() -> None:
    file_tools = _asking_module()
    ctx = RecordingContext(elicitation="cancel")
    assert file_tools.greet(ctx) == "cancel"


_MODULE: list[object] = []


def _asking_module():  # type: ignore[no-untyped-def]
    if not _MODULE:
        import tempfile

        folder = Path(tempfile.mkdtemp())
        (folder / "asking.py").write_text(ASKING)
        _MODULE.append(load_tool_module(folder / "asking.py"))
    return _MODULE[0]
