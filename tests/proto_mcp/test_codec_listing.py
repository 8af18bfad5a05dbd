"""The codec's tools listing with inline schemas, spliced from each tool's serialized set: the
same message as setting every inline_schema and serializing the whole, cursor and ids too."""

from __future__ import annotations

import orjson
import pytest

from protomcp_host.proto_mcp.codec import Descriptors, Pending, ProtoMcp, frame, is_notice
from protomcp_host.protocol.catalog import Catalog, Tool
from protomcp_sdk.wire import proto_mcp_pb2 as pm

pytestmark = pytest.mark.fast


def _codec(count: int) -> tuple[ProtoMcp, Descriptors, list[dict[str, object]]]:
    catalog = Catalog()
    shown = []
    for i in range(count):
        mcp = {
            "name": f"tool_{i}",
            "title": f"Tool {i}",
            "description": f"adds {i}",
            "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}},
            "outputSchema": {"type": "object", "properties": {"result": {"type": "integer"}}},
        }
        shown.append(mcp)
    catalog.replace("file.py", [Tool(str(mcp["name"]), "file.py", mcp) for mcp in shown])
    descriptors = Descriptors(catalog)
    return ProtoMcp(descriptors), descriptors, shown


@pytest.mark.parametrize(("id_", "cursor"), [(7, ""), (300, "next-page"), (2**40, "c")])
def test_a_spliced_listing_is_the_message_it_stands_for(id_: int, cursor: str) -> None:
    proto, descriptors, shown = _codec(3)
    proto.pending[id_] = Pending("list_tools_request")
    result = {"tools": shown, **({"nextCursor": cursor} if cursor else {})}
    sent = proto.sent(orjson.dumps({"jsonrpc": "2.0", "id": id_, "result": result}))
    assert isinstance(sent, bytes) and not is_notice(sent)
    want = pm.MCPMessage(id=id_, list_tools_response=pm.ListToolsResponse(next_cursor=cursor))
    for mcp in shown:
        described = descriptors.of(str(mcp["name"]))
        assert described is not None
        tool = want.list_tools_response.tools.add(
            name=described.tool.name, description=str(mcp["description"])
        )
        tool.input_message, tool.output_message = described.input_message, described.output_message
        tool.inline_schema.CopyFrom(described.fds)
        tool.metadata["title"] = orjson.dumps(mcp["title"]).decode()
    assert pm.MCPMessage.FromString(sent) == want
    assert frame(sent) == len(sent).to_bytes(4, "big") + sent


def test_a_listing_by_reference_stays_a_message() -> None:
    proto, _, shown = _codec(2)
    proto.pending[5] = Pending("list_tools_request", refs=True)
    sent = proto.sent(orjson.dumps({"jsonrpc": "2.0", "id": 5, "result": {"tools": shown}}))
    assert isinstance(sent, pm.MCPMessage)
    assert [tool.bsr_ref.split(":")[0] for tool in sent.list_tools_response.tools] == [
        "protomcp/tool_0",
        "protomcp/tool_1",
    ]


def test_a_listing_of_simple_tools_stays_small() -> None:
    """Each tool's set holds its own file alone: protomcp/options.proto, whose only use is the
    JSON Schema options, and descriptor.proto (~14 KB) behind it, stay out of every set."""
    count = 100
    proto, descriptors, shown = _codec(count)
    proto.pending[1] = Pending("list_tools_request")
    sent = proto.sent(orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": shown}}))
    assert isinstance(sent, bytes)
    bare = 0  # the same listing with each tool's own file only
    for mcp in shown:
        described = descriptors.of(str(mcp["name"]))
        assert described is not None
        assert [file.name for file in described.fds.file] == [f"protomcp/tools/{mcp['name']}.proto"]
        bare += described.fds.file[0].ByteSize()
    assert len(sent) < 1024 * count
    assert len(sent) < bare + 300 * count  # names, descriptions, message names: no imported file
