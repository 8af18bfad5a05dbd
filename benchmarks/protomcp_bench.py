"""proto-mcp against JSON-RPC on the same host, same run: encoding cost and end-to-end calls.

    python benchmarks/protomcp_bench.py [--reps 3] [--calls 2000] [--out benchmarks/README.md]

1. Encoding: one ``tools/call`` request and its answer for a tool with nested arguments
   (``tests/tools/proto_shapes.py`` ``models``), encoded and decoded by a client: JSON-RPC with
   orjson against an MCPMessage whose arguments are the tool's request message in an Any.
   Microseconds per round of encode + decode, median of repetitions.
2. End to end: ``protomcp run benchmarks/tools_protomcp.py`` on stdio, one host per protocol
   (a stdio connection speaks one; the first byte decides), calling ``echo``: sequential
   latency p50 (one call at a time) and pipelined calls/s (64 in flight). Both clients are
   minimal (asyncio pipes, no SDK), so the host is what is measured. Repetitions alternate.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from google.protobuf import any_pb2

from protomcp_sdk.wire import proto_mcp_pb2 as pm
from protomcp_sdk.wire import protoschema

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SECTION = "## proto-mcp against JSON-RPC"
HOST = [sys.executable, "-m", "protomcp_host", "run", str(HERE / "tools_protomcp.py")]
ARGUMENTS = {
    "box": {"corner": {"x": 4, "y": 2}, "points": [{"x": i, "y": -i} for i in range(5)], "label": "L"}
}
RESULT = {"x": 9, "y": 0}


def encoding(reps: int) -> tuple[float, float]:
    """(JSON-RPC µs, proto-mcp µs) per encode + decode of a call and its answer."""
    sys.path.insert(0, str(ROOT / "tests"))
    from protomcp_host.cli.inspection import inspect_file

    [models] = [
        t
        for t in inspect_file(ROOT / "tests" / "tools" / "proto_shapes.py", sys.executable)["tools"]
        if t["name"] == "models"
    ]
    file = protoschema.tool_messages("models", models["inputSchema"], models["outputSchema"])
    fds = protoschema.descriptor_set([file])
    request_cls = protoschema.message_class(fds, protoschema.message_names(file)[0])
    response_cls = protoschema.message_class(fds, protoschema.message_names(file)[1])
    request_message = protoschema.json_to_message(ARGUMENTS, request_cls)
    result_message = protoschema.json_to_message(RESULT, response_cls)

    def json_rpc() -> None:
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "models", "arguments": ARGUMENTS},
        }
        orjson.loads(orjson.dumps(call))
        text = [{"type": "text", "text": orjson.dumps(RESULT).decode()}]
        result = {"content": text, "structuredContent": RESULT, "isError": False}
        answer = {"jsonrpc": "2.0", "id": 7, "result": result}
        orjson.loads(orjson.dumps(answer))

    def proto() -> None:
        packed = any_pb2.Any()
        packed.Pack(request_message)
        call = pm.MCPMessage(id=7, call_tool_request=pm.CallToolRequest(name="models", arguments=packed))
        got = pm.MCPMessage.FromString(call.SerializeToString())
        request_cls.FromString(got.call_tool_request.arguments.value)
        data = any_pb2.Any()
        data.Pack(result_message)
        result = pm.ToolResult(content=[pm.ToolContent(data=data)])
        answer = pm.MCPMessage(id=7, call_tool_response=pm.CallToolResponse(success=result))
        back = pm.MCPMessage.FromString(answer.SerializeToString())
        response_cls.FromString(back.call_tool_response.success.content[0].data.value)

    def per_op(fn: Callable[[], None]) -> float:
        return min(timeit.repeat(fn, number=2000, repeat=reps)) / 2000 * 1e6

    return per_op(json_rpc), per_op(proto)


class Pipe:
    """A host on stdio and a minimal client for one protocol."""

    def __init__(self, binary: bool) -> None:
        self.binary = binary
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.ids = iter(range(1, 1 << 60))

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *HOST,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        self.reader = asyncio.create_task(self._read())
        if self.binary:
            await self.call(initialize_request=pm.InitializeRequest(protocol_version="1.0.0"))
        else:
            params = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "b", "version": "1"},
            }
            await self.call(method="initialize", params=params)
            self._write(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + b"\n")

    def _write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    async def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        while True:
            if self.binary:
                size = int.from_bytes(await stdout.readexactly(4), "big")
                message = pm.MCPMessage.FromString(await stdout.readexactly(size))
                id_ = message.id
            else:
                message = orjson.loads(await stdout.readline())
                id_ = message.get("id")
            waiter = self.waiting.pop(id_, None)
            if waiter is not None:
                waiter.set_result(message)

    def call(self, **request: Any) -> asyncio.Future[Any]:
        id_ = next(self.ids)
        waiter = self.waiting[id_] = asyncio.get_running_loop().create_future()
        if self.binary:
            data = pm.MCPMessage(id=id_, **request).SerializeToString()
            self._write(len(data).to_bytes(4, "big") + data)
        else:
            self._write(orjson.dumps({"jsonrpc": "2.0", "id": id_, **request}) + b"\n")
        return waiter

    def echo(self) -> asyncio.Future[Any]:
        if self.binary:
            packed = any_pb2.Any()
            packed.Pack(self.echo_message)
            return self.call(call_tool_request=pm.CallToolRequest(name="echo", arguments=packed))
        return self.call(method="tools/call", params={"name": "echo", "arguments": {"text": "hello world"}})

    async def prepare(self) -> None:
        if self.binary:
            tools = (await self.call(list_tools_request=pm.ListToolsRequest())).list_tools_response.tools
            [echo] = [t for t in tools if t.name == "echo"]
            cls = protoschema.message_class(echo.inline_schema, echo.input_message)
            self.echo_message = cls(text="hello world")

    async def close(self) -> None:
        self.reader.cancel()
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


async def end_to_end(binary: bool, calls: int) -> tuple[float, float]:
    """(sequential p50 µs, pipelined calls/s)."""
    pipe = Pipe(binary)
    await pipe.start()
    try:
        await pipe.prepare()
        for _ in range(200):
            await pipe.echo()
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            await pipe.echo()
            times.append(time.perf_counter() - start)
        in_flight, done = 64, 0
        start = time.perf_counter()

        async def worker() -> None:
            nonlocal done
            while done < calls * 2:
                done += 1
                await pipe.echo()

        await asyncio.gather(*(worker() for _ in range(in_flight)))
        rate = done / (time.perf_counter() - start)
        return statistics.median(times) * 1e6, rate
    finally:
        await pipe.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--out", type=Path, help="replace this section of the markdown file")
    options = parser.parse_args()
    json_us, proto_us = encoding(options.reps)
    runs: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    for rep in range(options.reps):
        for binary in (rep % 2 == 0, rep % 2 == 1):
            runs[binary].append(asyncio.run(end_to_end(binary, options.calls)))
    p50 = {b: statistics.median(r[0] for r in runs[b]) for b in runs}
    rate = {b: statistics.median(r[1] for r in runs[b]) for b in runs}
    rows = [
        ("client encode + decode of a call and its answer (µs)", json_us, proto_us, ".1f"),
        ("sequential `echo` p50 (µs)", p50[False], p50[True], ".0f"),
        ("pipelined `echo`, 64 in flight (calls/s)", rate[False], rate[True], ",.0f"),
    ]
    table = "\n".join(
        ["| measure | JSON-RPC | proto-mcp | proto-mcp ÷ JSON-RPC |", "|---|---:|---:|---:|"]
        + [f"| {name} | {a:{f}} | {b:{f}} | {b / a:.2f}x |" for name, a, b, f in rows]
    )
    print(table)
    if options.out:
        from sections import replace_section

        body = "\n".join(
            [
                "Measured by `python benchmarks/protomcp_bench.py --out benchmarks/README.md` "
                f"({options.reps} repetitions, {options.calls} sequential calls each; "
                f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, 2 shared cores); method in "
                "the script's docstring.",
                "",
                table,
                "",
                "protomcp serves proto-mcp by translating each MCPMessage to the JSON-RPC session core "
                "(so every feature, reload and guarantee is the same for both). For a tool whose "
                "schema is JSON Schema, as `echo` here, the tool process receives JSON arguments: a "
                "proto-mcp call does the JSON work plus the protobuf work in the host, and costs what "
                "the table says. A typed tool (protobuf messages in and out) skips JSON: see the "
                "next section.",
            ]
        )
        old = options.out.read_text(encoding="utf-8") if options.out.exists() else ""
        options.out.write_text(replace_section(old, SECTION, body), encoding="utf-8")


if __name__ == "__main__":
    main()
