"""`_meta` and `icons` of @tool, @resource, @prompt and ToolResult(meta=...), through the real
host: listed and returned as the author set them, in both protocol eras (the official client)
and in proto-mcp; `pinned=True` also lists `anthropic/alwaysLoad`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from protomcp_sdk.protomcp_client import ProtoMcpClient
from tests.support.hosts import HOST

SOURCE = '''
from protomcp_sdk import ToolResult, ToolError, prompt, resource, tool

ICON = {"src": "https://example.com/sms.png", "mimeType": "image/png", "sizes": ["48x48"]}


@tool(meta={"anthropic/searchHint": "send sms text"}, icons=[ICON])
def sms(to: str) -> ToolResult:
    """Send a text."""
    return ToolResult("sent", meta={"claude/endTurn": True})


@tool(pinned=True)
def help_me() -> str:
    """How to use these tools."""
    return "ask"


@tool("refuse")
def refusing() -> str:
    raise ToolError("no", code="nope")


@tool
def plain() -> str:
    return "plain"


@resource("config://app", meta={"owner": "ops"}, icons=[{"src": "data:image/svg+xml;base64,PHN2Zy8+"}])
def config() -> str:
    return "debug=false"


@prompt(meta={"kind": "review"}, icons=[ICON])
def review(path: str) -> str:
    return f"Please review {path}."
'''

ICON = {"src": "https://example.com/sms.png", "mimeType": "image/png", "sizes": ["48x48"]}


@pytest.fixture
def tool_file(tmp_path: Path) -> Path:
    path = tmp_path / "meta_tools.py"
    path.write_text(SOURCE)
    return path


def _client(tool_file: Path, mode: str) -> Any:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=HOST[0], args=[*HOST[1:], "run", str(tool_file)], env=dict(os.environ)
    )
    return Client(params, mode=mode, cache=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_meta_and_icons_in_both_eras(tool_file: Path, mode: str) -> None:
    async with _client(tool_file, mode) as client:
        era = "2025-11-25" if mode == "legacy" else "2026-07-28"
        assert client.session.protocol_version == era
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["sms"].meta == {"anthropic/searchHint": "send sms text"}
        assert [icon.model_dump(exclude_none=True, by_alias=True) for icon in tools["sms"].icons] == [ICON]
        assert tools["help_me"].meta == {"anthropic/alwaysLoad": True}
        assert tools["plain"].meta is None and tools["plain"].icons is None
        assert "refuse" in tools  # @tool("refuse"): the positional name

        sent = await client.call_tool("sms", {"to": "+1"})
        assert [c.text for c in sent.content] == ["sent"]  # one block, not one per character
        assert (sent.meta or {}).get("claude/endTurn") is True
        refused = await client.call_tool("refuse", {})
        assert refused.is_error and refused.content[0].text == "no"
        assert (refused.meta or {})["protomcp/error"]["code"] == "nope"

        [listed] = (await client.list_resources()).resources
        assert listed.meta == {"owner": "ops"} and listed.icons[0].src.startswith("data:image/svg+xml")
        [shown] = (await client.list_prompts()).prompts
        assert shown.meta == {"kind": "review"} and shown.icons[0].src == ICON["src"]


async def test_meta_and_icons_in_proto_mcp(tool_file: Path) -> None:
    async with ProtoMcpClient.stdio([*HOST, "run", str(tool_file)]) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
        assert orjson.loads(tools["sms"].metadata["_meta"]) == {"anthropic/searchHint": "send sms text"}
        assert orjson.loads(tools["sms"].metadata["icons"]) == [ICON]
        assert orjson.loads(tools["help_me"].metadata["_meta"]) == {"anthropic/alwaysLoad": True}
        sent = await client.call_tool("sms", {"to": "+1"})
        assert sent.text == "sent" and orjson.loads(sent.metadata["_meta"]) == {"claude/endTurn": True}
        [listed] = await client.list_resources()
        assert orjson.loads(listed.metadata["_meta"]) == {"owner": "ops"}
        [shown] = await client.list_prompts()
        assert orjson.loads(shown.metadata["icons"]) == [ICON]


def test_a_results_meta_crosses_the_hosts_middleware_chain() -> None:
    """The host hands a result to middleware as JSON and takes back what they return."""
    from protomcp_host.calls.middleware import _answer_of, _result_json
    from protomcp_host.protocol.session import ToolAnswer

    answer = ToolAnswer([b'[{"type":"text","text":"sent"}]'], meta=b'{"claude/endTurn":true}')
    back = _answer_of(_result_json(answer))
    assert orjson.loads(back.meta) == {"claude/endTurn": True} and b"".join(back.content) == answer.content[0]


def test_an_upstream_tools_meta_and_icons_pass_through() -> None:
    from protomcp_host.calls.envelope import tool_from_definition
    from protomcp_host.upstream.offer import tool_definition

    upstream = {
        "name": "sms",
        "inputSchema": {"type": "object"},
        "_meta": {"anthropic/searchHint": "text"},
        "icons": [ICON],
    }
    mcp = tool_from_definition(tool_definition(upstream, "ex_", "ex"), "ex").mcp
    assert (
        mcp["name"] == "ex_sms"
        and mcp["_meta"] == {"anthropic/searchHint": "text"}
        and mcp["icons"] == [ICON]
    )
