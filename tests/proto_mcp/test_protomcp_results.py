"""A typed tool's result on its way to a proto-mcp client: the message as its process
serialized it (no JSON in the tool process or the host) unless a middleware reads the result;
and every descriptor set the host sends is whole, as a client in another process with an empty
descriptor pool (and no protomcp) proves by building the messages from it alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2

from protomcp_sdk.protomcp_client import ProtoMcpClient
from protomcp_sdk.wire import proto_mcp_pb2 as pm
from protomcp_sdk.wire import protoschema
from tests.support.hosts import HOST, TOOLS, mcp_session

pytestmark = pytest.mark.anyio
TYPED = TOOLS / "typed"
REPORT = TYPED / "report_tools.py"  # make_report: imports struct.proto and timestamp.proto
ANNOTATED = TYPED / "report_annotated.py"  # a middleware of its own file reads the result
SEES_RESULTS = TYPED / "after_middleware.py"  # a middleware in another process reads it
PASSES_ON = TOOLS / "matrix" / "mw.py"  # a middleware that never sees results (before only)
SHAPES = TOOLS / "proto_shapes.py"  # JSON Schema tools: constraints in protomcp/options.proto options


async def _raw_call(client: ProtoMcpClient, name: str, **arguments: Any) -> pm.ToolResult:
    """The ToolResult as the host framed it (the client's own decoding left out)."""
    from google.protobuf import any_pb2

    info = client.tools[name]
    packed = any_pb2.Any()
    packed.Pack(info.request_class()(**arguments))
    request = pm.CallToolRequest(name=name, arguments=packed)
    answer = (await client.request(call_tool_request=request)).call_tool_response
    assert answer.WhichOneof("result") == "success", answer
    return answer.success


@pytest.mark.parametrize(
    ("files", "tool", "as_json", "title"),
    [
        ([REPORT], "make_report", False, "T"),
        ([REPORT, PASSES_ON], "make_report", False, "T"),
        ([REPORT, SEES_RESULTS], "make_report", True, "T (seen)"),
        ([ANNOTATED], "annotated_report", True, "T (annotated)"),
    ],
    ids=["alone", "before-only-middleware", "middleware-reads-results", "own-file-middleware-reads"],
)
async def test_a_typed_result_reaches_proto_mcp_clients_as_its_message(
    files: list[Path], tool: str, as_json: bool, title: str
) -> None:
    command = [*HOST, "run", *map(str, files)]
    async with ProtoMcpClient.stdio(command) as client:
        await client.list_tools()
        success = await _raw_call(client, tool, title="T", rows=3)
        kinds = [content.WhichOneof("content") for content in success.content]
        # Without JSON the result is the message alone; through a middleware that reads it, the
        # tool's JSON text block comes too (and the host turns its structuredContent into the message).
        assert kinds == (["text", "data"] if as_json else ["data"])
        data = success.content[-1].data
        assert data.type_url == "type.googleapis.com/acme.report.v1.Report"
        result = await client.call_tool(tool, {"title": "T", "rows": 3})
        assert result.data is not None and result.data.title == title
        assert [row.name for row in result.data.rows] == ["row 0", "row 1", "row 2"]
        assert result.structured["details"] == {"source": "test", "pages": 2.0}
        assert result.structured["made"] == "2023-11-14T22:13:20Z"

    async with mcp_session("run", *map(str, files)) as session:  # the same tool for JSON-RPC
        answer = await session.call_tool(tool, {"title": "T", "rows": 2})
        assert answer.structured_content == {
            "title": title,
            "rows": [{"id": 0, "name": "row 0", "score": 0.0}, {"id": 1, "name": "row 1", "score": 0.5}],
            "details": {"source": "test", "pages": 2.0},
            "made": "2023-11-14T22:13:20Z",
        }
        assert json.loads(answer.content[0].text)["made"] == "2023-11-14T22:13:20Z"


# A client in another language, as far as this test can tell: a python with google.protobuf
# alone (protomcp never imported), a fresh pool, the set and the result's bytes on stdin.
FRESH_CLIENT = r"""
import json, sys
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

for case in json.loads(sys.stdin.read()):
    fds = descriptor_pb2.FileDescriptorSet.FromString(bytes.fromhex(case["fds"]))
    pool = descriptor_pool.DescriptorPool()  # empty: not even google/protobuf's files
    for file in fds.file:  # in the set's order: each file after the files it imports
        pool.Add(file)
    names = [file.name for file in fds.file]
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(case["message"]))
    message = cls.FromString(bytes.fromhex(case["data"]))
    print(json.dumps({"files": names, "json": json_format.MessageToDict(message)}))
assert not [name for name in sys.modules if name.startswith("protomcp")]
"""


def _decode_elsewhere(cases: list[dict[str, str]]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-I", "-c", FRESH_CLIENT],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _case(fds: descriptor_pb2.FileDescriptorSet, message: str, data: bytes) -> dict[str, str]:
    return {"fds": fds.SerializeToString().hex(), "message": message, "data": data.hex()}


def _imports_come_first(fds: descriptor_pb2.FileDescriptorSet) -> None:
    seen: set[str] = set()
    for file in fds.file:
        assert set(file.dependency) <= seen, f"{file.name} comes before what it imports"
        seen.add(file.name)


async def test_every_schema_is_whole_for_a_client_with_an_empty_pool(tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    command = [*HOST, "run", "--schema-registry", str(registry), str(REPORT), str(SHAPES)]
    async with ProtoMcpClient.stdio(command) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}  # inline: no registry here
        report, models = tools["make_report"], tools["models"]
        for tool in tools.values():
            _imports_come_first(tool.fds)
        assert [file.name for file in report.fds.file] == [
            "google/protobuf/struct.proto",
            "google/protobuf/timestamp.proto",
            "report.proto",
        ]
        # options.proto (and descriptor.proto) left out: the constraints ride in the options
        assert [file.name for file in models.fds.file] == ["protomcp/tools/models.proto"]
        assert [file.name for file in tools["constrained"].fds.file] == [
            "google/protobuf/struct.proto",  # what it really uses (int | str: a Value) stays
            "protomcp/tools/constrained.proto",
        ]
        assert "protomcp/options.proto" not in tools["constrained"].fds.file[0].dependency
        # ...which a pool that knows the options (this process's) still reads
        rebuilt = protoschema.schema_from_message(tools["constrained"].request_class().DESCRIPTOR)
        assert rebuilt["properties"]["n"] == {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "description": "How many",
            "default": 5,
        }
        typed = (await _raw_call(client, "make_report", title="T", rows=2)).content[-1].data
        plain = await client.request(
            call_tool_request=pm.CallToolRequest(name="models", arguments=_packed_box(client))
        )
        converted = plain.call_tool_response.success.content[-1].data
        assert converted.type_url.endswith(models.output_message)
        cases = [
            _case(report.fds, report.output_message, typed.value),
            _case(models.fds, models.output_message, converted.value),
            _case(tools["constrained"].fds, tools["constrained"].input_message, b""),
        ]
        # by reference: the files the host wrote to the registry are whole too
        written = sorted((registry / "protomcp").glob("*.pb"))
        assert len(written) == len(tools)
        for path in written:
            fds = descriptor_pb2.FileDescriptorSet.FromString(path.read_bytes())
            _imports_come_first(fds)
            if path.name.startswith("make_report@"):
                cases.append(_case(fds, report.output_message, typed.value))

    decoded = _decode_elsewhere(cases)
    assert decoded[0]["json"] == {
        "title": "T",
        # protobuf's JSON mapping: int64 as a string, zeros left out
        "rows": [{"name": "row 0"}, {"id": "1", "name": "row 1", "score": 0.5}],
        "details": {"source": "test", "pages": 2.0},
        "made": "2023-11-14T22:13:20Z",
    }
    assert decoded[1]["json"] == {"x": "1", "y": "0"}
    assert decoded[2]["json"] == {}  # the constrained tool's request: built without options.proto
    assert decoded[3] == decoded[0]


def _packed_box(client: ProtoMcpClient) -> Any:
    from google.protobuf import any_pb2

    packed = any_pb2.Any()
    cls = client.tools["models"].request_class()
    packed.Pack(protoschema.json_to_message({"box": {"corner": {"x": 1}}}, cls))
    return packed


SMALL = ("--reps", "1", "--calls", "20", "--seconds", "0.1", "--rows", "10")


def test_the_typed_benchmark_runs(tmp_path: Path) -> None:
    """benchmarks/protomcp_typed.py (tiny sizes, this tree alone): it cannot rot unseen."""
    readme = tmp_path / "README.md"
    readme.write_text("# Benchmarks\n\n## Other\n\nkept\n", encoding="utf-8")
    bench = Path(__file__).resolve().parents[2] / "benchmarks" / "protomcp_typed.py"
    done = subprocess.run(
        [sys.executable, str(bench), *SMALL, "--out", str(readme)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    written = readme.read_text(encoding="utf-8")
    assert "## Other\n\nkept" in written and "## proto-mcp: a typed tool's large result" in written
    assert "| after, proto-mcp |" in written and "| after, JSON-RPC |" in written
