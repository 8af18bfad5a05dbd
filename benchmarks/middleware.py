"""The cost of middleware in another tool process: pipelined calls/s and sequential p50
of `echo`, with and without one pass-through middleware, in one interleaved run.

    python benchmarks/middleware.py [--reps 5] [--out benchmarks/README.md]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

from lean_client import LeanClient, descendants, tree_cpu_s
from sections import replace_section

HERE = Path(__file__).resolve().parent
SERVER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
HEADING = "## Middleware cost"
EXPLAIN = (
    "Measured by `python benchmarks/middleware.py --out benchmarks/README.md`: `protomcp run "
    "tools_protomcp.py` alone, beside a pass-through middleware (it only calls `call_next`) in "
    "another file (`mw_passthrough.py`, its own tool process), two of them in another file "
    "(`mw_two.py`), and one in the tools' own file (`tools_mw_here.py`); interleaved, median of "
    "the repetitions. A middleware in another process costs host ↔ middleware-process round trips: "
    'two per call (phases "before" and "after"), one when it ends with `return await '
    'call_next(call)` (seen to need phase "before" alone, as here); a file\'s middleware next to '
    "each other in the chain share them (one frame per phase for the lot). Middleware in the tool's "
    "own file run in its process, in the call's own frame: no round trip at all."
)
SETUPS = {
    "no middleware": ["tools_protomcp.py"],
    "one middleware, another file": ["tools_protomcp.py", "mw_passthrough.py"],
    "two middleware, another file": ["tools_protomcp.py", "mw_two.py"],
    "one middleware, the tools' own file": ["tools_mw_here.py"],
}
ECHO = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}\n'


def echo_line(request_id: int) -> bytes:
    return ECHO % request_id


def echo_ok(message: dict) -> bool:  # type: ignore[type-arg]
    return message.get("result", {}).get("content", [{}])[0].get("text") == "hi"


async def measure(files: list[str], calls: int) -> tuple[float, float, float]:
    """(pipelined calls/s, sequential p50 µs, CPU µs per pipelined call of the process tree)."""
    argv = [sys.executable, "-m", "protomcp_host", "run", *files]
    client = await LeanClient.spawn(argv, cwd=str(HERE), env=SERVER_ENV)
    try:
        await client.initialize(timeout=60)
        await client.drive(echo_line, 300, 64, 60.0, 120, echo_ok)  # warm-up
        pids = descendants(client.pid)
        cpu = tree_cpu_s(pids)
        drv = await client.drive(echo_line, calls, 64, 5.0, 120, echo_ok)
        cpu_per_call = (tree_cpu_s(pids) - cpu) / max(1, drv.done) * 1e6
        if drv.bad:
            raise RuntimeError(f"{drv.bad} wrong answers")
        pipelined = drv.done / (drv.last_recv - drv.first_send)
        drv = await client.drive(echo_line, 500, 1, 60.0, 120, echo_ok)
        sequential = statistics.median(drv.latencies) * 1e6
        return pipelined, sequential, cpu_per_call
    finally:
        await client.close()


async def run(reps: int, calls: int) -> dict[str, list[tuple[float, float, float]]]:
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in SETUPS}
    for rep in range(reps):
        order = list(SETUPS) if rep % 2 == 0 else list(reversed(SETUPS))
        for name in order:
            results[name].append(await measure(SETUPS[name], calls))
    return results


def report(results: dict[str, list[tuple[float, float, float]]], reps: int) -> str:
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [
        f"Run: {when}, {reps} repetitions.",
        "",
        "| setup | pipelined calls/s | sequential p50 (µs) | CPU per pipelined call (µs, all processes) |",
        "|---|---:|---:|---:|",
    ]
    medians = {}
    for name, samples in results.items():
        cps = statistics.median(s[0] for s in samples)
        p50 = statistics.median(s[1] for s in samples)
        cpu = statistics.median(s[2] for s in samples)
        medians[name] = (cps, p50)
        lines.append(f"| {name} | {cps:,.0f} | {p50:,.0f} | {cpu:,.0f} |")
    none = medians["no middleware"][0]
    lines.append("")
    for name, (cps, _) in medians.items():
        if name != "no middleware":
            lines.append(f"Throughput, {name}: {cps / none:.2f}x of none.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--out", type=Path, help="replace the middleware section of this markdown file")
    args = parser.parse_args()
    text = report(asyncio.run(run(args.reps, args.calls)), args.reps)
    print(text)
    if args.out is not None:
        args.out.write_text(replace_section(args.out.read_text(), HEADING, f"{EXPLAIN}\n\n{text}"))


if __name__ == "__main__":
    main()
