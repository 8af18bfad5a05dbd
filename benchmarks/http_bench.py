"""Streamable HTTP: protomcp vs the official SDK's and FastMCP's servers (their apps under uvicorn).

    python benchmarks/http_bench.py [--reps 5] [--quick] [--out benchmarks/README.md]
                                    [--sides protomcp] [--metrics rate,rate_modern,...]
                                    [--protomcp-args "--rate-limit '*=100000000/hour'"]

All serve the same tools (tools_protomcp.py / tools_sdk.py / tools_fastmcp.py; FastMCP only
when it is installed) on a free loopback port and are
driven by the same minimal HTTP/1.1 clients (keep-alive connections, one per session; JSON and
SSE answers both parsed): a blocking socket for sequential latency, asyncio streams for the
concurrent sessions. Repetitions alternate the order of the sides; each figure is the
median over repetitions and the ratios are protomcp / SDK and protomcp / FastMCP. Every wait
is bounded.

Metrics: sequential `tools/call echo` latency p50 (one session, one call at a time); calls/s
with 50 and with 500 concurrent sessions (each calling in a loop on its own connection), with
the CPU time (user + system) the server's process tree used per call meanwhile; memory per idle session
(RSS of the server's process tree before and after opening 200 sessions that only
initialize, divided by 200; measured first, on the fresh server). The first two are measured
in both protocol eras: 2025-11-25 sessions (initialize, then Mcp-Session-Id) and 2026-07-28
stateless requests (no initialize; every request carries its `_meta` and the Mcp-Method /
Mcp-Name headers). A side that does not serve an era shows "-", and the report says so.

--sides and --metrics run only some servers and some rows (by key: seq, rate, rate500,
seq_modern, rate_modern, rate500_modern, mem; a rate row brings its CPU row), e.g. to compare
two commits of protomcp alone; the defaults run everything. --protomcp-args adds flags to the
protomcp host (e.g. a `--rate-limit` on every call, to price the limits).

With --out, the "Streamable HTTP" section of that markdown file is replaced (or appended).
Run it after run.py and reload.py, which rewrite the file up to their own sections.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import importlib.util
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SECTION = "## Streamable HTTP"
URL = re.compile(r"at (http://127\.0\.0\.1:(\d+)(/\S*))")
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


# --------------------------------------------------------------------------- a lean client


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def modern_head(message: dict[str, Any]) -> list[str]:
    """The 2026-07-28 request headers (the era is per request: no session)."""
    head = ["mcp-protocol-version: 2026-07-28", f"mcp-method: {message['method']}"]
    name = (message.get("params") or {}).get("name")
    return [*head, f"mcp-name: {name}"] if name else head


def echo_message(rid: int, text: str, modern: bool) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": text}}
    if modern:
        params["_meta"] = MODERN_META
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


class Connection:
    """One keep-alive HTTP/1.1 connection speaking MCP: POST a message, read its answer."""

    def __init__(self, port: int, path: str, modern: bool = False, headers: tuple[str, ...] = ()) -> None:
        self.port, self.path = port, path
        self.modern = modern
        self.headers = headers  # more header lines on every request (auth_bench.py: Authorization)
        self.session_id: str | None = None
        self.next_id = 0

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    def close(self) -> None:
        self.writer.close()

    async def post(self, message: dict[str, Any]) -> Any:
        try:
            return await self._post(message)
        except asyncio.IncompleteReadError as exc:
            if exc.partial:
                raise
            # The server closed the connection while it sat idle (its keep-alive timeout, e.g.
            # while the other sessions of a run were opening), before reading the request:
            # reconnect and send it again, as HTTP clients do.
            self.writer.close()
            await self.open()
            return await self._post(message)

    async def _post(self, message: dict[str, Any]) -> Any:
        body = orjson.dumps(message)
        head = [
            f"POST {self.path} HTTP/1.1",
            f"host: 127.0.0.1:{self.port}",
            "accept: application/json, text/event-stream",
            "content-type: application/json",
            f"content-length: {len(body)}",
            *self.headers,
        ]
        if self.modern:
            head += modern_head(message)
        elif self.session_id:
            head += [f"mcp-session-id: {self.session_id}", "mcp-protocol-version: 2025-11-25"]
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        status, headers, data = await self._response()
        if status >= 300:
            raise RuntimeError(f"HTTP {status}: {data[:200]!r}")
        if "mcp-session-id" in headers:
            self.session_id = headers["mcp-session-id"]
        if "id" not in message:
            return None
        if headers.get("content-type", "").startswith("text/event-stream"):
            for line in data.split(b"\n"):
                if line.startswith(b"data:") and line[5:].strip():
                    answer = orjson.loads(line[5:])
                    if answer.get("id") == message["id"]:
                        return answer
            raise RuntimeError(f"no answer in the stream: {data[:200]!r}")
        return orjson.loads(data)

    async def _response(self) -> tuple[int, dict[str, str], bytes]:
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            return status, headers, await self.reader.readexactly(int(headers["content-length"]))
        if headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    return status, headers, b"".join(parts)
                parts.append(chunk[:-2])
        return status, headers, await self.reader.read()

    async def initialize(self) -> None:
        if self.modern:
            return  # stateless: nothing to open
        await self.post(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"},
                },
            }
        )
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def echo(self, text: str = "hello world") -> None:
        self.next_id += 1
        answer = await self.post(echo_message(self.next_id, text, self.modern))
        if "result" not in answer:
            raise RuntimeError(f"error answer: {answer}")
        if answer["result"]["content"][0]["text"] != text:
            raise RuntimeError(f"wrong answer: {answer}")


class BlockingConnection:
    """The same exchange over a plain blocking socket: the leanest client for sequential latency
    (no event loop on the client side to add to every round trip)."""

    def __init__(self, port: int, path: str, modern: bool = False) -> None:
        import socket

        self.port, self.path = port, path
        self.modern = modern
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        self.session_id = ""
        self.next_id = 0

    def post(self, body: bytes, extra: list[str] | None = None) -> tuple[dict[str, str], bytes]:
        head = (
            f"POST {self.path} HTTP/1.1\r\nhost: 127.0.0.1:{self.port}\r\n"
            "accept: application/json, text/event-stream\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n"
        )
        if extra:
            head += "".join(f"{line}\r\n" for line in extra)
        elif self.session_id:
            head += f"mcp-session-id: {self.session_id}\r\nmcp-protocol-version: 2025-11-25\r\n"
        self.sock.sendall(head.encode() + b"\r\n" + body)
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        raw, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        headers = {}
        for line in raw.decode("latin-1").split("\r\n")[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "mcp-session-id" in headers:
            self.session_id = headers["mcp-session-id"]
        if "content-length" in headers:
            return headers, self._take(int(headers["content-length"]))
        parts = []  # chunked
        while True:
            while b"\r\n" not in self.buffer:
                self._fill()
            size_line, self.buffer = self.buffer.split(b"\r\n", 1)
            size = int(size_line.split(b";")[0], 16)
            chunk = self._take(size + 2)
            if size == 0:
                return headers, b"".join(parts)
            parts.append(chunk[:-2])

    def _fill(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("server closed the connection")
        self.buffer += data

    def _take(self, n: int) -> bytes:
        while len(self.buffer) < n:
            self._fill()
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def initialize(self) -> None:
        if self.modern:
            return
        self.post(INITIALIZE)
        self.post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def echo(self, text: str = "hello world") -> None:
        self.next_id += 1
        message = echo_message(self.next_id, text, self.modern)
        headers, data = self.post(orjson.dumps(message), modern_head(message) if self.modern else None)
        if headers.get("content-type", "").startswith("text/event-stream"):
            data = next(
                line[5:] for line in data.split(b"\n") if line.startswith(b"data:") and line[5:].strip()
            )
        answer = orjson.loads(data)
        if "result" not in answer or answer["result"]["content"][0]["text"] != text:
            raise RuntimeError(f"wrong answer: {data[:200]!r}")

    def close(self) -> None:
        self.sock.close()


CLIENT_INFO = {"name": "bench", "version": "1"}
INITIALIZE = orjson.dumps(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT_INFO},
    }
)


# --------------------------------------------------------------------------- servers


@dataclass
class Side:
    name: str
    command: list[str]


SIDES = [
    Side(
        "protomcp",
        [
            sys.executable,
            "-m",
            "protomcp_host",
            "run",
            str(HERE / "tools_protomcp.py"),
            "--transport",
            "http",
            "--port",
            "0",
            "--session-timeout",
            "0",
        ],
    ),
    Side("MCP SDK", [sys.executable, str(HERE / "tools_sdk_http.py")]),
]
FASTMCP = Side("FastMCP", [sys.executable, str(HERE / "tools_fastmcp_http.py")])
if importlib.util.find_spec("fastmcp") is not None:
    SIDES.append(FASTMCP)


class Server:
    def __init__(self, side: Side) -> None:
        self.proc = subprocess.Popen(
            side.command,
            cwd=HERE,
            env=ENV,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        found = threading.Event()
        self.port, self.path = 0, ""

        def read() -> None:
            assert self.proc.stderr is not None
            for raw in self.proc.stderr:
                match = URL.search(raw.decode(errors="replace"))
                if match and not found.is_set():
                    self.port, self.path = int(match.group(2)), match.group(3)
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(60):
            self.stop()
            raise RuntimeError(f"{side.name} did not start")

    def pids(self) -> list[int]:
        pids = [self.proc.pid]
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        if children.exists():
            pids += [int(p) for p in children.read_text().split()]
        return pids

    def cpu_s(self) -> float:
        """User + system CPU seconds used so far by the server and its children."""
        ticks = 0
        for pid in self.pids():
            try:
                data = Path(f"/proc/{pid}/stat").read_bytes()
            except OSError:
                continue
            fields = data[data.rfind(b")") + 2 :].split()
            ticks += int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")

    def memory_kb(self) -> int:
        total = 0
        for pid in self.pids():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            except OSError:
                pass
        return total

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


# --------------------------------------------------------------------------- measurements


def sequential_p50(server: Server, calls: int, modern: bool = False) -> float:
    conn = BlockingConnection(server.port, server.path, modern)
    conn.sock.settimeout(30)
    conn.initialize()
    for _ in range(calls // 5):  # warm-up
        conn.echo()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        conn.echo()
        times.append(time.perf_counter() - start)
    conn.close()
    return statistics.median(times) * 1e6


async def concurrent_rate(
    server: Server, sessions: int, budget: float, modern: bool = False
) -> tuple[float, float]:
    """(calls/s, server CPU µs per call) with `sessions` clients calling in a loop."""
    conns = [Connection(server.port, server.path, modern) for _ in range(sessions)]
    for conn in conns:
        await conn.open()
        await conn.initialize()
    done = 0
    deadline = 0.0

    async def loop(conn: Connection) -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await conn.echo()
            done += 1

    deadline = time.perf_counter() + budget
    start, cpu = time.perf_counter(), server.cpu_s()
    await asyncio.gather(*(loop(c) for c in conns))
    elapsed, cpu = time.perf_counter() - start, server.cpu_s() - cpu
    for conn in conns:
        conn.close()
    return done / elapsed, cpu / max(1, done) * 1e6


async def memory_per_session(server: Server, sessions: int) -> float:
    await asyncio.sleep(0.5)
    before = server.memory_kb()
    conns = [Connection(server.port, server.path) for _ in range(sessions)]
    for conn in conns:
        await conn.open()
        await conn.initialize()
    await asyncio.sleep(0.5)
    after = server.memory_kb()
    for conn in conns:
        conn.close()
    return (after - before) / sessions


METRICS = ("mem", "seq", "rate", "rate500", "seq_modern", "rate_modern", "rate500_modern")


async def measure(side: Side, quick: bool, metrics: tuple[str, ...] = METRICS) -> dict[str, float]:
    server = Server(side)
    calls, budget = (300, 2.0) if quick else (1000, 4.0)
    out: dict[str, float] = {}
    try:
        # Memory first, on the fresh server: after the load runs, new sessions would reuse
        # memory those freed and look nearly free.
        if "mem" in metrics:
            out["mem"] = await asyncio.wait_for(memory_per_session(server, 200), 120)
        if "seq" in metrics:
            out["seq"] = sequential_p50(server, calls)  # socket timeouts bound it
        if "rate" in metrics:
            out["rate"], out["cpu"] = await asyncio.wait_for(concurrent_rate(server, 50, budget), 120)
        if "rate500" in metrics:
            out["rate500"], out["cpu500"] = await asyncio.wait_for(concurrent_rate(server, 500, budget), 240)
        try:  # the 2026-07-28 era, where the side serves it
            if "seq_modern" in metrics:
                out["seq_modern"] = sequential_p50(server, calls, modern=True)
            if "rate_modern" in metrics:
                out["rate_modern"], out["cpu_modern"] = await asyncio.wait_for(
                    concurrent_rate(server, 50, budget, modern=True), 120
                )
            if "rate500_modern" in metrics:
                out["rate500_modern"], out["cpu500_modern"] = await asyncio.wait_for(
                    concurrent_rate(server, 500, budget, modern=True), 240
                )
        except (RuntimeError, OSError, KeyError, orjson.JSONDecodeError) as exc:
            print(f"{side.name}: no 2026-07-28 era ({exc!r:.120})", file=sys.stderr)
            out["no_modern"] = 1.0
        return out
    finally:
        server.stop()


# --------------------------------------------------------------------------- report


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, help="replace the Streamable HTTP section of this markdown file")
    parser.add_argument(
        "--sides", default=",".join(s.name for s in SIDES), help="comma-separated: protomcp,MCP SDK,FastMCP"
    )
    parser.add_argument("--metrics", default=",".join(METRICS), help=f"comma-separated: {','.join(METRICS)}")
    parser.add_argument(
        "--protomcp-args",
        default="",
        metavar="FLAGS",
        help="more flags for the protomcp host, split like a shell (e.g. a --rate-limit)",
    )
    args = parser.parse_args()
    SIDES[0].command += shlex.split(args.protomcp_args)
    sides = [side for side in SIDES if side.name in args.sides.split(",")]
    metrics = tuple(args.metrics.split(","))
    results: dict[str, list[dict[str, float]]] = {side.name: [] for side in SIDES}
    for rep in range(args.reps):
        for side in sides if rep % 2 == 0 else reversed(sides):
            results[side.name].append(asyncio.run(measure(side, args.quick, metrics)))
            print(f"rep {rep + 1} {side.name}: {results[side.name][-1]}", file=sys.stderr)

    def median(name: str, key: str) -> float:
        values = [r[key] for r in results[name] if key in r]
        return statistics.median(values) if values else float("nan")

    rows = [
        ("sequential `tools/call` latency p50 (µs), 2025-11-25 session", "seq", "≤ 0.5x", lambda r: r <= 0.5),
        ("calls/s, 50 concurrent sessions, 2025-11-25", "rate", "≥ 5x", lambda r: r >= 5),
        ("server CPU per call (µs), 50 concurrent sessions, 2025-11-25", "cpu", "-", None),
        ("calls/s, 500 concurrent sessions, 2025-11-25", "rate500", "≥ 5x", lambda r: r >= 5),
        ("server CPU per call (µs), 500 concurrent sessions, 2025-11-25", "cpu500", "-", None),
        ("sequential `tools/call` latency p50 (µs), 2026-07-28 stateless", "seq_modern", "-", None),
        ("calls/s, 50 concurrent clients, 2026-07-28 stateless", "rate_modern", "-", None),
        ("server CPU per call (µs), 50 concurrent clients, 2026-07-28", "cpu_modern", "-", None),
        ("calls/s, 500 concurrent clients, 2026-07-28 stateless", "rate500_modern", "-", None),
        ("server CPU per call (µs), 500 concurrent clients, 2026-07-28", "cpu500_modern", "-", None),
        ("memory per idle session (KB of RSS)", "mem", "-", None),
    ]
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"Run: {when}, {args.reps} repetition(s), interleaved; {os.cpu_count()} CPUs; load average at end "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}.",
        "",
        "| metric | "
        + " | ".join(side.name for side in SIDES)
        + " | ratio vs SDK | target | result |"
        + "".join(f" ratio vs {side.name} |" for side in SIDES[2:]),
        "|---|" + "---:|" * len(SIDES) + "---:|---:|---|" + "---:|" * len(SIDES[2:]),
    ]

    def cell(value: float) -> str:
        return "-" if value != value else f"{value:,.1f}"  # NaN: not measured

    for label, key, target, ok in rows:
        ours, theirs = median("protomcp", key), median("MCP SDK", key)
        ratio = ours / theirs if theirs == theirs and theirs else float("nan")
        verdict = "info" if ok is None or ratio != ratio else ("PASS" if ok(ratio) else "FAIL")
        ratio_s = "-" if ratio != ratio else f"{ratio:.2f}x"
        others = [median(side.name, key) for side in SIDES[2:]]
        lines.append(
            f"| {label} | {cell(ours)} | {cell(theirs)} | "
            + "".join(f"{cell(other)} | " for other in others)
            + f"{ratio_s} | {target} | {verdict} |"
            + "".join(
                f" {ours / other:.2f}x |" if other == other and other and ours == ours else " - |"
                for other in others
            )
        )
    missing = [
        f"{side.name} did not serve the 2026-07-28 era "
        f"({sum('no_modern' in r for r in results[side.name])} of {len(results[side.name])}"
        " repetition(s)): its rows of that era show '-'."
        for side in SIDES
        if any("no_modern" in r for r in results[side.name])
    ]
    if len(SIDES) < 3:
        missing.append("FastMCP is not installed (pip install -e '.[bench]'): not measured.")
    if missing:
        lines += ["", *missing]
    lines += [
        "",
        "Ratio per repetition (each pair measured back to back):",
        "",
        "| metric | min | median | max |",
        "|---|---:|---:|---:|",
    ]
    for label, key, _, _ in rows:
        ratios = [
            a[key] / b[key]
            for a, b in zip(results["protomcp"], results["MCP SDK"], strict=False)
            if key in a and b.get(key)
        ]
        if not ratios:
            continue
        lines.append(
            f"| {label} | {min(ratios):.2f}x | {statistics.median(ratios):.2f}x | {max(ratios):.2f}x |"
        )
    report = "\n".join(lines)
    print(report)
    if args.out is not None:
        explain = (
            "Measured by `python benchmarks/http_bench.py --out benchmarks/README.md`: protomcp "
            "(`protomcp run tools_protomcp.py --transport http`) against the official SDK's and "
            "FastMCP's Streamable HTTP apps under uvicorn (`tools_sdk_http.py`, `tools_fastmcp_http.py`), "
            "all on loopback with the same uvicorn HTTP parser (httptools when installed) and Nagle "
            "off, driven by the same minimal keep-alive HTTP/1.1 clients; see the script's docstring "
            "for the method."
        )
        text = args.out.read_text() if args.out.exists() else ""
        before, _, rest = text.partition(SECTION)
        after = rest[rest.find("\n## ") :] if "\n## " in rest else ""
        args.out.write_text(f"{before.rstrip()}\n\n{SECTION}\n\n{explain}\n\n{report}\n{after}")


if __name__ == "__main__":
    main()
