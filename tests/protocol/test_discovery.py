"""`--discovery search`, sans-IO: BM25 ranking (protocol/ranking.py) and the meta-tools a session
serves instead of the catalogue (protocol/discovery.py)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from protomcp_host.calls.envelope import tool_from_definition
from protomcp_host.protocol.catalog import Catalog
from protomcp_host.protocol.discovery import META_NAMES, Discovery, signature, summary
from protomcp_host.protocol.modern import ModernShared
from protomcp_host.protocol.ranking import Bm25Index, index_tools, stem, words
from protomcp_host.protocol.request_meta import CLIENT_CAPABILITIES, PROTOCOL_VERSION
from protomcp_host.protocol.session import Call, Send, Session
from protomcp_host.protocol.visibility import ToolVisibility
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire.toollist import ToolListChange

pytestmark = pytest.mark.fast  # starts no process

INFO = {"name": "t", "version": "1"}


def tool(name: str, description: str, params: dict[str, Any], **flags: Any) -> Any:
    schema = {"type": "object", "properties": params, "required": list(params)[:1]}
    definition = pb.ToolDefinition(
        name=name, description=description, input_schema_json=orjson.dumps(schema).decode(), **flags
    )
    return tool_from_definition(definition, "a.py")


TOOLS = [
    tool("slack_send_message", "Send a message to a Slack channel.", {"channel": {"type": "string"}}),
    tool("github_open_pull_request", "Open a pull request on GitHub.", {"repo": {"type": "string"}}),
    tool("weather", "Get the forecast for a city.", {"city": {"type": "string"}, "days": {"type": "number"}}),
    tool("admin_secret_message", "Send a secret admin message.", {"x": {"type": "string"}}, hidden=True),
    tool("help_me", "How this server works.", {}, pinned=True),
]


def make(catalog: Catalog | None = None, version: str = "2025-11-25") -> Session:
    if catalog is None:
        catalog = Catalog()
        catalog.replace("a.py", TOOLS)
    session = Session(catalog, INFO)
    Discovery(catalog).attach(session)
    session.receive(rpc("initialize", {"protocolVersion": version, "capabilities": {}, "clientInfo": {}}, 0))
    session.receive(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    return session


def rpc(method: str, params: dict[str, Any], id_: int = 1) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})


def answer(session: Session, name: str, arguments: Any, **extra: Any) -> dict[str, Any]:
    (event,) = session.receive(rpc("tools/call", {"name": name, "arguments": arguments, **extra}))
    assert isinstance(event, Send)
    return orjson.loads(event.data)


def text(reply: dict[str, Any]) -> str:
    return reply["result"]["content"][0]["text"]


def listed(session: Session) -> list[str]:
    (event,) = session.receive(rpc("tools/list", {}))
    return [t["name"] for t in orjson.loads(event.data)["result"]["tools"]]


# -- ranking ---------------------------------------------------------------------------------
def test_words_split_case_and_separators_and_cut_endings() -> None:
    assert words("sendMessages to the #general-channel") == ["send", "message", "general", "channel"]
    assert words("HTTPServer listing") == ["http", "server", "list"]
    assert stem("policies") == "policy" and stem("status") == "status" and stem("class") == "class"


def test_bm25_prefers_rare_terms_and_shorter_documents() -> None:
    index = Bm25Index([("a", ["send", "mail"]), ("b", ["send", "mail", "x", "y", "z", "w"]), ("c", ["send"])])
    hits = index.search("send mail", 3)
    assert [h.name for h in hits] == ["a", "b", "c"]
    assert hits[0].score > hits[1].score > hits[2].score > 0
    assert index.search("nothing here", 3) == []
    assert [h.name for h in index.search("send mail", 3, allowed=lambda n: n != "a")] == ["b", "c"]


def test_names_and_parameter_names_are_indexed() -> None:
    index = index_tools([t.mcp for t in TOOLS])
    assert index.search("pull request", 1)[0].name == "github_open_pull_request"
    assert index.search("days", 1)[0].name == "weather"  # a parameter name


def test_signature_line() -> None:
    mcp = {
        "name": "f",
        "description": "Does f. More text here.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "b": {"type": "integer", "default": 3},
                "c": {"enum": ["x", "y"]},
                "d": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            },
            "required": ["a"],
        },
    }
    assert signature(mcp) == 'f(a: string, b?: integer = 3, c?: "x"|"y", d?: string|null) — Does f.'
    assert summary("x" * 300).endswith("…") and len(summary("x" * 300)) == 160


# -- the meta-tools ----------------------------------------------------------------------------
def test_tools_list_shows_meta_tools_and_pinned_ones_only() -> None:
    assert listed(make()) == ["find_tools", "get_tool_schema", "call_tool", "help_me"]


@pytest.mark.parametrize(
    ("version", "shown"), [("2025-03-26", False), ("2025-06-18", True), ("2025-11-25", True)]
)
def test_meta_tools_ask_claude_code_to_load_them_up_front(version: str, shown: bool) -> None:
    """Claude Code defers MCP tools behind its own tool search unless `anthropic/alwaysLoad`."""
    (event,) = make(version=version).receive(rpc("tools/list", {}))
    tools = {t["name"]: t for t in orjson.loads(event.data)["result"]["tools"]}
    for name in META_NAMES:
        assert tools[name].get("_meta") == ({"anthropic/alwaysLoad": True} if shown else None)


def test_find_ranks_and_never_finds_a_hidden_tool() -> None:
    session = make()
    found = text(answer(session, "find_tools", {"query": "send a message"}))
    assert "1. slack_send_message(channel: string) — Send a message" in found
    assert "admin_secret_message" not in found
    session.tool_list.update(ToolListChange(enable=["admin_secret_message"]))
    assert "admin_secret_message" in text(answer(session, "find_tools", {"query": "secret message"}))


def test_disabled_and_blocked_tools_are_neither_found_described_nor_called() -> None:
    session = make()
    session.tool_list.update(ToolListChange(block=["slack_send_message"]))
    assert "slack_send_message" not in text(answer(session, "find_tools", {"query": "slack message"}))
    for name, arguments in (
        ("get_tool_schema", {"name": "slack_send_message"}),
        ("call_tool", {"name": "slack_send_message", "arguments": {"channel": "c"}}),
        ("call_tool", {"name": "admin_secret_message", "arguments": {}}),
    ):
        reply = answer(session, name, arguments)
        assert reply["result"]["isError"] and "Unknown tool" in text(reply)


def test_call_tool_is_the_direct_call_with_the_same_id_and_progress_token() -> None:
    session = make()
    (event,) = session.receive(
        rpc(
            "tools/call",
            {
                "name": "call_tool",
                "arguments": {"name": "weather", "arguments": {"city": "Oslo"}},
                "_meta": {"progressToken": "p1"},
            },
            id_=7,
        )
    )
    assert isinstance(event, Call)
    assert (event.id, event.tool.name, event.arguments, event.progress_token) == (
        b"7",
        "weather",
        {"city": "Oslo"},
        "p1",
    )
    assert session.in_flight[b"7"] is event  # notifications/cancelled for id 7 reaches it


def test_get_tool_schema_gives_the_mcp_object() -> None:
    schema = orjson.loads(text(answer(make(), "get_tool_schema", {"name": "weather"})))
    assert schema["name"] == "weather" and schema["inputSchema"]["properties"]["days"] == {"type": "number"}


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("find_tools", {}, 'find_tools needs "query"'),
        ("find_tools", {"query": "   "}, 'find_tools needs "query"'),
        ("find_tools", {"query": "x", "limit": 0}, '"limit" must be a whole number'),
        ("find_tools", {"query": "x" * 1001}, "longer than 1000"),
        ("find_tools", [1], "arguments must be an object"),
        ("get_tool_schema", {}, 'get_tool_schema needs "name"'),
        ("get_tool_schema", {"name": "nope"}, "Unknown tool 'nope'"),
        ("call_tool", {}, 'call_tool needs "name"'),
        ("call_tool", {"name": "nope"}, "Unknown tool 'nope': use find_tools"),
        ("call_tool", {"name": "find_tools"}, "Unknown tool 'find_tools'"),
        ("call_tool", {"name": "weather", "arguments": [1]}, "must be an object"),
        ("call_tool", {"name": "weather", "arguments": {"city": 3}}, "Invalid arguments for tool 'weather'"),
    ],
)
def test_bad_input_is_a_readable_error_result(name: str, arguments: Any, says: str) -> None:
    reply = answer(make(), name, arguments)
    assert reply["result"]["isError"] is True and says in text(reply)


def test_no_match_is_not_an_error() -> None:
    reply = answer(make(), "find_tools", {"query": "zzzz"})
    assert reply["result"]["isError"] is False and "No tool matches" in text(reply)


def test_a_listed_cursor_is_refused() -> None:
    (event,) = make().receive(rpc("tools/list", {"cursor": "abc"}))
    assert orjson.loads(event.data)["error"]["code"] == -32602


def test_list_changed_only_when_the_listed_tools_change() -> None:
    session = make()
    session.tool_list.update(ToolListChange(enable=["admin_secret_message"]))  # findable now, not listed
    assert session.tool_list.flush() == []
    session.tool_list.update(ToolListChange(disable=["help_me"]))  # a pinned tool leaves the list
    assert len(session.tool_list.flush()) == 1
    assert listed(session) == sorted(META_NAMES, key=["find_tools", "get_tool_schema", "call_tool"].index)


def test_the_index_follows_the_catalog() -> None:
    catalog = Catalog()
    catalog.replace("a.py", TOOLS)
    session = make(catalog)
    catalog.replace("b.py", [tool("zebra_feed", "Feed the zebras.", {"kg": {"type": "number"}})])
    assert "zebra_feed" in text(answer(session, "find_tools", {"query": "zebra"}))


def test_two_principals_see_only_their_own_reveals() -> None:
    """Modern era: tool-list control is the principal's; one's enabled tool is not found by another."""
    catalog = Catalog()
    catalog.replace("a.py", TOOLS)
    discovery = Discovery(catalog)
    alice, bob = ToolVisibility(), ToolVisibility()
    sessions = []
    for visibility in (alice, bob):
        session = ModernShared(catalog, INFO, serve_modern=True).session(visibility=visibility)
        discovery.attach(session)
        sessions.append(session)
    sessions[0].tool_list.update(ToolListChange(enable=["admin_secret_message"]))
    meta = {PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {}}
    found = []
    for session in sessions:
        (event,) = session.receive(
            rpc("tools/call", {"name": "find_tools", "arguments": {"query": "secret"}, "_meta": meta})
        )
        found.append(orjson.loads(event.data)["result"]["content"][0]["text"])
    assert "admin_secret_message" in found[0] and "admin_secret_message" not in found[1]


def test_pinned_travels_from_the_sdk_to_the_catalog() -> None:
    import inspect

    from protomcp_sdk import tool as tool_decorator
    from protomcp_sdk.authoring.tools import ToolSpec

    def helper() -> str:
        """Help."""
        return "help"

    assert inspect.signature(tool_decorator).parameters["pinned"].default is False
    definition = ToolSpec.from_function(helper, pinned=True).definition()
    assert definition.pinned and tool_from_definition(definition, "a.py").pinned
    assert not tool_from_definition(ToolSpec.from_function(helper).definition(), "a.py").pinned


def test_an_apps_own_tool_is_not_the_models_to_find_describe_or_call() -> None:
    """MCP Apps: a tool whose visibility leaves out "model" is kept from the model by the
    client; under --discovery search the meta-tools act for the model, so they keep it too,
    while the app still calls it by name."""
    app_only = orjson.dumps({"ui": {"resourceUri": "ui://sales/chart", "visibility": ["app"]}}).decode()
    both = orjson.dumps({"ui": {"resourceUri": "ui://sales/chart"}}).decode()
    catalog = Catalog()
    catalog.replace(
        "a.py",
        [
            tool(
                "region_sales",
                "Sales of one region for the chart.",
                {"region": {"type": "string"}},
                meta_json=app_only,
            ),
            tool(
                "quarterly_sales",
                "Sales per quarter, as a chart.",
                {"quarter": {"type": "string"}},
                meta_json=both,
            ),
        ],
    )
    session = make(catalog)
    found = text(answer(session, "find_tools", {"query": "sales"}))
    assert "quarterly_sales" in found and "region_sales" not in found
    for name, arguments in (
        ("get_tool_schema", {"name": "region_sales"}),
        ("call_tool", {"name": "region_sales", "arguments": {"region": "north"}}),
    ):
        reply = answer(session, name, arguments)
        assert reply["result"]["isError"] and "Unknown tool" in text(reply)
    (event,) = session.receive(rpc("tools/call", {"name": "region_sales", "arguments": {"region": "north"}}))
    assert isinstance(event, Call) and event.tool.name == "region_sales"  # the app's direct call
