"""A typed tool's large result over proto-mcp and over JSON-RPC, two code trees interleaved.

    python benchmarks/protomcp_typed.py [--before DIR] [--reps 3] [--calls 600] [--rows 1000]
        [--out benchmarks/README.md]

`protomcp run benchmarks/tools_typed.py` on stdio; its tool `rows` returns a message whose one
repeated field holds `--rows` rows (id int64, name string, score double, ok bool; built once,
so a call measures the protocols, not the building). For each code tree (this one, and with
`--before` the tree given, e.g. the commit this one started from; each host runs with
PYTHONPATH pointing at its tree) and each protocol, one host: 100 warm-up calls, then
sequential calls (one in flight) and pipelined calls (8 in flight), each for `--calls` calls
or `--seconds`, whichever ends first (the JSON path is far slower). Figures per call: the CPU
of the host and its tool process together (utime + stime from /proc, the process tree), the
client's CPU (this process: encode the request, read and decode the answer: orjson for
JSON-RPC; the MCPMessage and the Rows message, from the listed inline_schema, for proto-mcp),
and the sequential p50 latency. Repetitions alternate the order of the trees; the table gives
medians.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import orjson
from google.protobuf import any_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message
from lean_client import descendants, tree_cpu_s

from protomcp_sdk.wire import proto_mcp_pb2 as pm

HERE = Path(__file__).resolve().parent
SECTION = "## proto-mcp: a typed tool's large result, without JSON"
TOOLS = HERE / "tools_typed.py"
PIPELINED = 8


class Host:
    """A host on stdio (code from `tree`) and a minimal client of one protocol."""

    def __init__(self, tree: Path, binary: bool, rows: int) -> None:
        self.tree, self.binary, self.rows = tree, binary, rows
        self.waiting: dict[int, asyncio.Future[None]] = {}
        self.ids = iter(range(1, 1 << 60))
        self.result_class: type[Message] | None = None

    async def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(self.tree)}
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "protomcp_host",
            "run",
            str(TOOLS),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
            cwd=self.tree,
            limit=64 * 1024 * 1024,
        )
        self.reader = asyncio.create_task(self._read())
        if self.binary:
            await self._request(
                pm.MCPMessage(initialize_request=pm.InitializeRequest(protocol_version="1.0.0"))
            )
            listed = await self._request(pm.MCPMessage(list_tools_request=pm.ListToolsRequest()))
            assert isinstance(listed, pm.MCPMessage)
            [tool] = [t for t in listed.list_tools_response.tools if t.name == "rows"]
            pool = descriptor_pool.DescriptorPool()  # the client's own, as any client's
            added: set[str] = set()
            for file in tool.inline_schema.file:
                pool.Add(file)
                added.add(file.name)
            self.request_class = message_factory.GetMessageClass(
                pool.FindMessageTypeByName(tool.input_message)
            )
            self.result_class = message_factory.GetMessageClass(
                pool.FindMessageTypeByName(tool.output_message)
            )
        else:
            params = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "b", "version": "1"},
            }
            await self._request({"method": "initialize", "params": params})
            self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')  # type: ignore[union-attr]

    def _request(self, message: Any) -> asyncio.Future[Any]:
        id_ = next(self.ids)
        waiter = self.waiting[id_] = asyncio.get_running_loop().create_future()
        assert self.proc.stdin is not None
        if self.binary:
            message.id = id_
            data = message.SerializeToString()
            self.proc.stdin.write(len(data).to_bytes(4, "big") + data)
        else:
            self.proc.stdin.write(orjson.dumps({"jsonrpc": "2.0", "id": id_, **message}) + b"\n")
        return waiter

    async def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        while True:
            if self.binary:
                size = int.from_bytes(await stdout.readexactly(4), "big")
                message: Any = pm.MCPMessage.FromString(await stdout.readexactly(size))
                id_ = message.id
                if message.WhichOneof("payload") == "call_tool_response" and self.result_class is not None:
                    [data] = [
                        c.data for c in message.call_tool_response.success.content if c.HasField("data")
                    ]
                    message = self.result_class.FromString(data.value)  # the client decodes the rows
                    assert len(message.rows) == self.rows
            else:
                message = orjson.loads(await stdout.readline())
                id_ = message.get("id")
                structured = message.get("result", {}).get("structuredContent")
                assert structured is None or len(structured["rows"]) == self.rows
            waiter = self.waiting.pop(id_, None)
            if waiter is not None:
                waiter.set_result(message)

    def call(self) -> asyncio.Future[Any]:
        if self.binary:
            packed = any_pb2.Any()
            packed.Pack(self.request_class(count=self.rows))
            return self._request(
                pm.MCPMessage(call_tool_request=pm.CallToolRequest(name="rows", arguments=packed))
            )
        return self._request(
            {"method": "tools/call", "params": {"name": "rows", "arguments": {"count": self.rows}}}
        )

    async def close(self) -> None:
        self.reader.cancel()
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


async def measure(tree: Path, binary: bool, calls: int, seconds: float, rows: int) -> dict[str, float]:
    """Each figure over `calls` calls or `seconds` of them, whichever ends first (20 at least)."""
    host = Host(tree, binary, rows)
    await host.start()
    try:
        for _ in range(100):
            await host.call()
        pids = descendants(host.proc.pid)
        cpu, own = tree_cpu_s(pids), time.process_time()
        times: list[float] = []
        until = time.perf_counter() + seconds
        while len(times) < 20 or (len(times) < calls and time.perf_counter() < until):
            start = time.perf_counter()
            await host.call()
            times.append(time.perf_counter() - start)
        figures = {
            "p50": statistics.median(times) * 1e6,
            "seq_cpu": (tree_cpu_s(pids) - cpu) / len(times) * 1e6,
            "seq_client": (time.process_time() - own) / len(times) * 1e6,
        }
        cpu, own, done = tree_cpu_s(pids), time.process_time(), 0
        until = time.perf_counter() + seconds

        async def worker() -> None:
            nonlocal done
            while done < 20 or (done < calls and time.perf_counter() < until):
                done += 1
                await host.call()

        await asyncio.gather(*(worker() for _ in range(PIPELINED)))
        figures["pipe_cpu"] = (tree_cpu_s(pids) - cpu) / done * 1e6
        figures["pipe_client"] = (time.process_time() - own) / done * 1e6
        return figures
    finally:
        await host.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", type=Path, help="the code tree to compare with (PYTHONPATH of its hosts)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--calls", type=int, default=3000, help="the most calls per figure")
    parser.add_argument("--seconds", type=float, default=3.0, help="the most time per figure")
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--out", type=Path, help="replace this section of the markdown file")
    options = parser.parse_args()
    trees = {"after": HERE.parent, **({"before": options.before.resolve()} if options.before else {})}
    runs: dict[tuple[str, bool], list[dict[str, float]]] = {}
    for rep in range(options.reps):
        order = list(trees) if rep % 2 == 0 else list(reversed(trees))
        for name in order:
            for binary in (rep % 2 == 0, rep % 2 == 1):
                figures = asyncio.run(
                    measure(trees[name], binary, options.calls, options.seconds, options.rows)
                )
                runs.setdefault((name, binary), []).append(figures)
                print(name, "proto-mcp" if binary else "JSON-RPC", {k: round(v) for k, v in figures.items()})
    rows = []
    for name in ("before", "after"):
        for binary in (False, True):
            if (name, binary) not in runs:
                continue
            median = {
                k: statistics.median(r[k] for r in runs[(name, binary)]) for k in runs[(name, binary)][0]
            }
            protocol = "proto-mcp" if binary else "JSON-RPC"
            figures = ("seq_cpu", "pipe_cpu", "seq_client", "pipe_client", "p50")
            cells = " | ".join(f"{median[key]:,.0f}" for key in figures)
            rows.append(f"| {name}, {protocol} | {cells} |")
    table = "\n".join(
        [
            "| code, protocol | host + tool CPU/call, sequential (µs) | host + tool CPU/call, "
            f"{PIPELINED} in flight (µs) | client CPU/call, sequential (µs) | client CPU/call, "
            f"{PIPELINED} in flight (µs) | sequential p50 (µs) |",
            "|---|---:|---:|---:|---:|---:|",
            *rows,
        ]
    )
    print(table)
    if options.out:
        from sections import replace_section

        body = (
            f"Measured by `python benchmarks/protomcp_typed.py --before DIR --out benchmarks/README.md` "
            f"({options.reps} repetitions, each figure over {options.calls:,} calls or "
            f"{options.seconds:g} s; {options.rows:,} rows; "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, 2 shared cores); method in the "
            f"script's docstring.\n\n{table}\n"
        )
        old = options.out.read_text(encoding="utf-8") if options.out.exists() else ""
        options.out.write_text(replace_section(old, SECTION, body), encoding="utf-8")


if __name__ == "__main__":
    main()
