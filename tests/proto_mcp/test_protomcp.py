"""proto-mcp end to end: the real host and tool processes, the SDK's proto-mcp client
on stdio (first-byte detection) and on the /proto-mcp WebSocket, beside the official JSON-RPC
client on the same host; descriptors inline and by reference; bad binary input."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from google.protobuf import any_pb2

from protomcp_sdk.protomcp_client import ProtoMcpClient, ProtoMcpError
from protomcp_sdk.wire import proto_mcp_pb2 as pm
from tests.support.hosts import HOST, TOOLS

pytestmark = pytest.mark.anyio
SHAPES = TOOLS / "proto_shapes.py"


def host(*args: str) -> list[str]:
    return [*HOST, "run", *args]


async def test_list_call_progress_errors_resources_and_prompts_on_stdio() -> None:
    async with ProtoMcpClient.stdio(host(str(SHAPES))) as client:
        assert client.server is not None and client.server.protocol_version == "1.0.0"
        assert client.server.metadata["name"] == "protomcp"
        tools = {tool.name: tool for tool in await client.list_tools()}
        assert {"scalars", "models", "slow_sum", "refuse"} <= set(tools)
        models = tools["models"]
        assert models.input_message == "protomcp.tools.ModelsRequest"
        assert models.output_message == "protomcp.tools.ModelsResponse"
        assert [f.name for f in models.fds.file][-1] == "protomcp/tools/models.proto"  # inline set

        # a typed call: arguments packed as ModelsRequest, the result unpacked as ModelsResponse
        arguments = models.request_class()(box={"corner": {"x": 4}, "points": [{"x": 1}, {"x": 2}]})
        result = await client.call_tool("models", arguments)
        assert not result.is_error and result.structured == {"x": 6, "y": 0}
        assert type(result.data).__name__ == "ModelsResponse" and result.data.x == 6

        seen: list[tuple[float, float, str]] = []
        total = await client.call_tool("slow_sum", {"values": [1, 2.5]}, progress=lambda *p: seen.append(p))
        assert total.structured == {"result": 3.5} and seen == [(1, 2, "added 1.0"), (2, 2, "added 2.5")]

        refused = await client.call_tool("refuse", {"reason": "no"})
        assert refused.is_error and "refused: no" in refused.text
        invalid = await client.call_tool("constrained", {"n": 500})  # the host still validates
        assert invalid.is_error and "Invalid arguments" in invalid.text and "100" in invalid.text

        with pytest.raises(ProtoMcpError, match="Unknown tool: nope") as unknown:
            await client.call_tool("nope", any_pb2.Any())
        assert unknown.value.code == -32602

        assert {r.uri for r in await client.list_resources()} == {"blobs://one"}
        [note] = await client.read_resource("notes://7")
        assert note.text == "# note 7" and note.mime_type == "text/markdown"
        [blob] = await client.read_resource("blobs://one")
        assert blob.blob == bytes(range(8))
        [prompt] = await client.list_prompts()
        assert prompt.name == "review" and [a.name for a in prompt.arguments] == ["path"]
        got = await client.get_prompt("review", {"path": "a.py"})
        assert got.messages[0].role == "user" and got.messages[0].content.text == "Please review a.py."
        with pytest.raises(ProtoMcpError, match=r"not found|Unknown"):
            await client.read_resource("nothing://here")


async def test_a_wrong_any_type_is_a_clear_error_and_the_connection_serves_on() -> None:
    async with ProtoMcpClient.stdio(host(str(SHAPES))) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
        wrong = tools["scalars"].request_class()(s="x", i=1, f=1.0, b=True)
        with pytest.raises(
            ProtoMcpError, match=r"expected an Any of type\.googleapis\.com/protomcp\.tools\.ModelsRequest"
        ) as exc:
            await client.call_tool("models", wrong)
        assert exc.value.code == -33001
        garbled = any_pb2.Any(
            type_url="type.googleapis.com/protomcp.tools.ScalarsRequest", value=b"\xff\xff\xff"
        )
        with pytest.raises(ProtoMcpError, match=r"not a protomcp\.tools\.ScalarsRequest"):
            await client.call_tool("scalars", garbled)
        assert (
            await client.call_tool("scalars", {"s": "a", "i": 1, "f": 2, "b": False})
        ).text == "a|1|2.0|False|None|3"


async def test_descriptors_by_reference_from_the_schema_registry(tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    async with ProtoMcpClient.stdio(
        host("--schema-registry", str(registry), str(SHAPES)), registry=registry
    ) as client:
        assert client.server is not None and client.server.capabilities.supports_bsr_refs
        tools = {tool.name: tool for tool in await client.list_tools()}
        assert tools["scalars"].ref.startswith("protomcp/scalars:")
        assert (registry / "protomcp").is_dir() and len(list((registry / "protomcp").glob("*.pb"))) == len(
            tools
        )
        result = await client.call_tool("models", {"box": {"corner": {"x": 1}}})
        assert result.structured == {"x": 1, "y": 0}
        inline = await client.list_tools(include_schemas=True)  # asked for: inline after all
        assert all(not tool.ref and tool.fds.file for tool in inline)
    async with ProtoMcpClient.stdio(host("--schema-registry", str(registry), str(SHAPES))) as client:
        assert all(tool.fds.file for tool in await client.list_tools())  # no registry here: inline


class RawProto:
    """`protomcp run` spoken to frame by frame, for input the client would never send."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            host(*args), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.frames: list[pm.MCPMessage] = []
        self.grew = threading.Condition()
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while len(head := self.proc.stdout.read(4)) == 4:
            body = self.proc.stdout.read(int.from_bytes(head, "big"))
            with self.grew:
                self.frames.append(pm.MCPMessage.FromString(body))
                self.grew.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def request(self, id_: int, **payload: Any) -> None:
        body = pm.MCPMessage(id=id_, **payload).SerializeToString()
        self.send(len(body).to_bytes(4, "big") + body)

    def wait(self, count: int, timeout: float = 30) -> list[pm.MCPMessage]:
        with self.grew:
            assert self.grew.wait_for(lambda: len(self.frames) >= count, timeout), self.frames
            return list(self.frames)

    def close(self) -> int:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        return self.proc.wait(30)


@pytest.fixture
def raw() -> Iterator[list[RawProto]]:
    started: list[RawProto] = []
    yield started
    for one in started:
        if one.proc.poll() is None:
            one.proc.kill()
            one.proc.wait()


def test_bad_frames_get_clear_errors(raw: list[RawProto]) -> None:
    one = RawProto(str(SHAPES))
    raw.append(one)
    init = pm.InitializeRequest(protocol_version="2.0.0")
    one.request(1, initialize_request=init)
    assert one.wait(1)[0].error_response.code == -33002  # another major version
    one.request(2, list_tools_request=pm.ListToolsRequest())
    assert "initialize first" in one.wait(2)[1].error_response.message
    one.request(3, initialize_request=pm.InitializeRequest(protocol_version="1.0.0"))
    assert one.wait(3)[2].id == 3 and one.frames[2].WhichOneof("payload") == "initialize_response"
    one.send(b"\x00\x00\x00\x03\xff\xff\xff")  # a frame that is not an MCPMessage
    assert one.wait(4)[3].error_response.code == -32700
    one.request(4, call_tool_response=pm.CallToolResponse())  # something only a server sends
    assert "a client does not send call_tool_response" in one.wait(5)[4].error_response.message
    one.request(5, list_tools_request=pm.ListToolsRequest())  # and it still serves
    assert one.wait(6)[5].list_tools_response.tools
    one.send(b"\x00\x00\x01")  # the input ends inside a frame
    assert one.close() == 0
    assert "truncated frame" in one.wait(7)[6].error_response.message

    two = RawProto(str(SHAPES))
    raw.append(two)
    two.send(b"\x0f\xff\xff\xff" + b"x" * 16)  # a length beyond the frame limit
    assert "exceeds the limit" in two.wait(1)[0].error_response.message
    assert two.close() == 0 and b"proto-mcp: a frame of" in two.stderr


async def test_json_rpc_and_proto_mcp_clients_on_one_http_host_see_a_reload(tmp_path: Path) -> None:
    """One host, three clients at once: the official JSON-RPC client, a proto-mcp client given
    descriptors inline and one resolving references from the schema registry; typed and
    converted tools, errors, and a reload that all of them see."""
    from mcp import types

    from tests.support.http import HttpHost, http_session

    file = tmp_path / "tools.py"
    shutil.copy(SHAPES, file)
    registry = tmp_path / "registry"
    typed = TOOLS / "typed" / "search_tools.py"
    served = HttpHost("dev", str(file), str(typed), "--schema-registry", str(registry))
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(getattr(message, "root", message), types.ToolListChangedNotification):
            changed.set()

    try:
        ws = served.url.replace("http://", "ws://").replace("/mcp", "/proto-mcp")
        async with (
            http_session(served.url, message_handler=on_message) as json_rpc,
            ProtoMcpClient.websocket(ws) as inline,
            ProtoMcpClient.websocket(ws, registry=registry) as by_ref,
        ):
            assert all(tool.fds.file and not tool.ref for tool in await inline.list_tools())
            listed = {tool.name: tool for tool in await by_ref.list_tools()}
            assert listed["models"].ref.startswith("protomcp/models:") and listed["web_search"].ref
            assert (await inline.call_tool("whoami", {})).text == "nobody"
            json_result = await json_rpc.call_tool("models", {"box": {"corner": {"x": 2}}})
            for proto in (inline, by_ref):
                proto_result = await proto.call_tool("models", {"box": {"corner": {"x": 2}}})
                assert json_result.structured_content == proto_result.structured == {"x": 2, "y": 0}
                found = await proto.call_tool("web_search", {"query": "q", "sites": ["a.com"]})
                assert found.data.results[0].url == "https://a.com/"  # a typed tool's own message
                refused = await proto.call_tool("refuse", {"reason": "no"})
                assert refused.is_error and "refused: no" in refused.text
            json_found = await json_rpc.call_tool("web_search", {"query": "q", "sites": ["a.com"]})
            assert json_found.structured_content["results"][0]["url"] == "https://a.com/"

            file.write_text(SHAPES.read_text() + "\n\n@tool\ndef added_later() -> str:\n    return 'new'\n")
            with anyio.fail_after(30):
                await changed.wait()
                for proto in (inline, by_ref):
                    while True:
                        note = await proto.next_notification(30)
                        if note.WhichOneof("payload") == "list_changed":
                            break
                    assert note.list_changed.list == "tools"
            for proto in (inline, by_ref):
                assert "added_later" in {tool.name for tool in await proto.list_tools()}
                assert (await proto.call_tool("added_later", {})).text == "new"
            assert "added_later" in {tool.name for tool in (await json_rpc.list_tools()).tools}
    finally:
        served.terminate()


async def test_two_websocket_principals_never_see_each_others_tools(tmp_path: Path) -> None:
    from tests.support.http import HttpHost
    from tests.support.matrix import Auth

    file = TOOLS / "reactor.py"
    auth = Auth(tmp_path)
    served = HttpHost("run", str(file), *auth.options())
    try:
        ws = served.url.replace("http://", "ws://").replace("/mcp", "/proto-mcp")
        async with (
            ProtoMcpClient.websocket(ws, token=auth.token("alice")) as alice,
            ProtoMcpClient.websocket(ws, token=auth.token("bob")) as bob,
        ):
            assert (await alice.call_tool("operator_login", {})).text == "unlocked alice"
            with anyio.fail_after(30):
                while (await alice.next_notification()).WhichOneof("payload") != "list_changed":
                    pass
            assert "reset_the_reactor" in {tool.name for tool in await alice.list_tools()}
            assert (await alice.call_tool("reset_the_reactor", {})).text == "reset"
            assert "reset_the_reactor" not in {tool.name for tool in await bob.list_tools()}
            with pytest.raises(ProtoMcpError, match="disabled"):
                await bob.call_tool("reset_the_reactor", any_pb2.Any())
        from websockets.exceptions import InvalidStatus

        with pytest.raises(InvalidStatus, match="HTTP 403"):  # refused before the handshake
            async with ProtoMcpClient.websocket(ws):
                pass
    finally:
        served.terminate()


def test_call_binary_from_the_cli() -> None:
    done = subprocess.run(
        [*HOST, "call", str(SHAPES), "slow_sum", "values=[1, 2]", "--binary"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.strip() == "3.0", done.stderr
    assert "progress 1/2 added 1.0" in done.stderr
    failed = subprocess.run(
        [*HOST, "call", str(SHAPES), "refuse", "reason=x", "--binary"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert failed.returncode == 1 and "refused: x" in failed.stdout


def test_the_benchmark_runs(tmp_path: Path) -> None:
    """benchmarks/protomcp_bench.py (tiny sizes): it cannot rot unseen."""
    readme = tmp_path / "README.md"
    readme.write_text("# Benchmarks\n\n## Other\n\nkept\n", encoding="utf-8")
    bench = Path(__file__).resolve().parents[2] / "benchmarks" / "protomcp_bench.py"
    done = subprocess.run(
        [sys.executable, str(bench), "--reps", "1", "--calls", "20", "--out", str(readme)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    written = readme.read_text(encoding="utf-8")
    assert "## Other\n\nkept" in written and "## proto-mcp against JSON-RPC" in written
    assert "| sequential `echo` p50 (µs) |" in written


ADD = '''
from protomcp_sdk import tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
'''


def test_the_guides_proto_mcp_examples_run_as_written(tmp_path: Path) -> None:
    from tests.support.hosts import ROOT

    guide = (ROOT / "docs" / "guide" / "proto-mcp.md").read_text()
    section = guide[guide.index("# proto-mcp: the binary protocol") :]
    python = section[section.index("```python\n") + len("```python\n") : section.index("\n```\n")]
    (tmp_path / "tools.py").write_text(ADD, encoding="utf-8")
    body = "\n".join("    " + line for line in python.splitlines())
    shown = "    print(result.structured, type(result.data).__name__)"
    example = f"import asyncio\n\nasync def main():\n{body}\n{shown}\n\nasyncio.run(main())\n"
    (tmp_path / "example.py").write_text(example, encoding="utf-8")
    run: dict[str, Any] = {"cwd": tmp_path, "capture_output": True, "text": True, "timeout": 120}
    done = subprocess.run([sys.executable, "example.py"], **run)
    assert done.returncode == 0 and "{'result': 3} AddResponse" in done.stdout, done.stderr

    bash = section[section.index("```bash\n") + len("```bash\n") :]
    commands = [line.split("  #")[0].split() for line in bash[: bash.index("```")].strip().splitlines()]
    call, schema, registry = commands
    assert call[:2] == ["protomcp", "call"] and schema[:2] == ["protomcp", "proto-schema"]
    done = subprocess.run([*HOST, *call[1:]], **run)
    assert done.returncode == 0 and done.stdout.strip() == "3", done.stderr
    done = subprocess.run([*HOST, *schema[1:]], **run)
    assert done.returncode == 0 and "message AddRequest {" in done.stdout
    assert registry[:3] == ["protomcp", "run", "tools.py"] and "--schema-registry" in registry


async def test_bad_websocket_messages_get_errors_and_the_host_serves_on() -> None:
    from websockets.asyncio.client import connect

    from tests.support.http import HttpHost

    served = HttpHost("run", str(SHAPES))
    try:
        ws = served.url.replace("http://", "ws://").replace("/mcp", "/proto-mcp")
        async with connect(ws, open_timeout=10) as raw, ProtoMcpClient.websocket(ws) as other:
            await raw.send("{not binary}")
            text = pm.MCPMessage.FromString(await raw.recv())
            assert "proto-mcp messages are binary" in text.error_response.message
            await raw.send(b"\xff\xff\xff")
            assert pm.MCPMessage.FromString(await raw.recv()).error_response.code == -32700
            hello = pm.MCPMessage(id=1, initialize_request=pm.InitializeRequest(protocol_version="1.0.0"))
            await raw.send(hello.SerializeToString())  # the same connection still serves
            assert pm.MCPMessage.FromString(await raw.recv()).WhichOneof("payload") == "initialize_response"
            assert (await other.call_tool("refuse", {"reason": "x"})).is_error  # and so do the others
    finally:
        served.terminate()


def test_frames_are_read_whatever_the_chunking() -> None:
    from protomcp_host.proto_mcp.codec import FrameReader, ProtoMcpFrameError

    bodies = [b"a", b"bc", b"", b"d" * 300]
    data = b"".join(len(body).to_bytes(4, "big") + body for body in bodies)
    for step in (1, 2, 3, 5, 7, len(data)):
        reader = FrameReader()
        frames = [frame for at in range(0, len(data), step) for frame in reader.feed(data[at : at + step])]
        assert frames == bodies and reader.pending == 0, step
    reader = FrameReader(limit=10)
    with pytest.raises(ProtoMcpFrameError, match="a frame of 11 bytes exceeds the limit of 10 bytes"):
        reader.feed((11).to_bytes(4, "big"))


async def test_a_websocket_client_that_stops_reading_loses_notifications_not_answers() -> None:
    from protomcp_host.transports.http.protomcp_ws import Outgoing

    outgoing = Outgoing(limit=100)
    for i in range(10):
        outgoing.put(b"answer %d " % i + b"x" * 40)
        outgoing.put(b"notice %d" % i, droppable=True)
    assert outgoing.dropped > 0 and outgoing.size > 100
    sent = [await outgoing.get() for _ in range(len(outgoing.waiting))]
    assert [s for s in sent if s.startswith(b"answer")] == [b"answer %d " % i + b"x" * 40 for i in range(10)]
    assert len([s for s in sent if s.startswith(b"notice")]) == 10 - outgoing.dropped
    assert outgoing.size == 0
    outgoing.put(b"notice again", droppable=True)  # read up: notices flow again
    assert await outgoing.get() == b"notice again"
