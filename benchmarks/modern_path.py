"""The host's own CPU per 2026-07-28 `tools/call` over HTTP, in one process: what metrics and
the rate limits add to it, and how a checkout compares with another. `--era 2025-11-25` measures
the calls of one stateful session instead (initialized first; each call names its session).

    python benchmarks/modern_path.py                       # this checkout: off / metrics / + limit
    python benchmarks/modern_path.py --checkouts OLD,NEW   # before/after: each a source tree
    python benchmarks/modern_path.py --rounds 9 -n 20000 --profile metrics+limit  # cProfile one

Each measurement is a child process (`PYTHONPATH` = the checkout, so it imports that tree's
protomcp_host) that builds the HTTP app the host serves (`build_app`: the Host/Origin guard,
starlette's routing, the Streamable HTTP endpoint, the 2026-07-28 endpoint) around a started
Host, and calls that ASGI app N times in a row with the POST `http_bench.py` sends (echo, with
its `_meta` and Mcp-* headers). The tool's process is a stand-in in the same process: a real
Channel writes each call's Envelope to a pipe, a loop reader decodes it and feeds the Channel
the frame our SDK would answer with. So everything between uvicorn's ASGI call and the pipe
to the tool process is the host's real code, and nothing else differs between two runs.

Variants: `off` (no metrics, no limit: `0973bbc`'s only state), `metrics` (what `run` switches
on for HTTP: Prometheus, and OpenTelemetry if OTEL_* ask), `metrics+limit` (plus
`--rate-limit '*=1000000/hour'`, which every call passes and is counted against, memory store).
Rounds alternate the children (checkout x variant, the order rotating); a figure is the median
over rounds of the process CPU time per request (less moved by other load than wall time; the
minimum is shown too). A variant a checkout lacks is shown as "-".
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
VARIANTS = ("off", "metrics", "metrics+limit")
# instructions counted, not timed: the same on a busy machine as on an idle one
VALGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
LIMIT = "1000000/hour"
MODERN = "2026-07-28"
ERA = [MODERN]  # the era measured (--era), handed to each child
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


# --------------------------------------------------------------------------- one child


def _child(variant: str, calls: int, warmup: int, profile: str | None, era: str) -> dict[str, Any]:
    import anyio

    return anyio.run(_measure, variant, calls, warmup, profile, era, backend="asyncio")  # type: ignore[no-any-return]


async def _measure(variant: str, calls: int, warmup: int, profile: str | None, era: str) -> dict[str, Any]:
    import asyncio

    import anyio
    import orjson

    from protomcp_host.app import Host
    from protomcp_host.calls.envelope import tool_from_definition
    from protomcp_host.processes.channel import Channel
    from protomcp_host.settings import RunSettings
    from protomcp_host.transports.http.server import HttpSettings, build_app
    from protomcp_sdk.wire import envelope_pb2 as pb
    from protomcp_sdk.wire import framing as wire

    http = HttpSettings(port=8000)
    extra: dict[str, Any] = {}
    if variant == "metrics+limit":
        try:
            from protomcp_sdk.wire.rates import parse_rate
        except ImportError:
            return {"missing": True}
        extra["rate_limits"] = (("*", parse_rate(LIMIT)),)
    settings = RunSettings(http=http, **extra)
    lines: list[str] = []
    if variant != "off":
        try:
            from protomcp_host.run import _observe  # type: ignore[attr-defined]
        except ImportError:
            return {"missing": True}
        if not _observe(settings, lines.append):
            raise SystemExit("\n".join(lines))
    host = Host([], settings, stderr=lines.append)

    class StandIn:
        """The tool file's process, as the calls layer sees it: a Channel on a pipe whose other
        end a loop reader answers as our SDK would (one call_result frame, trusted JSON)."""

        def __init__(self) -> None:
            self.read_fd, write_fd = os.pipe()
            self.channel = Channel("tools", write_fd, host.tool_events)  # type: ignore[arg-type]
            self.channel.trusted = True
            self.decoder = wire.FrameDecoder()
            asyncio.get_running_loop().add_reader(self.read_fd, self._readable)

        def start(self, envelope: pb.Envelope, leg: Any) -> None:
            self.channel.start(envelope, leg)

        def _readable(self) -> None:
            data = os.read(self.read_fd, 1 << 16)
            out = []
            for frame in self.decoder.feed(data):
                if isinstance(frame, pb.Envelope) and frame.WhichOneof("msg") == "call_tool":
                    text = orjson.loads(frame.call_tool.arguments_json)["text"]
                    result = orjson.dumps([{"type": "text", "text": text}]).decode()
                    answer = pb.Envelope(request_id=frame.request_id)
                    answer.call_result.result_json = result
                    out.append(wire.encode(answer))
            if out:
                self.channel.feed(b"".join(out))

        def close(self) -> None:
            asyncio.get_running_loop().remove_reader(self.read_fd)
            self.channel.close()
            os.close(self.read_fd)

    modern = era == MODERN
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": "hello"}}
    if modern:
        params["_meta"] = MODERN_META
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"accept", b"application/json, text/event-stream"),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"mcp-protocol-version", era.encode()),
    ]
    if modern:
        headers += [(b"mcp-method", b"tools/call"), (b"mcp-name", b"echo")]
    request = {"type": "http.request", "body": body, "more_body": False}
    answers: list[bytes] = []
    session_ids: list[bytes] = []

    async def receive() -> dict[str, Any]:
        return request

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            answers.append(message.get("body", b""))
        elif message["type"] == "http.response.start":
            session_ids.extend(value for name, value in message["headers"] if name == b"mcp-session-id")

    def scope() -> dict[str, Any]:  # (uvicorn makes a new one per request)
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "server": ("127.0.0.1", 8000),
            "client": ("127.0.0.1", 50000),
            "scheme": "http",
            "method": "POST",
            "root_path": "",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "query_string": b"",
            "headers": headers,
            "state": {},
        }

    async with anyio.create_task_group() as tg:
        await host.start(tg)
        definition = pb.ToolDefinition(
            name="echo",
            description="Echo the text back.",
            input_schema_json='{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}',
        )
        limits = getattr(host.dispatcher, "limits", None)
        tool = (
            tool_from_definition(definition, "tools", limits.rate_of)  # type: ignore[call-arg]
            if limits is not None
            else tool_from_definition(definition, "tools")
        )
        host.catalog.replace("tools", [tool])
        stand_in = StandIn()
        host.dispatcher.processes["tools"] = stand_in  # type: ignore[index]
        app, _owner = build_app(host, http)
        if not modern:  # 2025-11-25: one session, initialized first; every call names it
            await _initialize(app, scope, send, era)
            headers.append((b"mcp-session-id", session_ids[-1]))
            answers.clear()

        async def run(n: int) -> None:
            for _ in range(n):
                await app(scope(), receive, send)

        await run(warmup)
        expected = answers[-1]
        assert b'"text":"hello"' in expected and b'"isError":true' not in expected, expected
        answers.clear()
        gc.collect()
        gc.freeze()  # (as Host.start does: what lives as long as the host is not walked)
        profiler = None
        if profile is not None:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        cpu, wall = time.process_time(), time.perf_counter()
        await run(calls)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(profile)
        assert len(answers) == calls and all(a == expected for a in answers)
        stand_in.close()
        tg.cancel_scope.cancel()
    scraped = None
    if variant != "off" and http.metrics is not None:
        text = http.metrics.scrape().decode()
        scraped = next(
            (line for line in text.splitlines() if line.startswith("protomcp_requests_total{")), None
        )
    return {"cpu_us": cpu / calls * 1e6, "wall_us": wall / calls * 1e6, "scraped": scraped}


async def _initialize(app: Any, scope: Any, send: Any, era: str) -> None:
    import orjson

    for message in (
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": era,
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ):
        body = orjson.dumps(message)
        first = scope()
        first["headers"] = [
            (name, str(len(body)).encode() if name == b"content-length" else value)
            for name, value in first["headers"]
        ]

        async def receive(body: bytes = body) -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        await app(first, receive, send)


# --------------------------------------------------------------------------- the rounds


def _run_child(
    checkout: Path, variant: str, calls: int, warmup: int, profile: str | None, counted: bool = False
) -> dict[str, Any]:
    """One child's figures; `counted`: under valgrind, its instructions ("instructions")."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONHASHSEED": "0", "MODERN_PATH_ERA": ERA[0]}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", variant, "-n", str(calls)]
    argv += ["--warmup", str(warmup)]
    if profile is not None:
        argv += ["--profile-out", profile]
    if counted:
        argv = [*VALGRIND, *argv]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800, cwd="/")
    if done.returncode != 0:
        raise SystemExit(f"{checkout} {variant}: exit {done.returncode}\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    if counted and not result.get("missing"):
        refs = next(line for line in done.stderr.splitlines() if "I   refs:" in line)
        result["instructions"] = int(refs.split("I   refs:")[1].replace(",", ""))
    return result


def _instructions(checkout: Path, variant: str, calls: int, warmup: int) -> float | None:
    """Instructions per request: two counted runs, `calls` and 3 x `calls` requests, differenced
    (so the start-up and the warm-up cancel out)."""
    one = _run_child(checkout, variant, calls, warmup, None, counted=True)
    if one.get("missing"):
        return None
    three = _run_child(checkout, variant, 3 * calls, warmup, None, counted=True)
    return (three["instructions"] - one["instructions"]) / (2 * calls)  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--checkouts", default=str(HERE.parent), help="comma-separated source trees")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("-n", type=int, default=10000, help="requests measured per child")
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--profile", metavar="VARIANT", help="cProfile one child of each checkout instead")
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions per request under valgrind instead"
    )
    parser.add_argument("--era", default=MODERN, help="2026-07-28 (stateless) or 2025-11-25 (one session)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--profile-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        era = os.environ["MODERN_PATH_ERA"]
        print(json.dumps(_child(args.child, args.n, args.warmup, args.profile_out, era)))
        return
    ERA[0] = args.era
    checkouts = [Path(c).resolve() for c in args.checkouts.split(",")]
    variants = args.variants.split(",")
    if args.profile:
        import pstats

        for checkout in checkouts:
            out = f"/tmp/modern_path.{checkout.name}.{args.profile}.prof"
            result = _run_child(checkout, args.profile, args.n, args.warmup, out)
            cost = result.get("cpu_us", 0)
            print(f"== {checkout} {args.profile}: {cost:.1f} µs/request (profiled) -> {out}")
            pstats.Stats(out).sort_stats("tottime").print_stats(25)
        return
    sides = [(c, v) for c in checkouts for v in variants]
    if args.instructions:
        counts = {side: _instructions(*side, args.n, args.warmup) for side in sides}
        base_count = counts[sides[0]]
        print(f"instructions per {ERA[0]} tools/call in the host (valgrind), {2 * args.n} requests compared")
        print(f"| checkout | variant | instructions | vs {sides[0][0].name} {sides[0][1]} |")
        print("|---|---|---:|---:|")
        for side in sides:
            count = counts[side]
            if count is None:
                print(f"| {side[0].name} | {side[1]} | - | - |")
            else:
                delta = f"{count - base_count:+,.0f} ({count / base_count - 1:+.1%})" if base_count else "-"
                print(f"| {side[0].name} | {side[1]} | {count:,.0f} | {delta} |")
        return
    cpu: dict[tuple[Path, str], list[float]] = {side: [] for side in sides}
    missing: set[tuple[Path, str]] = set()
    for round_ in range(args.rounds):
        shift = round_ % len(sides)
        order = sides[shift:] + sides[:shift]
        if round_ % 2:
            order.reverse()
        for side in order:
            if side in missing:
                continue
            result = _run_child(*side, args.n, args.warmup, None)
            if result.get("missing"):
                missing.add(side)
                continue
            cpu[side].append(result["cpu_us"])
        print(f"round {round_ + 1}/{args.rounds}, load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    base = statistics.median(cpu[sides[0]]) if cpu[sides[0]] else None
    print(f"µs of host CPU per {ERA[0]} tools/call, {args.n} requests, {args.rounds} rounds")
    print(f"| checkout | variant | median | min | vs {sides[0][0].name} {sides[0][1]} |")
    print("|---|---|---:|---:|---:|")
    for side in sides:
        if not cpu[side]:
            print(f"| {side[0].name} | {side[1]} | - | - | - |")
            continue
        median = statistics.median(cpu[side])
        delta = f"{median - base:+.2f} µs ({median / base - 1:+.1%})" if base else "-"
        print(f"| {side[0].name} | {side[1]} | {median:.2f} | {min(cpu[side]):.2f} | {delta} |")


if __name__ == "__main__":
    main()
