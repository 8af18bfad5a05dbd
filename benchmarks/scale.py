"""Scale-out benchmark: CPU-bound sync calls per second with --processes N and --workers N.

    python benchmarks/scale.py --store redis://127.0.0.1:6379/0   # the default configurations
    python benchmarks/scale.py --calls 200 --concurrency 16 --n 300000 --configs 1x1,1x2

Each configuration (WORKERSxPROCESSES) starts `protomcp run benchmarks/tools_cpu.py --transport
http --workers W --processes P` on a free port (with `--store URL` when W > 1, which needs it),
warms it up, then sends `--calls` modern-era (2026-07-28, stateless) tools/call POSTs from
`--concurrency` concurrent requests and reports calls/s and the speed-up over 1x1. Every answer
is checked (the checksum, once per request id). On a machine with C cores the speed-up is
bounded by C: the numbers are only meaningful with idle cores.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import orjson

TOOLS = Path(__file__).resolve().parent / "tools_cpu.py"
URL = re.compile(rb"at (http://\S+)")
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "burn",
}


def start(workers: int, processes: int, store: str | None) -> tuple[subprocess.Popen[bytes], str]:
    if workers > 1 and not store:
        raise SystemExit(f"{workers}x{processes}: --workers {workers} needs --store redis://HOST:PORT/DB")
    shared = ["--store", store] if workers > 1 and store else []
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "protomcp_host",
            "run",
            str(TOOLS),
            "--transport",
            "http",
            "--port",
            "0",
            "--workers",
            str(workers),
            "--processes",
            str(processes),
            *shared,
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    for line in proc.stderr:
        match = URL.search(line)
        if match:
            os.set_blocking(proc.stderr.fileno(), False)
            return proc, match.group(1).decode()
        if time.monotonic() > deadline:
            break
    stop(proc)
    raise SystemExit(f"{workers}x{processes}: the host did not start")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


async def measure(url: str, calls: int, concurrency: int, n: int) -> float:
    """calls/s for `calls` burns from `concurrency` concurrent requests (each answered once)."""
    expected = sum(i * i for i in range(n)) % 1000
    answered: set[int] = set()
    next_id = iter(range(calls))
    limits = httpx2.Limits(
        max_connections=concurrency, max_keepalive_connections=0
    )  # new connections spread over workers
    async with httpx2.AsyncClient(timeout=120, limits=limits) as http:

        async def worker() -> None:
            for request_id in next_id:
                body = {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "tools/call",
                    "params": {"name": "burn", "arguments": {"n": n}, "_meta": META},
                }
                response = await http.post(url, content=orjson.dumps(body), headers=HEADERS)
                answer = response.json()
                assert answer["id"] == request_id and request_id not in answered, answer
                assert answer["result"]["structuredContent"]["result"] == expected, answer
                answered.add(request_id)

        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(concurrency):
                tg.start_soon(worker)
        elapsed = time.perf_counter() - started
    assert len(answered) == calls
    return calls / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--configs", default="1x1,1x2,1x4,2x1,2x2", help="WORKERSxPROCESSES, comma-separated")
    parser.add_argument("--calls", type=int, default=120)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--n", type=int, default=300_000, help="loop steps per call (CPU time per call)")
    parser.add_argument("--store", default=None, help="redis://HOST:PORT/DB, for configurations with workers")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; {args.calls} calls of burn(n={args.n}), {args.concurrency} concurrent")
    print(f"{'workers x processes':>20} {'calls/s':>9} {'speed-up':>9}")
    base = None
    for config in args.configs.split(","):
        workers, processes = (int(x) for x in config.split("x"))
        proc, url = start(workers, processes, args.store)
        try:
            anyio.run(measure, url, max(4, args.concurrency), args.concurrency, args.n)  # warm-up
            rate = anyio.run(measure, url, args.calls, args.concurrency, args.n)
        finally:
            stop(proc)
        base = base or rate
        print(f"{workers:>10} x {processes:<7} {rate:>9.1f} {rate / base:>8.2f}x", flush=True)


if __name__ == "__main__":
    main()
