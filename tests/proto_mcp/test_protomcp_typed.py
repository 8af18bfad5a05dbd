"""Typed tools: a @tool whose parameter (and result) is a generated protobuf message class,
called by the official JSON-RPC client (JSON through the descriptor) and by a proto-mcp client
(the message goes to the tool process as it came, without JSON, unless a middleware needs the
arguments as JSON)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.protobuf import any_pb2

from protomcp_sdk.protomcp_client import ProtoMcpClient, ProtoMcpError
from tests.support.hosts import HOST, TOOLS, mcp_session

pytestmark = pytest.mark.anyio
TYPED = TOOLS / "typed" / "search_tools.py"
MIDDLEWARE = TOOLS / "matrix" / "mw.py"
UNKNOWN_FIELD = b"\xf8\x06\x07"  # field 111 (varint 7): a newer client's field this schema lacks


async def test_json_rpc_clients_call_typed_tools_with_json() -> None:
    async with mcp_session("run", str(TYPED)) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        schema = tools["web_search"].input_schema
        assert set(schema["properties"]) == {"query", "maxResults", "dateRange", "safety", "sites", "boosts"}
        assert schema["properties"]["safety"] == {
            "type": "string",
            "enum": ["SAFETY_UNSPECIFIED", "STRICT", "OFF"],
        }
        assert tools["web_search"].output_schema["properties"]["totalCount"] == {"type": "integer"}
        result = await session.call_tool(
            "web_search", {"query": "q", "sites": ["a.com", "b.org"], "maxResults": 1}
        )
        assert result.structured_content == {
            "results": [{"title": "q on a.com", "url": "https://a.com/"}],
            "totalCount": 2,
        }
        described = await session.call_tool(
            "describe_search",
            {
                "query": "q",
                "safety": "STRICT",
                "dateRange": {"start": "2026", "end": "2027"},
                "boosts": {"a": 2},
            },
        )
        assert described.content[0].text == "'q' STRICT 2026..2027 {'a': 2}"
        bad = await session.call_tool("web_search", {"query": "q", "maxResults": 2**40})
        assert bad.is_error and "out of range for int32" in bad.content[0].text


def _packed(client: ProtoMcpClient, name: str, **fields: Any) -> tuple[Any, any_pb2.Any]:
    cls = client.tools[name].request_class()
    message = cls(**fields)
    packed = any_pb2.Any()
    packed.Pack(message)
    return message, packed


@pytest.mark.parametrize("middleware", [False, True], ids=["direct", "through-middleware"])
async def test_proto_mcp_clients_send_the_message_itself(middleware: bool) -> None:
    files = [str(TYPED), *([str(MIDDLEWARE)] if middleware else [])]
    async with ProtoMcpClient.stdio([*HOST, "run", *files]) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
        search = tools["web_search"]
        assert (search.input_message, search.output_message) == (
            "acme.search.v1.WebSearchRequest",
            "acme.search.v1.WebSearchResponse",
        )
        assert [f.name for f in search.fds.file] == ["search.proto"]  # the tool's own file, as it is

        _, packed = _packed(client, "web_search", query="q", sites=["a.com", "b.org"])
        result = await client.call_tool("web_search", packed)
        assert type(result.data).DESCRIPTOR.full_name == "acme.search.v1.WebSearchResponse"
        assert [r.url for r in result.data.results] == ["https://a.com/", "https://b.org/"]
        assert result.structured["totalCount"] == 2

        Request = client.tools["describe_search"].request_class()
        text = await client.call_tool(
            "describe_search",
            Request(
                query="q", safety=Request.Safety.OFF, date_range={"start": "a", "end": "b"}, boosts={"x": 1}
            ),
        )
        assert text.text == "'q' OFF a..b {'x': 1}"

        # A field this schema does not know survives only when the message itself reaches the
        # function; through a middleware the arguments travel as JSON, which cannot carry it.
        _, packed = _packed(client, "wire_size", query="q")
        plain = packed.value
        packed.value = plain + UNKNOWN_FIELD
        size = (await client.call_tool("wire_size", packed)).structured["result"]
        assert size == len(plain) + (0 if middleware else len(UNKNOWN_FIELD))

        garbled = any_pb2.Any(type_url=packed.type_url, value=b"\xff\xff")
        if middleware:  # the host decodes it (for the middleware's JSON) and refuses it
            with pytest.raises(ProtoMcpError, match=r"not a acme\.search\.v1\.WebSearchRequest") as refusal:
                await client.call_tool("wire_size", garbled)
            assert refusal.value.code == -33001
        else:  # the tool's process parses it and refuses it, as the call's error result
            refused = await client.call_tool("wire_size", garbled)
            assert refused.is_error and "not a acme.search.v1.WebSearchRequest" in refused.text
        with pytest.raises(
            ProtoMcpError,
            match=r"expected an Any of type\.googleapis\.com/acme\.search\.v1\.WebSearchRequest",
        ):
            await client.call_tool("web_search", any_pb2.Any(type_url="type.googleapis.com/x.Y", value=b""))


def test_the_typed_example_proto_is_the_one_compiled() -> None:
    """search_pb2.py is generated from search.proto (regenerate it when the .proto changes)."""
    import subprocess
    import sys
    import tempfile

    folder = TYPED.parent
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", f"-I{folder}", f"--python_out={out}", "search.proto"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=folder,
        )
        assert done.returncode == 0, done.stderr
        assert (Path(out) / "search_pb2.py").read_text() == (folder / "search_pb2.py").read_text()
