"""Resources, templates, prompts and completions end to end: the official client, the real
host, a real tool process (tests/tools/features/content.py)."""

from __future__ import annotations

import base64
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError as McpError
from mcp.types import PromptReference, ResourceTemplateReference

from tests.support.hosts import TOOLS, mcp_session

CONTENT = str(TOOLS / "features" / "content.py")
RUN = ("run", CONTENT)


async def test_static_resources_listed_and_read() -> None:
    async with mcp_session(*RUN) as session:
        listed = {r.uri: r for r in (await session.list_resources()).resources}
        assert str(listed["test://static-text"].uri) == "test://static-text"
        text = listed["test://static-text"]
        assert (text.name, text.title, text.description, text.mime_type) == (
            "static-text",
            "Static text",
            "A fixed text.",
            "text/plain",
        )
        assert listed["test://static-binary"].size == 70
        read = await session.read_resource("test://static-text")
        (content,) = read.contents
        assert content.text == "This is the content of the static text resource."
        assert content.mime_type == "text/plain" and str(content.uri) == "test://static-text"


async def test_binary_resource_is_base64() -> None:
    async with mcp_session(*RUN) as session:
        (content,) = (await session.read_resource("test://static-binary")).contents
        assert content.mime_type == "image/png"
        assert base64.b64decode(content.blob).startswith(b"\x89PNG")


async def test_large_binary_resource_travels_whole() -> None:
    async with mcp_session(*RUN) as session:
        (content,) = (await session.read_resource("test://big-binary")).contents
        data = base64.b64decode(content.blob)
        assert len(data) == 10 * 1024 * 1024
        assert data[:256] == bytes(range(256)) and data[-256:] == bytes(range(256))


async def test_several_contents_from_one_read() -> None:
    async with mcp_session(*RUN) as session:
        contents = (await session.read_resource("test://several")).contents
        assert contents[0].text == "one" and contents[0].mime_type == "text/plain"
        assert base64.b64decode(contents[1].blob) == b"\x00\x01"
        assert str(contents[2].uri) == "test://other" and contents[2].mime_type == "application/json"


async def test_templates_listed_and_read_with_converted_variables() -> None:
    async with mcp_session(*RUN) as session:
        templates = {t.uri_template: t for t in (await session.list_resource_templates()).resource_templates}
        assert templates["notes://{id}"].mime_type == "text/markdown"
        assert templates["notes://{id}"].description == "One note by number."
        assert "file:///{+path}" in templates
        (note,) = (await session.read_resource("notes://2")).contents
        assert note.text == "# Note 2\nsecond note" and str(note.uri) == "notes://2"
        (file,) = (await session.read_resource("file:///etc/a/b.txt")).contents
        assert file.text == "path=etc/a/b.txt"  # reserved expansion keeps the slashes


async def test_unknown_resource_is_32002_with_uri() -> None:
    async with mcp_session(*RUN) as session:
        for uri in ("test://nothing-here", "notes://9"):  # no match; a template's function says no
            with pytest.raises(McpError) as caught:
                await session.read_resource(uri)
            assert caught.value.error.code == -32002
            assert caught.value.error.data == {"uri": uri}
            assert uri in caught.value.error.message


async def test_bad_template_variable_and_failing_read() -> None:
    async with mcp_session(*RUN) as session:
        with pytest.raises(McpError) as caught:
            await session.read_resource("notes://abc")
        assert caught.value.error.code == -32602 and "id" in caught.value.error.message
        with pytest.raises(McpError) as caught:
            await session.read_resource("test://broken")
        assert caught.value.error.code == -32603 and "disk on fire" in caught.value.error.message


async def _wait_for(updates: list[str], count: int) -> None:
    with anyio.fail_after(10):
        while len(updates) < count:
            await anyio.sleep(0.01)


async def test_subscribe_update_unsubscribe() -> None:
    updates: list[str] = []

    async def on_message(message: object) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            updates.append(str(root.params.uri))

    async with mcp_session(*RUN, message_handler=on_message) as session:
        await session.subscribe_resource("test://counter")
        await session.call_tool("bump", {})
        await _wait_for(updates, 1)
        await session.call_tool("bump_from_thread", {})  # outside a call, from another thread
        await _wait_for(updates, 2)
        assert updates == ["test://counter", "test://counter"]
        assert (await session.read_resource("test://counter")).contents[0].text == "2"
        await session.unsubscribe_resource("test://counter")
        await session.call_tool("bump", {})
        await session.send_ping()  # the update would have been written before this answer
        assert (await session.read_resource("test://counter")).contents[0].text == "3"
        assert len(updates) == 2


async def test_prompts_listed_with_arguments() -> None:
    async with mcp_session(*RUN) as session:
        prompts = {p.name: p for p in (await session.list_prompts()).prompts}
        assert prompts["simple"].description == "A prompt without arguments."
        assert prompts["simple"].arguments == []
        greet = prompts["greet"]
        assert (greet.title, greet.description) == ("Greeting", "Greet someone.")
        arguments = {a.name: a for a in greet.arguments or []}
        assert arguments["name"].required is True and arguments["name"].description == "Who to greet"
        assert arguments["times"].required is False and arguments["style"].required is False


async def test_prompt_without_and_with_arguments() -> None:
    async with mcp_session(*RUN) as session:
        simple = await session.get_prompt("simple")
        (message,) = simple.messages
        assert message.role == "user" and message.content.text == "Say hello."
        greet = await session.get_prompt("greet", {"name": "Ada", "times": "3"})
        assert greet.description == "Greet someone."
        assert [(m.role, m.content.text) for m in greet.messages] == [
            ("user", "Greet Ada 3x (plain)"),
            ("assistant", "Will do."),
        ]


async def test_prompt_with_each_content_type() -> None:
    async with mcp_session(*RUN) as session:
        messages = (await session.get_prompt("media")).messages
        kinds = [m.content.type for m in messages]
        assert kinds == ["image", "audio", "resource_link", "resource"]
        assert base64.b64decode(messages[0].content.data).startswith(b"\x89PNG")
        assert messages[1].content.mime_type == "audio/wav"
        assert str(messages[2].content.uri) == "test://static-text"
        assert messages[3].content.resource.text == "embedded"


async def test_prompt_errors() -> None:
    async with mcp_session(*RUN) as session:
        with pytest.raises(McpError) as caught:
            await session.get_prompt("nope")
        assert caught.value.error.code == -32602 and "nope" in caught.value.error.message
        with pytest.raises(McpError) as caught:
            await session.get_prompt("greet", {"times": "2"})
        assert caught.value.error.code == -32602 and "name" in caught.value.error.message
        with pytest.raises(McpError) as caught:
            await session.get_prompt("greet", {"name": "x", "times": "many"})
        assert caught.value.error.code == -32602 and "times" in caught.value.error.message
        with pytest.raises(McpError) as caught:
            await session.get_prompt("failing")
        assert caught.value.error.code == -32603 and "no prompt today" in caught.value.error.message


async def test_completions_with_context_and_limit() -> None:
    async with mcp_session(*RUN) as session:
        assert session.server_capabilities.completions is not None
        ref = PromptReference(type="ref/prompt", name="greet")
        done = await session.complete(ref, {"name": "name", "value": "al"})
        assert done.completion.values == ["alice", "albert"]
        done = await session.complete(ref, {"name": "name", "value": ""}, {"style": "formal"})
        assert done.completion.values == ["Dr. Alice"]
        done = await session.complete(ref, {"name": "style", "value": ""})  # 150 suggestions
        assert len(done.completion.values) == 100
        assert done.completion.total == 150 and done.completion.has_more is True
        done = await session.complete(ref, {"name": "times", "value": ""})  # no completion function
        assert done.completion.values == []
        template = ResourceTemplateReference(type="ref/resource", uri="notes://{id}")
        done = await session.complete(template, {"name": "id", "value": "1"})
        assert done.completion.values == ["1"]
        with pytest.raises(McpError) as caught:
            await session.complete(
                PromptReference(type="ref/prompt", name="nope"), {"name": "x", "value": ""}
            )
        assert caught.value.error.code == -32602


async def test_a_read_fails_when_its_process_dies_and_the_file_is_served_again() -> None:
    async with mcp_session(*RUN) as session:
        with pytest.raises(McpError) as caught:
            await session.read_resource("test://die")
        assert caught.value.error.code == -32603 and "exit" in caught.value.error.message
        with anyio.fail_after(20):  # waits while the supervisor restarts the process
            read = await session.read_resource("test://static-text")
        assert read.contents[0].text.startswith("This is")


def test_a_cancelled_read_gets_no_answer(raw_host: Any) -> None:
    raw = raw_host(*RUN)
    raw.initialize("2025-11-25")
    raw.send({"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": "test://gated"}})
    raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}})
    # The tool process was told to stop the read: its task was cancelled, it never saw the gate.
    result = raw.request(6, "tools/call", {"name": "open_gate_async", "arguments": {}})["result"]
    assert result["content"][0]["text"] == "reads waiting: 0"
    assert raw.request(7, "ping")["result"] == {}  # and no answer to the read came before
