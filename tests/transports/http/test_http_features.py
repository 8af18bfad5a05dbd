"""Resources, prompts and requests to the client over Streamable HTTP, with the official client:
server→client requests and resource updates travel on the right streams."""

from __future__ import annotations

from typing import Any

import anyio
from mcp import types

from tests.support.hosts import TOOLS
from tests.support.http import http_session

ASKING = str(TOOLS / "features" / "asking.py")
CONTENT = str(TOOLS / "features" / "content.py")


def _text(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_sampling_elicitation_and_roots_over_http(http_host: Any) -> None:
    host = http_host("run", ASKING)

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        text = params.messages[0].content.text
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=f"re:{text}"), model="m"
        )

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"ok": True})

    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///r", name="R")])

    async with http_session(
        host.url, sampling_callback=sample, elicitation_callback=elicit, list_roots_callback=roots
    ) as session:
        with anyio.fail_after(30):
            assert _text(await session.call_tool("ask_async", {"question": "q"})).endswith("re:q")
            assert _text(await session.call_tool("ask_sync", {"question": "s"})) == "sync:re:s"
            assert _text(await session.call_tool("ask_confirm", {})) == "accept:Confirm(ok=True)"
            assert _text(await session.call_tool("roots", {})) == "file:///r=R"


async def test_resources_prompts_and_updates_over_http(http_host: Any) -> None:
    host = http_host("run", CONTENT)
    updated = anyio.Event()

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            updated.set()

    async with http_session(host.url, message_handler=on_message) as session:
        with anyio.fail_after(30):
            (content,) = (await session.read_resource("notes://1")).contents
            assert content.text == "# Note 1\nfirst note"
            assert (await session.get_prompt("simple")).messages[0].content.text == "Say hello."
            await session.subscribe_resource("test://counter")
            await session.call_tool("bump", {})
            await updated.wait()
